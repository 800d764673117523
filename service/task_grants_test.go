package service

import (
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"gatehouse/api"
	"gatehouse/engine"
	"gatehouse/rules"
)

var shop = engine.SiteScope{Origin: "https://shop.example", PathPrefix: "/cart"}

// withSites configures the bundle's tenant with the given site scopes.
func withSites(scopes ...engine.SiteScope) func(*setupOpts) {
	return func(o *setupOpts) {
		o.sites = func(tenant string) *engine.GrantSites {
			g, err := engine.NewGrantSites(map[string][]engine.SiteScope{tenant: scopes})
			if err != nil {
				panic(err)
			}
			return g
		}
	}
}

func withPolicy(set *rules.Set) func(*setupOpts) { return func(o *setupOpts) { o.policy = set } }

// grantor may resolve approvals and accept task grant offers.
func (b *bundle) grantor() engine.Principal {
	return engine.Principal{ID: "grantor", TenantID: b.tenant, Scopes: []string{
		"approval.read", "approval.resolve", "browser.grant.read", "browser.grant.write",
	}}
}

// startedIn submits a run of the owner in session under profile and claims it.
func (b *bundle) startedIn(session, profile string) claimed {
	b.t.Helper()
	r, err := b.svc.SubmitRun(b.ctx, b.owner, api.SubmitRunInput{SessionID: session, AgentID: "agent", AgentVersion: "1.0", PolicyProfile: profile})
	if err != nil {
		b.t.Fatalf("submit: %v", err)
	}
	return b.claim(r.ID)
}

func browse(url string) engine.ActionRequest {
	return action("browser.act", map[string]any{"action": "click", "url": url, "selector": "#next"})
}

// granted parks a browser.act on the shop in a new session and accepts its
// offer: the session and the grant.
func (b *bundle) granted() (string, api.Approval) {
	b.t.Helper()
	session := uuid.NewString()
	c := b.startedIn(session, "")
	res := b.parked(c, browse("https://shop.example/cart/1"))
	out, err := b.svc.ResolveApprovalForTask(b.ctx, b.grantor(), res.ApprovalID, "", &shop, "")
	if err != nil {
		b.t.Fatalf("approve for task: %v", err)
	}
	if out.Result != ResolveApplied || out.Approval.TaskGrantID == "" {
		b.t.Fatalf("approve for task: %s, grant %q", out.Result, out.Approval.TaskGrantID)
	}
	return session, out.Approval
}

func (b *bundle) countGrants(session string) int {
	b.t.Helper()
	var n int
	if err := b.pool.QueryRow(b.ctx, `SELECT count(*) FROM browser_task_grants WHERE session_id = $1`, session).Scan(&n); err != nil {
		b.t.Fatal(err)
	}
	return n
}

func (b *bundle) grant(session string) api.BrowserTaskGrant {
	b.t.Helper()
	gs, err := b.svc.ListTaskGrants(b.ctx, b.grantor(), session)
	if err != nil || len(gs) != 1 {
		b.t.Fatalf("list grants: %v (%d)", err, len(gs))
	}
	return gs[0]
}

func TestTaskGrantOfferOnlyInASiteScope(t *testing.T) {
	t.Parallel()
	b := setup(t, withSites(shop, engine.SiteScope{Origin: "https://shop.example", PathPrefix: "/cart/checkout"}))
	cases := []struct {
		name string
		req  engine.ActionRequest
		want *api.TaskGrantOffer
	}{
		{"in scope", browse("https://shop.example/cart/1"), &api.TaskGrantOffer{Origin: shop.Origin, PathPrefix: "/cart", DurationSeconds: 1800, ActionBudget: 200}},
		{"longest prefix", browse("https://shop.example:443/cart/checkout/pay"), &api.TaskGrantOffer{Origin: shop.Origin, PathPrefix: "/cart/checkout", DurationSeconds: 1800, ActionBudget: 200}},
		{"dot segments", browse("https://shop.example/cart/%2e%2e/admin"), nil},
		{"prefix boundary", browse("https://shop.example/cartel"), nil},
		{"other origin", browse("https://shop.example.evil/cart/1"), nil},
		{"http", browse("http://shop.example/cart/1"), nil},
		{"userinfo", browse("https://shop.example@evil.example/cart/1"), nil},
		{"not browser.act", action("http.post", map[string]any{"url": "https://shop.example/cart/1", "body": "x"}), nil},
	}
	for _, tc := range cases {
		res := b.parked(b.started(), tc.req)
		got := b.approval(res.ApprovalID).TaskGrantOffer
		if (got == nil) != (tc.want == nil) || got != nil && *got != *tc.want {
			t.Errorf("%s: offer %+v, want %+v", tc.name, got, tc.want)
		}
	}

	// Another tenant's sites offer nothing here.
	other := setup(t, withSites(engine.SiteScope{Origin: "https://elsewhere.example", PathPrefix: "/"}))
	res := other.parked(other.started(), browse("https://shop.example/cart/1"))
	if o := other.approval(res.ApprovalID).TaskGrantOffer; o != nil {
		t.Fatalf("offer %+v for a tenant without that site", o)
	}
}

// The grant is created in the resolving transaction: the approval, the
// grant and both events commit together or not at all.
func TestApproveForTaskCreatesTheGrantInTheResolvingTransaction(t *testing.T) {
	t.Parallel()
	b := setup(t, withSites(shop))
	c := b.startedIn(uuid.NewString(), "")
	res := b.parked(c, browse("https://shop.example/cart/1"))

	b.svc.failAfterTaskGrant = func() error { return errors.New("injected") }
	if _, err := b.svc.ResolveApprovalForTask(b.ctx, b.grantor(), res.ApprovalID, "", &shop, ""); err == nil {
		t.Fatal("the injected failure did not fail the resolution")
	}
	mustEqual(t, "status after failure", b.approval(res.ApprovalID).Status, engine.ApprovalPending)
	mustEqual(t, "grants after failure", b.countGrants(c.run.SessionID), 0)
	mustEqual(t, "created events after failure", b.countEvents(c.run.ID, api.EventBrowserGrantCreated), 0)
	mustEqual(t, "resolved events after failure", b.countEvents(c.run.ID, api.EventApprovalResolved), 0)

	b.svc.failAfterTaskGrant = nil
	now := b.clock.Now()
	out, err := b.svc.ResolveApprovalForTask(b.ctx, b.grantor(), res.ApprovalID, "", &shop, "")
	if err != nil {
		t.Fatal(err)
	}
	a := out.Approval
	mustEqual(t, "status", a.Status, engine.ApprovalApproved)
	mustEqual(t, "resolution", a.Resolution, engine.ResolutionApproveForTask)
	g := b.grant(c.run.SessionID)
	mustEqual(t, "grant id", a.TaskGrantID, g.ID)
	mustEqual(t, "budget", g.Budget, 200)
	mustEqual(t, "uses left", g.UsesLeft, 200)
	mustEqual(t, "expiry", g.ExpiresAt.Equal(now.Add(30*time.Minute)), true)
	mustEqual(t, "scope", engine.SiteScope{Origin: g.Origin, PathPrefix: g.PathPrefix}, shop)
	mustEqual(t, "created by", g.CreatedBy, "grantor")
	mustEqual(t, "created events", b.countEvents(c.run.ID, api.EventBrowserGrantCreated), 1)
	// Exactly as approve_once: the run is re-queued for resume.
	mustEqual(t, "run", b.run(c.run.ID).Status, api.RunQueued)

	// A repeat is the same resolution, with no second grant.
	again, err := b.svc.ResolveApprovalForTask(b.ctx, b.grantor(), res.ApprovalID, "", &shop, "")
	if err != nil {
		t.Fatal(err)
	}
	mustEqual(t, "repeat", again.Result, ResolveSame)
	mustEqual(t, "grants after repeat", b.countGrants(c.run.SessionID), 1)
}

func TestApproveForTaskRefusalsChangeNothing(t *testing.T) {
	t.Parallel()
	b := setup(t, withSites(shop))
	c := b.startedIn(uuid.NewString(), "")
	res := b.parked(c, browse("https://shop.example/cart/1"))
	post := b.parked(b.startedIn(uuid.NewString(), ""), action("http.post", map[string]any{"url": "https://shop.example/cart/1", "body": "x"}))
	noGrantWrite := b.grantor()
	noGrantWrite.Scopes = []string{"approval.read", "approval.resolve"}
	wider := engine.SiteScope{Origin: shop.Origin, PathPrefix: "/"}

	cases := []struct {
		name string
		call func() error
		want error
	}{
		{"without browser.grant.write", func() error {
			_, err := b.svc.ResolveApprovalForTask(b.ctx, noGrantWrite, res.ApprovalID, "", &shop, "")
			return err
		}, ErrForbidden},
		{"a wider task_grant", func() error {
			_, err := b.svc.ResolveApprovalForTask(b.ctx, b.grantor(), res.ApprovalID, "", &wider, "")
			return err
		}, ErrInvalid},
		{"no task_grant", func() error {
			_, err := b.svc.ResolveApprovalForTask(b.ctx, b.grantor(), res.ApprovalID, "", nil, "")
			return err
		}, ErrInvalid},
		{"a non-browser approval", func() error {
			_, err := b.svc.ResolveApprovalForTask(b.ctx, b.grantor(), post.ApprovalID, "", &shop, "")
			return err
		}, ErrInvalid},
		// The CLI (and notification actions) resolve through
		// ResolveApproval, which never takes approve_for_task.
		{"the CLI's path", func() error {
			_, err := b.svc.ResolveApproval(b.ctx, b.grantor(), res.ApprovalID, engine.ResolutionApproveForTask, "")
			return err
		}, ErrInvalid},
		{"another tenant", func() error {
			stranger := b.grantor()
			stranger.TenantID = "other-" + b.tenant
			_, err := b.svc.ResolveApprovalForTask(b.ctx, stranger, res.ApprovalID, "", &shop, "")
			return err
		}, ErrNotFound},
	}
	for _, tc := range cases {
		if err := tc.call(); !errors.Is(err, tc.want) {
			t.Errorf("%s: err = %v, want %v", tc.name, err, tc.want)
		}
	}
	for _, id := range []string{res.ApprovalID, post.ApprovalID} {
		mustEqual(t, "status", b.approval(id).Status, engine.ApprovalPending)
	}
	mustEqual(t, "grants", b.countGrants(c.run.SessionID), 0)
	mustEqual(t, "resolved events", b.countEvents(c.run.ID, api.EventApprovalResolved), 0)
}

func TestTaskGrantAuthorizesInScopeActionsOfItsSession(t *testing.T) {
	t.Parallel()
	b := setup(t, withSites(shop))
	session, a := b.granted()
	c := b.startedIn(session, "")

	res := b.propose(c, browse("https://shop.example/cart/2"))
	mustEqual(t, "decision", res.Decision, engine.DecisionAllow)
	mustEqual(t, "grant", res.TaskGrantID, a.TaskGrantID)
	inv := b.invocation(c.run.ID, res.InvocationID)
	mustEqual(t, "status", inv.Status, api.InvocationAuthorized)
	mustEqual(t, "invocation grant", inv.TaskGrantID, a.TaskGrantID)
	mustEqual(t, "layer", inv.Decision.Layer, engine.LayerTaskGrant)
	mustEqual(t, "used events", b.countEvents(c.run.ID, api.EventBrowserGrantUsed), 1)
	mustEqual(t, "uses", b.grant(session).Uses, 1)

	// Outside the grant: a normal approval saying why.
	for _, tc := range []struct{ url, why string }{
		{"https://other.example/cart/2", engine.GrantNotCoveredOrigin},
		{"https://shop.example/account", engine.GrantNotCoveredPrefix},
	} {
		c := b.startedIn(session, "")
		res := b.parked(c, browse(tc.url))
		mustEqual(t, tc.url, b.approval(res.ApprovalID).TaskGrantNotCovered, tc.why)
	}
	// Another session holds no grant: nothing to say.
	res = b.parked(b.startedIn(uuid.NewString(), ""), browse("https://shop.example/cart/2"))
	mustEqual(t, "other session", b.approval(res.ApprovalID).TaskGrantNotCovered, "")
	// Another tool in scope is never covered.
	res = b.parked(b.startedIn(session, ""), action("http.post", map[string]any{"url": "https://shop.example/cart/2", "body": "x"}))
	mustEqual(t, "http.post", b.approval(res.ApprovalID).TaskGrantNotCovered, "")
	mustEqual(t, "uses after", b.grant(session).Uses, 1)
}

// Two proposals racing for the last use: exactly one is authorized, the
// other parks with exhausted.
func TestTaskGrantConcurrentUsesAtBudgetOne(t *testing.T) {
	t.Parallel()
	b := setup(t, withSites(shop))
	session, a := b.granted()
	if _, err := b.pool.Exec(b.ctx, `UPDATE browser_task_grants SET budget = 1 WHERE id = $1`, a.TaskGrantID); err != nil {
		t.Fatal(err)
	}
	runs := []claimed{b.startedIn(session, ""), b.startedIn(session, "")}
	results := make([]api.ProposeResult, len(runs))
	var wg sync.WaitGroup
	for i, c := range runs {
		wg.Go(func() { results[i] = b.propose(c, browse("https://shop.example/cart/9")) })
	}
	wg.Wait()
	allowed := 0
	for _, r := range results {
		switch r.Decision {
		case engine.DecisionAllow:
			allowed++
		case engine.DecisionRequireApproval:
			mustEqual(t, "why", b.approval(r.ApprovalID).TaskGrantNotCovered, engine.GrantNotCoveredExhausted)
		}
	}
	mustEqual(t, "authorized", allowed, 1)
	g := b.grant(session)
	mustEqual(t, "uses", g.Uses, 1)
	mustEqual(t, "status", g.Status, api.GrantExhausted)
}

func TestTaskGrantExpiryAndRevocationAtTheBoundary(t *testing.T) {
	t.Parallel()
	b := setup(t, withSites(shop))
	session, a := b.granted()
	b.clock.Advance(30*time.Minute - time.Microsecond)
	if res := b.propose(b.startedIn(session, ""), browse("https://shop.example/cart/3")); res.TaskGrantID != a.TaskGrantID {
		t.Fatalf("a microsecond before expiry: %s, want the grant", res.Decision)
	}
	b.clock.Advance(time.Microsecond)
	res := b.parked(b.startedIn(session, ""), browse("https://shop.example/cart/3"))
	mustEqual(t, "at expiry", b.approval(res.ApprovalID).TaskGrantNotCovered, engine.GrantNotCoveredExpired)
	mustEqual(t, "status at expiry", b.grant(session).Status, api.GrantExpired)

	// Revocation: the next use after it commits is not covered.
	session, a = b.granted()
	revoked, err := b.svc.RevokeTaskGrant(b.ctx, b.grantor(), a.TaskGrantID)
	if err != nil {
		t.Fatal(err)
	}
	mustEqual(t, "revoked", revoked.Status, api.GrantRevoked)
	b.parked(b.startedIn(session, ""), browse("https://shop.example/cart/3"))
	mustEqual(t, "uses", b.grant(session).Uses, 0)
	mustEqual(t, "revoked events", b.countEvents(a.RunID, api.EventBrowserGrantRevoked), 1)
	// Revoking again changes nothing and writes no second event.
	if _, err := b.svc.RevokeTaskGrant(b.ctx, b.grantor(), a.TaskGrantID); err != nil {
		t.Fatal(err)
	}
	mustEqual(t, "revoked events after repeat", b.countEvents(a.RunID, api.EventBrowserGrantRevoked), 1)
}

// A grant answers only a class approval: a hardline block or a profile's
// deny stays a denial inside the grant's scope.
func TestTaskGrantNeverAuthorizesADenial(t *testing.T) {
	t.Parallel()
	loaded, err := rules.Load(rules.Options{})
	if err != nil {
		t.Fatal(err)
	}
	strict := testRuleset(t, "strict", "v1", map[engine.SideEffectClass]engine.PolicyDecisionType{engine.SideEffectExternalWrite: engine.DecisionDeny}, false)
	dflt, _ := loaded.Ruleset("")
	set := testSet(t, map[string]*engine.LoadedRuleset{"default": dflt, "strict": strict}, loaded.Catalog())
	b := setup(t, withSites(shop), withPolicy(set))
	b.owner.PolicyProfiles = []string{"strict"}
	session, _ := b.granted()

	hardline := action("browser.act", map[string]any{"action": "type", "url": "https://shop.example/cart/4", "selector": "AKIAIOSFODNN7EXAMPLE"})
	if res := b.propose(b.startedIn(session, ""), hardline); res.Decision != engine.DecisionDeny {
		t.Fatalf("hardline: %s, want deny", res.Decision)
	}
	if res := b.propose(b.startedIn(session, "strict"), browse("https://shop.example/cart/4")); res.Decision != engine.DecisionDeny {
		t.Fatalf("profile deny: %s, want deny", res.Decision)
	}
	mustEqual(t, "uses", b.grant(session).Uses, 0)
}

func TestTaskGrantRoutesAreTenantScoped(t *testing.T) {
	t.Parallel()
	b := setup(t, withSites(shop))
	session, a := b.granted()
	stranger := b.grantor()
	stranger.TenantID = "other-" + b.tenant
	if _, err := b.svc.ListTaskGrants(b.ctx, stranger, session); !errors.Is(err, ErrNotFound) {
		t.Fatalf("list from another tenant: %v, want ErrNotFound", err)
	}
	if _, err := b.svc.RevokeTaskGrant(b.ctx, stranger, a.TaskGrantID); !errors.Is(err, ErrNotFound) {
		t.Fatalf("revoke from another tenant: %v, want ErrNotFound", err)
	}
	reader := b.grantor()
	reader.Scopes = []string{"browser.grant.read"}
	if _, err := b.svc.RevokeTaskGrant(b.ctx, reader, a.TaskGrantID); !errors.Is(err, ErrForbidden) {
		t.Fatalf("revoke without browser.grant.write: %v, want ErrForbidden", err)
	}
	mustEqual(t, "status", b.grant(session).Status, api.GrantActive)
}

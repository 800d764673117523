package service

import (
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"gatehouse/api"
	"gatehouse/engine"
)

var postArgs = map[string]any{"url": "https://crm.example/records/42", "body": "status=won"}

func (b *bundle) consent(session, tool string, args map[string]any) api.OwnerConsent {
	b.t.Helper()
	c, err := b.svc.RecordConsent(b.ctx, b.human, session, api.ConsentInput{ToolName: tool, Arguments: args}, false)
	if err != nil {
		b.t.Fatalf("record consent: %v", err)
	}
	return c
}

func (b *bundle) consents(session string) []api.OwnerConsent {
	b.t.Helper()
	cs, err := b.svc.ListConsents(b.ctx, b.human, session)
	if err != nil {
		b.t.Fatal(err)
	}
	return cs
}

// Identical proposals racing for one consent: exactly one is satisfied
// without a card, the other waits for a human; the satisfied one resumes
// through revalidation.
func TestConsentIsConsumedExactlyOnce(t *testing.T) {
	t.Parallel()
	b := setup(t)
	session := uuid.NewString()
	runs := []claimed{b.startedIn(session, ""), b.startedIn(session, "")}
	b.consent(session, "http.post", postArgs)

	results := make([]api.ProposeResult, len(runs))
	var wg sync.WaitGroup
	for i, c := range runs {
		wg.Go(func() { results[i] = b.propose(c, action("http.post", postArgs)) })
	}
	wg.Wait()
	satisfied := -1
	for i, r := range results {
		a := b.approval(r.ApprovalID)
		switch a.Status {
		case engine.ApprovalApproved:
			if satisfied >= 0 {
				t.Fatal("one consent satisfied two approvals")
			}
			satisfied = i
			mustEqual(t, "resolution", a.Resolution, engine.ResolutionApproveOnce)
			mustEqual(t, "resolved by", a.ResolvedBy, b.human.ID)
			mustEqual(t, "reason", a.ResolutionReason, OwnerActionReason)
			mustEqual(t, "run", r.RunStatus, api.RunQueued)
		case engine.ApprovalPending:
		default:
			t.Fatalf("approval %s", a.Status)
		}
		mustEqual(t, "approval.requested", b.countEvents(runs[i].run.ID, api.EventApprovalRequested), 1)
	}
	if satisfied < 0 {
		t.Fatal("the consent satisfied neither proposal")
	}
	c := runs[satisfied]
	mustEqual(t, "consumed events", b.countEvents(c.run.ID, api.EventConsentConsumed), 1)
	cs := b.consents(session)
	mustEqual(t, "consent status", cs[0].Status, api.ConsentConsumed)
	mustEqual(t, "consent approval", cs[0].ApprovalID, results[satisfied].ApprovalID)

	again := b.claim(c.run.ID)
	rr, err := b.svc.Resume(b.ctx, b.owner, c.run.ID, results[satisfied].InvocationID, again.lease,
		api.ResumeInput{Arguments: postArgs, AgentVersion: c.run.AgentVersion})
	if err != nil || !rr.Authorized {
		t.Fatalf("resume: %+v, %v", rr, err)
	}
}

// Anything but exactly the consented action, in its session, in time and
// from an origin that may authorize, gets the normal card, and the
// consent stays live.
func TestConsentFallsBackToACard(t *testing.T) {
	t.Parallel()
	b := setup(t)
	session := uuid.NewString()
	b.startedIn(session, "")
	b.consent(session, "http.post", postArgs)

	changed := action("http.post", map[string]any{"url": "https://crm.example/records/42", "body": "status=lost"})
	untrusted := action("http.post", postArgs)
	untrusted.OriginTrust = engine.TrustExternalUntrusted
	for name, tc := range map[string]struct {
		c   claimed
		req engine.ActionRequest
	}{
		"changed arguments": {b.startedIn(session, ""), changed},
		"another tool":      {b.startedIn(session, ""), action("demo.external_write", map[string]any{"record": "42", "field": "status", "value": "won"})},
		"another session":   {b.startedIn(uuid.NewString(), ""), action("http.post", postArgs)},
		"untrusted origin":  {b.startedIn(session, ""), untrusted},
	} {
		res := b.parked(tc.c, tc.req)
		mustEqual(t, name, b.approval(res.ApprovalID).Status, engine.ApprovalPending)
	}
	mustEqual(t, "consent", b.consents(session)[0].Status, api.ConsentLive)

	b.clock.Advance(MaxConsentWindow)
	res := b.parked(b.startedIn(session, ""), action("http.post", postArgs))
	mustEqual(t, "expired", b.approval(res.ApprovalID).Status, engine.ApprovalPending)
	mustEqual(t, "consent after expiry", b.consents(session)[0].Status, api.ConsentExpired)
}

func TestConsentNeverSatisfiesADeny(t *testing.T) {
	t.Parallel()
	b := setup(t)
	session := uuid.NewString()
	c := b.startedIn(session, "")
	b.consent(session, "secrets.read", map[string]any{"name": "prod-db"})
	if res := b.propose(c, action("secrets.read", map[string]any{"name": "prod-db"})); res.Decision != engine.DecisionDeny {
		t.Fatalf("decision %s, want deny", res.Decision)
	}
	mustEqual(t, "consent", b.consents(session)[0].Status, api.ConsentLive)
}

func TestConsentRecordRefusals(t *testing.T) {
	t.Parallel()
	b := setup(t)
	session := uuid.NewString()
	b.startedIn(session, "")
	in := api.ConsentInput{ToolName: "http.post", Arguments: postArgs}
	agent := b.owner // holds approval.resolve, and works the session's run
	reader := engine.Principal{ID: "reader", TenantID: b.tenant, Scopes: []string{"approval.read"}}
	stranger := b.human
	stranger.TenantID = "other-" + b.tenant
	cases := []struct {
		name string
		p    engine.Principal
		in   api.ConsentInput
		want error
	}{
		{"the session's agent", agent, in, ErrForbidden},
		{"without approval.resolve", reader, in, ErrForbidden},
		{"another tenant", stranger, in, ErrNotFound},
		{"an unknown tool", b.human, api.ConsentInput{ToolName: "nope", Arguments: postArgs}, ErrInvalid},
		{"past thirty minutes", b.human, api.ConsentInput{ToolName: "http.post", Arguments: postArgs, ExpiresInSeconds: 1801}, ErrInvalid},
	}
	for _, tc := range cases {
		if _, err := b.svc.RecordConsent(b.ctx, tc.p, session, tc.in, false); !errors.Is(err, tc.want) {
			t.Errorf("%s: %v, want %v", tc.name, err, tc.want)
		}
	}
	mustEqual(t, "consents", len(b.consents(session)), 0)

	// The owner signed in to the console is a human, not the agent's token.
	c, err := b.svc.RecordConsent(b.ctx, agent, session, api.ConsentInput{ToolName: "http.post", Arguments: postArgs, ExpiresInSeconds: 60}, true)
	if err != nil {
		t.Fatal(err)
	}
	mustEqual(t, "window", c.ExpiresAt.Sub(c.CreatedAt), time.Minute)
}

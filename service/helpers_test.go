package service

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"

	"gatehouse/api"
	"gatehouse/engine"
	"gatehouse/internal/testdb"
	"gatehouse/rules"
)

// Parallel tests run on a clock far from the reaper tests' clock, so a
// reaper pass in one test never reaches another test's approvals.
var (
	parallelEpoch = time.Date(2100, 1, 1, 0, 0, 0, 0, time.UTC)
	reaperEpoch   = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
)

type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) Advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// directory is a PrincipalDirectory tests can change mid-run.
type directory struct {
	mu sync.Mutex
	m  map[string]engine.Principal
}

func (d *directory) Principal(tenantID, id string) (engine.Principal, bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	p, ok := d.m[tenantID+"/"+id]
	return p, ok
}

func (d *directory) put(p engine.Principal) {
	d.mu.Lock()
	d.m[p.TenantID+"/"+p.ID] = p
	d.mu.Unlock()
}

func (d *directory) remove(p engine.Principal) {
	d.mu.Lock()
	delete(d.m, p.TenantID+"/"+p.ID)
	d.mu.Unlock()
}

// profileRows is the test profile's matrix: the two reads and workspace
// writes are allowed, the dangerous three denied, the rest need approval.
func profileRows(overrides map[engine.SideEffectClass]engine.PolicyDecisionType) []engine.ProfileRule {
	var rows []engine.ProfileRule
	for _, se := range engine.SideEffectClasses() {
		d := engine.DecisionRequireApproval
		switch se {
		case engine.SideEffectNone, engine.SideEffectWorkspaceRead, engine.SideEffectNetworkRead, engine.SideEffectWorkspaceWrite:
			d = engine.DecisionAllow
		case engine.SideEffectCredentialAccess, engine.SideEffectHostAccess, engine.SideEffectPrivileged:
			d = engine.DecisionDeny
		}
		if o, ok := overrides[se]; ok {
			d = o
		}
		rows = append(rows, engine.ProfileRule{SideEffect: se, Decision: d})
	}
	return rows
}

// testRuleset builds profile name from the matrix with overrides; version
// changes the bytes the policy_version hashes.
func testRuleset(t testing.TB, name, version string, overrides map[engine.SideEffectClass]engine.PolicyDecisionType, distinct bool) *engine.LoadedRuleset {
	t.Helper()
	rs, err := engine.NewLoadedRuleset(engine.Profile{
		Name: name, Rules: profileRows(overrides), RequireDistinctResolver: distinct,
	}, []byte(name+"-"+version), nil, []byte("hardline-test"))
	if err != nil {
		t.Fatalf("ruleset: %v", err)
	}
	return rs
}

func testCatalog(t testing.TB) *engine.Catalog {
	t.Helper()
	// The argument lists are closed, as in the built-in catalog.
	args := map[string][]string{
		"workspace.read_text": {"path"}, "workspace.write_text": {"path", "text"}, "email.send": {"to", "subject", "body"},
		"http.post": {"url", "body"}, "demo.external_write": {"record", "field", "value"}, "files.delete": {"file_id", "name"},
		"payments.charge": {"customer", "amount_cents", "currency"}, "blog.publish": {"title", "body"}, "sandbox.exec": {"command"},
		"package.install": {"manager", "package"}, "secrets.read": {"name"}, "device.sms.send": {"to", "body"},
		"artifact.export": {"artifact_id", "destination"}, "memory.publish": {"key", "text"},
		"browser.act": {"action", "url", "selector"},
	}
	spec := func(name string, kind engine.ActionKind, se engine.SideEffectClass, risk engine.RiskLevel, idem engine.IdempotencyClass, scopes ...string) engine.ToolSpec {
		return engine.ToolSpec{Name: name, Version: "1.0.0", Kind: kind, SideEffect: se, Risk: risk, Idempotency: idem, RequiredScopes: scopes, Arguments: args[name]}
	}
	tc := engine.ActionToolCall
	cat, err := engine.NewCatalog([]engine.ToolSpec{
		spec("workspace.read_text", tc, engine.SideEffectWorkspaceRead, engine.RiskLow, engine.IdempotencyReadOnly, "workspace.read"),
		spec("workspace.write_text", tc, engine.SideEffectWorkspaceWrite, engine.RiskMedium, engine.IdempotencyIdempotent, "workspace.write"),
		spec("email.send", tc, engine.SideEffectExternalMessage, engine.RiskHigh, engine.IdempotencyNonIdempotent),
		spec("http.post", tc, engine.SideEffectExternalWrite, engine.RiskHigh, engine.IdempotencyNonIdempotent),
		spec("demo.external_write", tc, engine.SideEffectExternalWrite, engine.RiskHigh, engine.IdempotencyNonIdempotent, "demo.write"),
		spec("files.delete", tc, engine.SideEffectExternalDelete, engine.RiskHigh, engine.IdempotencyIdempotent),
		spec("payments.charge", tc, engine.SideEffectFinancial, engine.RiskCritical, engine.IdempotencyConditionallyIdempotent),
		spec("blog.publish", tc, engine.SideEffectPublication, engine.RiskHigh, engine.IdempotencyNonIdempotent),
		spec("sandbox.exec", tc, engine.SideEffectCodeExecution, engine.RiskMedium, engine.IdempotencyNonIdempotent, "sandbox.execute"),
		spec("package.install", tc, engine.SideEffectPackageInstall, engine.RiskHigh, engine.IdempotencyConditionallyIdempotent, "sandbox.execute"),
		spec("secrets.read", tc, engine.SideEffectCredentialAccess, engine.RiskCritical, engine.IdempotencyReadOnly),
		spec("device.sms.send", tc, engine.SideEffectExternalMessage, engine.RiskHigh, engine.IdempotencyNonIdempotent),
		spec("artifact.export", engine.ActionArtifactExport, engine.SideEffectExternalWrite, engine.RiskMedium, engine.IdempotencyIdempotent, "artifact.write"),
		spec("memory.publish", engine.ActionMemoryWrite, engine.SideEffectPublication, engine.RiskLow, engine.IdempotencyIdempotent),
		// The advisory layer's consulted class: reads the web provider
		// makes, as in the built-in catalog.
		{Name: "web.search", Version: "1.0.0", Kind: tc, SideEffect: engine.SideEffectNetworkRead, Risk: engine.RiskLow,
			Idempotency: engine.IdempotencyReadOnly, Target: engine.TargetWebProvider, Arguments: []string{"query"}},
		{Name: "web.fetch", Version: "1.0.0", Kind: tc, SideEffect: engine.SideEffectNetworkRead, Risk: engine.RiskLow,
			Idempotency: engine.IdempotencyReadOnly, Target: engine.TargetWebProvider, Arguments: []string{"url"},
			Roles: engine.ArgumentRoles{URLs: []string{"url"}}},
		browserAct(spec("browser.act", tc, engine.SideEffectExternalWrite, engine.RiskHigh, engine.IdempotencyNonIdempotent)),
	})
	if err != nil {
		t.Fatalf("catalog: %v", err)
	}
	return cat
}

var allScopes = []string{"workspace.read", "workspace.write", "demo.write", "sandbox.execute", "artifact.write",
	"run.read", "run.write", "run.cancel", "approval.read", "approval.resolve"}

type bundle struct {
	t      testing.TB
	ctx    context.Context
	pool   *pgxpool.Pool
	svc    *Service
	clock  *clock
	dir    *directory
	policy *rules.Set
	tenant string
	owner  engine.Principal // submits runs and works them
	human  engine.Principal // resolves approvals
	notify *Notifications   // handed to every Service the bundle builds
	sites  *engine.GrantSites
}

type setupOpts struct {
	epoch    time.Time
	pool     *pgxpool.Pool
	distinct bool
	notify   *Notifications
	policy   *rules.Set
	sites    func(tenant string) *engine.GrantSites
}

func setup(t testing.TB, opts ...func(*setupOpts)) *bundle {
	t.Helper()
	o := setupOpts{epoch: parallelEpoch}
	for _, f := range opts {
		f(&o)
	}
	if o.pool == nil {
		o.pool = testdb.New(t)
	}
	tenant := "t-" + uuid.NewString()[:8]
	b := &bundle{
		t: t, ctx: context.Background(), pool: o.pool, clock: &clock{t: o.epoch},
		dir:    &directory{m: map[string]engine.Principal{}},
		tenant: tenant, notify: o.notify,
		owner: engine.Principal{ID: "owner", TenantID: tenant, Scopes: allScopes},
		human: engine.Principal{ID: "human", TenantID: tenant, Scopes: []string{"approval.read", "approval.resolve"}},
	}
	b.dir.put(b.owner)
	b.dir.put(b.human)
	b.policy = o.policy
	if b.policy == nil {
		b.policy = testSet(t, map[string]*engine.LoadedRuleset{"default": testRuleset(t, "default", "v1", nil, o.distinct)}, testCatalog(t))
	}
	if o.sites != nil {
		b.sites = o.sites(tenant)
	}
	b.svc = b.newService(b.policy)
	return b
}

func withEpoch(e time.Time) func(*setupOpts) { return func(o *setupOpts) { o.epoch = e } }
func withDistinctResolver(o *setupOpts)      { o.distinct = true }
func withNotifications(n *Notifications) func(*setupOpts) {
	return func(o *setupOpts) { o.notify = n }
}

// newService builds a Service on the bundle's database, clock and
// directory, as a restarted process would.
func (b *bundle) newService(policy *rules.Set) *Service {
	b.t.Helper()
	svc, err := New(b.ctx, Config{Pool: b.pool, Policy: policy, Principals: b.dir, Now: b.clock.Now, ReplicaID: "test", Notify: b.notify, GrantSites: b.sites})
	if err != nil {
		b.t.Fatalf("New: %v", err)
	}
	return svc
}

// claimed is a run a worker holds.
type claimed struct {
	run   api.Run
	lease api.Lease
}

func (b *bundle) submit(p engine.Principal, deadline *time.Time) api.Run {
	b.t.Helper()
	r, err := b.svc.SubmitRun(b.ctx, p, api.SubmitRunInput{SessionID: uuid.NewString(), AgentID: "agent", AgentVersion: "1.0", Deadline: deadline})
	if err != nil {
		b.t.Fatalf("submit: %v", err)
	}
	return r
}

func (b *bundle) claim(runID string) claimed {
	b.t.Helper()
	r, ok, err := b.svc.ClaimRun(b.ctx, b.owner, api.ClaimInput{WorkerID: "w-" + runID[:8], LeaseSeconds: 60, RunID: runID})
	if err != nil || !ok {
		b.t.Fatalf("claim %s: ok=%v err=%v", runID, ok, err)
	}
	return claimed{run: r, lease: api.Lease{WorkerID: r.WorkerID, FencingToken: r.FencingToken}}
}

// started submits and claims a run of the owner.
func (b *bundle) started() claimed {
	b.t.Helper()
	return b.claim(b.submit(b.owner, nil).ID)
}

func action(name string, args map[string]any) engine.ActionRequest {
	return engine.ActionRequest{
		ActionID: uuid.NewString(), Kind: engine.ActionToolCall, Name: name, Summary: "do " + name,
		StepNumber: 1, Arguments: args, OriginTrust: engine.TrustUser,
	}
}

func (b *bundle) propose(c claimed, req engine.ActionRequest) api.ProposeResult {
	b.t.Helper()
	res, err := b.svc.Propose(b.ctx, b.owner, c.run.ID, c.lease, req)
	if err != nil {
		b.t.Fatalf("propose %s: %v", req.Name, err)
	}
	return res
}

// parked proposes an action that needs approval and returns the result.
func (b *bundle) parked(c claimed, req engine.ActionRequest) api.ProposeResult {
	b.t.Helper()
	res := b.propose(c, req)
	if res.Decision != engine.DecisionRequireApproval || res.ApprovalID == "" {
		b.t.Fatalf("propose %s: decision %s, want require_approval", req.Name, res.Decision)
	}
	return res
}

func (b *bundle) resolve(id string, r engine.ApprovalResolutionType) ResolveOutcome {
	b.t.Helper()
	out, err := b.svc.ResolveApproval(b.ctx, b.human, id, r, "")
	if err != nil {
		b.t.Fatalf("resolve: %v", err)
	}
	return out
}

func (b *bundle) run(id string) api.Run {
	b.t.Helper()
	r, err := b.svc.GetRun(b.ctx, b.owner, id)
	if err != nil {
		b.t.Fatalf("get run: %v", err)
	}
	return r
}

func (b *bundle) approval(id string) api.Approval {
	b.t.Helper()
	a, err := b.svc.GetApproval(b.ctx, b.human, id)
	if err != nil {
		b.t.Fatalf("get approval: %v", err)
	}
	return a
}

func (b *bundle) invocation(runID, id string) api.Invocation {
	b.t.Helper()
	invs, err := b.svc.ListInvocations(b.ctx, b.owner, runID)
	if err != nil {
		b.t.Fatalf("list invocations: %v", err)
	}
	for _, inv := range invs {
		if inv.ID == id {
			return inv
		}
	}
	b.t.Fatalf("invocation %s not found", id)
	return api.Invocation{}
}

// countEvents counts a run's events of a type straight from the table, so
// the watermark filter cannot hide any.
func (b *bundle) countEvents(runID, typ string) int {
	b.t.Helper()
	var n int
	if err := b.pool.QueryRow(b.ctx, `SELECT count(*) FROM events WHERE run_id = $1 AND type = $2`, runID, typ).Scan(&n); err != nil {
		b.t.Fatalf("count events: %v", err)
	}
	return n
}

func wantErr(t testing.TB, err, target error) {
	t.Helper()
	if !errors.Is(err, target) {
		t.Fatalf("err = %v, want %v", err, target)
	}
}

func mustEqual[T comparable](t testing.TB, what string, got, want T) {
	t.Helper()
	if got != want {
		t.Fatalf("%s = %v, want %v", what, got, want)
	}
}

// testSet is a policy set of the given rulesets, "default" its default.
func testSet(t testing.TB, rulesets map[string]*engine.LoadedRuleset, cat *engine.Catalog) *rules.Set {
	t.Helper()
	set, err := rules.NewSet(rulesets, "default", cat)
	if err != nil {
		t.Fatal(err)
	}
	return set
}

// browserAct gives the browser tool its fixed target and url argument, as
// the built-in catalog does.
func browserAct(s engine.ToolSpec) engine.ToolSpec {
	s.Target = engine.TargetBrowserProvider
	s.Roles = engine.ArgumentRoles{URLs: []string{"url"}}
	return s
}

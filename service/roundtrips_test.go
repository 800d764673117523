package service

import (
	"context"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"gatehouse/engine"
)

// roundTrips counts what a pool sends to PostgreSQL: every query outside a
// batch (BEGIN and COMMIT included) is a round trip, a batch is one round
// trip however many statements it carries.
type roundTrips struct {
	mu         sync.Mutex
	trips      int
	statements int
}

func (r *roundTrips) TraceQueryStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceQueryStartData) context.Context {
	r.mu.Lock()
	r.trips++
	r.statements++
	r.mu.Unlock()
	return ctx
}

func (r *roundTrips) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}

func (r *roundTrips) TraceBatchStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceBatchStartData) context.Context {
	r.mu.Lock()
	r.trips++
	r.mu.Unlock()
	return ctx
}

func (r *roundTrips) TraceBatchQuery(context.Context, *pgx.Conn, pgx.TraceBatchQueryData) {
	r.mu.Lock()
	r.statements++
	r.mu.Unlock()
}

func (r *roundTrips) TraceBatchEnd(context.Context, *pgx.Conn, pgx.TraceBatchEndData) {}

// count returns the round trips and statements fn sent.
func (r *roundTrips) count(fn func()) (trips, statements int) {
	r.mu.Lock()
	r.trips, r.statements = 0, 0
	r.mu.Unlock()
	fn()
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.trips, r.statements
}

// tracedService is the bundle's service on a one-connection pool that
// counts its round trips: one connection, so its statement cache is warm
// after the first call of each path and the counts are the steady state.
func tracedService(t *testing.T, b *bundle, mods ...func(*Config)) (*Service, *roundTrips) {
	t.Helper()
	cfg := b.pool.Config()
	tr := &roundTrips{}
	cfg.ConnConfig.Tracer = tr
	cfg.MaxConns, cfg.MinConns = 1, 1
	pool, err := pgxpool.NewWithConfig(b.ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	svcCfg := Config{Pool: pool, Policy: b.policy, Principals: b.dir, Now: b.clock.Now, ReplicaID: "test", SkipProfileAudit: true}
	for _, mod := range mods {
		mod(&svcCfg)
	}
	svc, err := New(b.ctx, svcCfg)
	if err != nil {
		t.Fatal(err)
	}
	return svc, tr
}

// TestHotPathRoundTrips pins how many round trips (and statements) an
// allowed, a parking and a denied proposal and a resolution cost, BEGIN and
// COMMIT included, so a change that adds one fails here rather than only
// showing in a benchmark.
func TestHotPathRoundTrips(t *testing.T) {
	t.Parallel()
	b := setup(t)
	svc, tr := tracedService(t, b)
	allow := func(c claimed) {
		res, err := svc.Propose(b.ctx, b.owner, c.run.ID, c.lease, action("workspace.write_text", map[string]any{"path": "a.txt", "text": "x"}))
		if err != nil || res.Decision != engine.DecisionAllow {
			t.Fatalf("allow: %v %v", res.Decision, err)
		}
	}
	park := func(c claimed) string {
		res, err := svc.Propose(b.ctx, b.owner, c.run.ID, c.lease, action("email.send", map[string]any{"to": "a@example.com"}))
		if err != nil || res.Decision != engine.DecisionRequireApproval {
			t.Fatalf("park: %v %v", res.Decision, err)
		}
		return res.ApprovalID
	}
	resolve := func(id string, r engine.ApprovalResolutionType) {
		out, err := svc.ResolveApproval(b.ctx, b.human, id, r, "")
		if err != nil || out.Result != ResolveApplied {
			t.Fatalf("resolve: %v %v", out.Result, err)
		}
	}
	// Warm the connection's statement cache on every path first.
	allow(b.started())
	resolve(park(b.started()), engine.ResolutionApproveOnce)
	resolve(park(b.started()), engine.ResolutionDeny)

	deny := func(c claimed) {
		res, err := svc.Propose(b.ctx, b.owner, c.run.ID, c.lease, action("secrets.read", map[string]any{"name": "x"}))
		if err != nil || res.Decision != engine.DecisionDeny {
			t.Fatalf("deny: %v %v", res.Decision, err)
		}
	}
	deny(b.started())

	// Before batching: 7, 11, 7, 11 and 13 round trips, one statement each.
	c1, c2, c3 := b.started(), b.started(), b.started()
	approveID, denyID := park(b.started()), park(b.started())
	for _, tc := range []struct {
		name              string
		trips, statements int
		fn                func()
	}{
		{"allowed proposal", 4, 7, func() { allow(c1) }},
		// One more than before owner consent (issue 12): the locking
		// look-up of a consent to exactly this action precedes parking,
		// because a consented approval is never announced.
		{"parking proposal", 5, 12, func() { park(c2) }},
		{"denied proposal", 4, 7, func() { deny(c3) }},
		{"approving resolution", 5, 10, func() { resolve(approveID, engine.ResolutionApproveOnce) }},
		{"denying resolution", 5, 12, func() { resolve(denyID, engine.ResolutionDeny) }},
	} {
		trips, statements := tr.count(tc.fn)
		t.Logf("%s: %d round trips, %d statements", tc.name, trips, statements)
		if trips != tc.trips || statements != tc.statements {
			t.Errorf("%s: %d round trips, %d statements; want %d, %d", tc.name, trips, statements, tc.trips, tc.statements)
		}
	}
}

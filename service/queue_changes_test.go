package service

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"gatehouse/api"
	"gatehouse/engine"
	"gatehouse/internal/testdb"
)

// roundTrips counts the statements and batches a pool sends.
type roundTrips struct{ n atomic.Int64 }

func (r *roundTrips) TraceQueryStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceQueryStartData) context.Context {
	r.n.Add(1)
	return ctx
}
func (r *roundTrips) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}
func (r *roundTrips) TraceBatchStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceBatchStartData) context.Context {
	r.n.Add(1)
	return ctx
}
func (r *roundTrips) TraceBatchQuery(context.Context, *pgx.Conn, pgx.TraceBatchQueryData) {}
func (r *roundTrips) TraceBatchEnd(context.Context, *pgx.Conn, pgx.TraceBatchEndData)     {}

// tracedSetup is setup on a pool whose round trips are counted.
func tracedSetup(t *testing.T) (*bundle, *roundTrips) {
	t.Helper()
	cfg := testdb.New(t).Config()
	rt := &roundTrips{}
	cfg.ConnConfig.Tracer = rt
	pool, err := pgxpool.NewWithConfig(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	return setup(t, func(o *setupOpts) { o.pool = pool }), rt
}

// TestQueueChangesCostConstantRoundTrips: the live queue's poll costs two
// round trips whether one card changed or forty did, and returns each
// changed approval once, in event order, with the pending count.
func TestQueueChangesCostConstantRoundTrips(t *testing.T) {
	t.Parallel()
	b, rt := tracedSetup(t)
	cursor, err := b.svc.EventWatermark(b.ctx, b.owner)
	if err != nil {
		t.Fatal(err)
	}
	var costs []int64
	for _, n := range []int{1, 40} {
		var ids []string
		for range n {
			ids = append(ids, b.parked(b.started(), action("email.send", map[string]any{"to": "x"})).ApprovalID)
		}
		b.resolve(ids[0], engine.ResolutionDeny)
		// An event is visible once older transactions end: poll until every
		// change has arrived, waiting on the stream between polls.
		seen := map[string]api.Approval{}
		for polls := 0; len(seen) < n || seen[ids[0]].Status == engine.ApprovalPending; polls++ {
			if polls == 50 {
				t.Fatalf("%d changed: %d arrived", n, len(seen))
			}
			if _, err := b.svc.ListEvents(b.ctx, b.owner, EventFilter{After: cursor, Limit: 1, Wait: 2 * time.Second}); err != nil {
				t.Fatal(err)
			}
			before := rt.n.Load()
			page, err := b.svc.QueueChangesSince(b.ctx, b.human, cursor, 500, 50)
			if err != nil {
				t.Fatal(err)
			}
			costs = append(costs, rt.n.Load()-before)
			for _, a := range page.Approvals {
				seen[a.ID] = a
			}
			cursor = page.Cursor
		}
		if seen[ids[0]].Status != engine.ApprovalDenied {
			t.Errorf("%d changed: the resolved approval is %s", n, seen[ids[0]].Status)
		}
	}
	for _, c := range costs {
		if c > 2 {
			t.Fatalf("round trips per poll %v; want at most 2 each", costs)
		}
	}
}

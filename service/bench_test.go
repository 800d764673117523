package service

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"gatehouse/api"
	"gatehouse/engine"
	"gatehouse/notify"
)

// Benchmarks run on real PostgreSQL with b.RunParallel:
//
//	go test -run '^$' -bench . -benchmem -benchtime 2000x ./service/

// BenchmarkProposeAllow: each goroutine proposes on its own claimed run.
func BenchmarkProposeAllow(b *testing.B) {
	bb := setup(b)
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		c := bb.started()
		for pb.Next() {
			res, err := bb.svc.Propose(bb.ctx, bb.owner, c.run.ID, c.lease, action("workspace.write_text", map[string]any{"path": "a.txt", "text": "x"}))
			if err != nil || res.Decision != engine.DecisionAllow {
				b.Errorf("propose: %v %v", res.Decision, err)
				return
			}
		}
	})
}

// BenchmarkProposePark: every operation parks a fresh claimed run (the
// seed's steps in one transaction), with notifications off and on: the
// difference is what the outbox insert costs the gate (no notifier runs).
func BenchmarkProposePark(b *testing.B) {
	routed := &Notifications{
		Channels: map[string]notify.Channel{"hook": postChannel{name: "hook", url: "http://127.0.0.1:9"}},
		Route:    func(string, string) []string { return []string{"hook"} },
	}
	for _, n := range []struct {
		name string
		cfg  *Notifications
	}{{"notifications=off", nil}, {"notifications=on", routed}} {
		b.Run(n.name, func(b *testing.B) {
			bb := setup(b, withNotifications(n.cfg))
			runs := make(chan claimed, b.N)
			for range b.N {
				runs <- bb.started()
			}
			b.ReportAllocs()
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					c := <-runs
					res, err := bb.svc.Propose(bb.ctx, bb.owner, c.run.ID, c.lease, action("email.send", map[string]any{"to": "a@example.com"}))
					if err != nil || res.Decision != engine.DecisionRequireApproval {
						b.Errorf("propose: %v %v", res.Decision, err)
						return
					}
				}
			})
		})
	}
}

// resolversPerApproval is how many concurrent resolutions each approval
// gets in the resolve benchmarks.
const resolversPerApproval = 4

func parkedApprovals(b *testing.B, bb *bundle) []string {
	b.Helper()
	ids := make([]string, b.N/resolversPerApproval+1)
	for i := range ids {
		ids[i] = bb.parked(bb.started(), action("http.post", map[string]any{"url": fmt.Sprint(i)})).ApprovalID
	}
	return ids
}

// benchResolve runs resolve on parked approvals from parallel goroutines,
// resolversPerApproval calls per approval: the first applies, the rest find
// it resolved.
func benchResolve(b *testing.B, resolve func(bb *bundle, id string) error) {
	bb := setup(b)
	ids := parkedApprovals(b, bb)
	var next atomic.Int64
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if err := resolve(bb, ids[int(next.Add(1)-1)/resolversPerApproval]); err != nil {
				b.Errorf("resolve: %v", err)
				return
			}
		}
	})
}

// BenchmarkResolveContended: the service's ResolveApproval.
func BenchmarkResolveContended(b *testing.B) {
	benchResolve(b, func(bb *bundle, id string) error {
		_, err := bb.svc.ResolveApproval(bb.ctx, bb.human, id, engine.ResolutionApproveOnce, "")
		return err
	})
}

// BenchmarkResolveBareUpdate: the same guarded UPDATE through pgx alone,
// the floor ResolveApproval's extra work (run lock, re-read, invocation,
// checkpoint, events, re-queue) is measured against.
func BenchmarkResolveBareUpdate(b *testing.B) {
	benchResolve(b, func(bb *bundle, id string) error {
		_, err := bb.pool.Exec(bb.ctx, approvalResolveIfPending, id, bb.tenant, "approved", "approve_once", bb.clock.Now(), bb.human.ID, "")
		return err
	})
}

// BenchmarkResolveBareTx issues the statements ResolveApproval issues, in
// its round trips, in one pgx transaction with no service code around
// them: the run locked through the approval; the guarded update, the
// approval's re-read and its invocation; then the checkpoint,
// approval.resolved, the re-queue with run.queued, and NOTIFY. Against it,
// ResolveContended shows what the service's own code costs; against
// ResolveBareUpdate, what the database work of a resolution costs.
func BenchmarkResolveBareTx(b *testing.B) {
	payload := []byte(`{"resolution":"approve_once"}`)
	benchResolve(b, func(bb *bundle, id string) error {
		return pgx.BeginFunc(bb.ctx, bb.pool, func(tx pgx.Tx) error {
			return bareResolve(bb.ctx, tx, bb, id, payload)
		})
	})
}

func bareResolve(ctx context.Context, tx pgx.Tx, bb *bundle, id string, payload []byte) error {
	var runID string
	if err := tx.QueryRow(ctx, `SELECT id::text FROM runs
 WHERE id = (SELECT run_id FROM approvals WHERE id = $1 AND tenant_id = $2) AND tenant_id = $2 FOR UPDATE`, id, bb.tenant).Scan(&runID); err != nil {
		return err
	}
	now := bb.clock.Now()
	var applied bool
	var invID string
	resolve := &pgx.Batch{}
	resolve.Queue(approvalResolveIfPending, id, bb.tenant, "approved", "approve_once", now, bb.human.ID, "").Exec(func(tag pgconn.CommandTag) error {
		applied = tag.RowsAffected() == 1
		return nil
	})
	resolve.Queue(approvalGet, id, bb.tenant)
	resolve.Queue(`SELECT id::text FROM actions WHERE (run_id, action_id) = (SELECT run_id, action_id FROM approvals WHERE id = $1)`, id).QueryRow(func(row pgx.Row) error {
		return row.Scan(&invID)
	})
	if err := tx.SendBatch(ctx, resolve).Close(); err != nil || !applied {
		return err
	}
	settle := &pgx.Batch{}
	settle.Queue(runCheckpointSettle, runID, id, invID, now)
	settle.Queue(eventInsert, bb.tenant, runID, api.EventApprovalResolved, payload, now)
	settle.Queue(runRequeueIfSettled, runID, now, api.EventRunQueued, []byte(`{}`))
	settle.Queue(eventNotify, notifyChannel, bb.tenant)
	return tx.SendBatch(ctx, settle).Close()
}

// BenchmarkLongPollWake: the time from a park's commit (Propose returning)
// to a waiting long-poll returning approval.requested, as ms/wake, with the
// listener running and without it (the fallback poll; the park lands at
// eight points spread over its period). Run with -benchtime 8x: an op
// lasts up to a fallback period.
func BenchmarkLongPollWake(b *testing.B) {
	b.Run("listener", func(b *testing.B) {
		bb := setup(b)
		receive(b, "LISTEN", bb.runListener())
		longPollWake(b, bb, 0)
	})
	b.Run("fallback", func(b *testing.B) {
		bb := setup(b)
		longPollWake(b, bb, bb.svc.eventsFallback)
	})
}

func longPollWake(b *testing.B, bb *bundle, period time.Duration) {
	var total time.Duration
	for i := range b.N {
		c := bb.started()
		after, err := bb.svc.EventWatermark(bb.ctx, bb.owner)
		if err != nil {
			b.Fatal(err)
		}
		got := make(chan time.Time, 1)
		go func() {
			if err := bb.awaitEvent(after, api.EventApprovalRequested); err != nil {
				b.Error(err)
			}
			got <- time.Now()
		}()
		waitUntil(b, "long-poll waiting", func() bool { return bb.svc.wakeups.waiting(bb.tenant) > 0 })
		time.Sleep(time.Duration(i%8) * period / 8)
		bb.parked(c, action("email.send", map[string]any{"to": "x"}))
		parked := time.Now()
		total += receive(b, "long-poll", got).Sub(parked)
	}
	b.ReportMetric(float64(total)/float64(time.Millisecond)/float64(b.N), "ms/wake")
}

// BenchmarkListEventsPage reads one 100-event page from the middle of a
// tenant's 20,000-event stream with the (tx, id) cursor: an index range
// scan, whatever the depth, for the whole tenant and for one run.
func BenchmarkListEventsPage(b *testing.B) {
	bb := setup(b)
	c := bb.started()
	// 200 transactions of 100 events, each its own xid, half on one run.
	for i := range 200 {
		runID := ""
		if i%2 == 0 {
			runID = c.run.ID
		}
		if _, err := bb.pool.Exec(bb.ctx, `
INSERT INTO events (tenant_id, run_id, type, payload, created_at)
SELECT $1, $2::uuid, 'bench.event', '{}', now() FROM generate_series(1, 100)`, bb.tenant, nullUUID(runID)); err != nil {
			b.Fatal(err)
		}
	}
	if _, err := bb.pool.Exec(bb.ctx, `ANALYZE events`); err != nil {
		b.Fatal(err)
	}
	mid, err := bb.svc.ListEvents(bb.ctx, bb.owner, EventFilter{Limit: 500})
	if err != nil || len(mid) != 500 {
		b.Fatalf("setup page: %d %v", len(mid), err)
	}
	after := mid[len(mid)-1].Cursor
	for _, f := range []struct {
		name  string
		runID string
	}{{"tenant", ""}, {"run", c.run.ID}} {
		b.Run(f.name, func(b *testing.B) {
			for b.Loop() {
				evs, err := bb.svc.ListEvents(bb.ctx, bb.owner, EventFilter{After: after, RunID: f.runID, Limit: 100})
				if err != nil || len(evs) != 100 {
					b.Fatalf("page: %d %v", len(evs), err)
				}
			}
		})
	}
}

package service

import (
	"fmt"
	"sync/atomic"
	"testing"

	"gatehouse/engine"
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
// seed's steps in one transaction).
func BenchmarkProposePark(b *testing.B) {
	bb := setup(b)
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
}

// resolvers per approval in the contended benchmarks: the first applies,
// the rest find it resolved.
const resolversPerApproval = 4

func parkedApprovals(b *testing.B, bb *bundle) []string {
	b.Helper()
	ids := make([]string, b.N/resolversPerApproval+1)
	for i := range ids {
		ids[i] = bb.parked(bb.started(), action("http.post", map[string]any{"url": fmt.Sprint(i)})).ApprovalID
	}
	return ids
}

// BenchmarkResolveContended: the service's ResolveApproval, four
// concurrent resolutions per approval.
func BenchmarkResolveContended(b *testing.B) {
	bb := setup(b)
	ids := parkedApprovals(b, bb)
	var next atomic.Int64
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			id := ids[int(next.Add(1)-1)/resolversPerApproval]
			if _, err := bb.svc.ResolveApproval(bb.ctx, bb.human, id, engine.ResolutionApproveOnce, ""); err != nil {
				b.Errorf("resolve: %v", err)
				return
			}
		}
	})
}

// BenchmarkResolveBareUpdate: the same guarded UPDATE through pgx alone,
// the floor ResolveApproval's extra work (run lock, re-read, invocation,
// checkpoint, events, re-queue) is measured against.
func BenchmarkResolveBareUpdate(b *testing.B) {
	bb := setup(b)
	ids := parkedApprovals(b, bb)
	var next atomic.Int64
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			id := ids[int(next.Add(1)-1)/resolversPerApproval]
			_, err := bb.pool.Exec(bb.ctx, approvalResolveIfPending, id, bb.tenant, "approved", "approve_once", bb.clock.Now(), bb.human.ID, "")
			if err != nil {
				b.Errorf("update: %v", err)
				return
			}
		}
	})
}

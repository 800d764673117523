package service

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"gatehouse/api"
	"gatehouse/engine"
)

// The reaper is not tenant-scoped, so these tests run on their own clock
// epoch and sequentially (before the parallel tests start): a reaper pass
// here can never reach another test's approvals.

const raceIterations = 50

// parkedAtExpiry parks a high-risk approval and moves the clock exactly to
// its expiry: the boundary where both the reaper and a resolver may act.
func parkedAtExpiry(b *bundle) (claimed, api.ProposeResult) {
	b.t.Helper()
	c := b.started()
	park := b.parked(c, action("email.send", map[string]any{"to": "x@example.com"}))
	a := b.approval(park.ApprovalID)
	b.clock.Advance(a.ExpiresAt.Sub(b.clock.Now()))
	return c, park
}

func TestRaceReaperVsResolve(t *testing.T) {
	b := setup(t, withEpoch(reaperEpoch))
	outcomes := map[string]int{}
	for i := range raceIterations {
		c, park := parkedAtExpiry(b)
		var out ResolveOutcome
		var rerr, xerr error
		var expired int
		var wg sync.WaitGroup
		start := make(chan struct{})
		wg.Go(func() {
			<-start
			out, rerr = b.svc.ResolveApproval(b.ctx, b.human, park.ApprovalID, engine.ResolutionApproveOnce, "")
		})
		wg.Go(func() { <-start; expired, xerr = b.svc.ExpireDue(b.ctx, 10) })
		close(start)
		wg.Wait()
		if rerr != nil || xerr != nil {
			t.Fatalf("iteration %d: resolve %v, reap %v", i, rerr, xerr)
		}
		a := b.approval(park.ApprovalID)
		// At expires_at the approval is due: the resolver never wins, and
		// whichever side expires it, it is expired exactly once.
		switch {
		case out.Result == ResolveConflict && (expired == 1 || expired == 0):
			mustEqual(t, "approval", a.Status, engine.ApprovalExpired)
			mustEqual(t, "run", b.run(c.run.ID).Status, api.RunFailed)
			mustEqual(t, "invocation", b.invocation(c.run.ID, park.InvocationID).Status, api.InvocationDenied)
		default:
			t.Fatalf("iteration %d: resolve %s and reaper expired %d", i, out.Result, expired)
		}
		outcomes[string(a.Status)]++
		mustEqual(t, "approval.resolved events", b.countEvents(c.run.ID, api.EventApprovalResolved), 1)
	}
	t.Logf("outcomes: %v", outcomes)
}

func TestRaceReaperVsCancel(t *testing.T) {
	b := setup(t, withEpoch(reaperEpoch))
	for i := range raceIterations {
		c, park := parkedAtExpiry(b)
		var cerr, xerr error
		var expired int
		var wg sync.WaitGroup
		start := make(chan struct{})
		wg.Go(func() { <-start; _, cerr = b.svc.CancelRun(b.ctx, b.owner, c.run.ID) })
		wg.Go(func() { <-start; expired, xerr = b.svc.ExpireDue(b.ctx, 10) })
		close(start)
		wg.Wait()
		if xerr != nil {
			t.Fatalf("iteration %d: reap %v", i, xerr)
		}
		a := b.approval(park.ApprovalID)
		r := b.run(c.run.ID)
		switch {
		case cerr == nil && expired == 0:
			mustEqual(t, "approval", a.Status, engine.ApprovalCancelled)
			mustEqual(t, "run", r.Status, api.RunCancelled)
		case errors.Is(cerr, ErrConflict) && expired == 1:
			mustEqual(t, "approval", a.Status, engine.ApprovalExpired)
			mustEqual(t, "run", r.Status, api.RunFailed)
		default:
			t.Fatalf("iteration %d: cancel %v and reaper expired %d", i, cerr, expired)
		}
		mustEqual(t, "approval.resolved events", b.countEvents(c.run.ID, api.EventApprovalResolved), 1)
	}
}

func TestRaceTwoReapers(t *testing.T) {
	b := setup(t, withEpoch(reaperEpoch))
	const approvals = 40
	var runs []string
	for range approvals {
		c := b.started()
		b.parked(c, action("payments.charge", map[string]any{"customer": "c"}))
		runs = append(runs, c.run.ID)
	}
	b.clock.Advance(2 * time.Hour)
	var total atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, 2)
	for range 2 {
		wg.Go(func() {
			for {
				n, err := b.svc.ExpireDue(b.ctx, 7)
				if err != nil {
					errs <- err
					return
				}
				total.Add(int64(n))
				if n == 0 {
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	mustEqual(t, "expired", total.Load(), int64(approvals))
	for _, id := range runs {
		mustEqual(t, fmt.Sprintf("events of %s", id), b.countEvents(id, api.EventApprovalResolved), 1)
		mustEqual(t, "run", b.run(id).Status, api.RunFailed)
	}
}

// TestReaperNeverApproves: an expired approval is expired, its invocation
// denied, its run failed, and a late approval is a conflict.
func TestReaperNeverApproves(t *testing.T) {
	b := setup(t, withEpoch(reaperEpoch))
	c, park := parkedAtExpiry(b)
	b.clock.Advance(time.Second)
	if n, err := b.svc.ExpireDue(b.ctx, 10); err != nil || n != 1 {
		t.Fatalf("expired %d, %v", n, err)
	}
	r := b.run(c.run.ID)
	mustEqual(t, "run", r.Status, api.RunFailed)
	mustEqual(t, "failure", r.FailureReason, engine.ReasonApprovalExpired)
	out := b.resolve(park.ApprovalID, engine.ResolutionApproveOnce)
	mustEqual(t, "late approval", out.Result, ResolveConflict)
	mustEqual(t, "stored", out.Approval.Status, engine.ApprovalExpired)
}

// TestCrashOrder injects a failure after each parking step. Before commit
// the run must stay RUNNING under its lease with no approval (reclaimable
// and replayable); after commit it must be correctly parked. Never a
// waiting run without an approval.
func TestCrashOrder(t *testing.T) {
	t.Parallel()
	for step := stepInvocation; step <= 8; step++ {
		t.Run(fmt.Sprintf("after step %d", step), func(t *testing.T) {
			t.Parallel()
			b := setup(t)
			crash := errors.New("injected crash")
			b.svc.failAfterStep = func(n int) error {
				if n == step {
					return crash
				}
				return nil
			}
			c := b.started()
			req := action("blog.publish", map[string]any{"title": "t", "body": "b"})
			_, err := b.svc.Propose(b.ctx, b.owner, c.run.ID, c.lease, req)
			wantErr(t, err, crash)
			var waitingWithout int
			if err := b.pool.QueryRow(b.ctx, `SELECT count(*) FROM runs r WHERE r.tenant_id = $1 AND r.status = 'WAITING_FOR_APPROVAL'
				AND NOT EXISTS (SELECT 1 FROM approvals a WHERE a.run_id = r.id AND a.status = 'pending')`, b.tenant).Scan(&waitingWithout); err != nil {
				t.Fatal(err)
			}
			mustEqual(t, "waiting runs without an approval", waitingWithout, 0)
			r := b.run(c.run.ID)
			page, err := b.svc.ListApprovals(b.ctx, b.human, ApprovalFilter{RunID: c.run.ID})
			if err != nil {
				t.Fatal(err)
			}
			if step == 8 {
				mustEqual(t, "run", r.Status, api.RunWaitingForApproval)
				mustEqual(t, "approvals", len(page.Items), 1)
				mustEqual(t, "checkpoint", r.Checkpoint.PendingApprovalIDs[0], page.Items[0].ID)
				return
			}
			mustEqual(t, "run", r.Status, api.RunRunning)
			mustEqual(t, "token", r.FencingToken, c.lease.FencingToken)
			mustEqual(t, "approvals", len(page.Items), 0)
			mustEqual(t, "checkpoint", len(r.Checkpoint.PendingApprovalIDs), 0)
			// The lease lapses, another worker reclaims and replays.
			b.svc.failAfterStep = nil
			b.clock.Advance(61 * time.Second)
			c2 := b.claim(c.run.ID)
			b.parked(c2, req)
		})
	}
}

// TestRaceReaperVsResolveAroundExpiry races a resolver and the reaper while
// a third goroutine moves the clock across expires_at, so either side may
// act first on either side of the boundary. Whoever wins, the approval is
// resolved exactly once, approved only by a resolution made before its
// expiry and expired only at or after it.
func TestRaceReaperVsResolveAroundExpiry(t *testing.T) {
	b := setup(t, withEpoch(reaperEpoch))
	outcomes := map[engine.ApprovalStatus]int{}
	for i := range raceIterations {
		c := b.started()
		park := b.parked(c, action("email.send", map[string]any{"to": "x@example.com"}))
		exp := b.approval(park.ApprovalID).ExpiresAt
		b.clock.Advance(exp.Sub(b.clock.Now()) - time.Microsecond)
		var out ResolveOutcome
		var rerr, xerr error
		var wg sync.WaitGroup
		start := make(chan struct{})
		wg.Go(func() {
			<-start
			out, rerr = b.svc.ResolveApproval(b.ctx, b.human, park.ApprovalID, engine.ResolutionApproveOnce, "")
		})
		wg.Go(func() { <-start; _, xerr = b.svc.ExpireDue(b.ctx, 10) })
		wg.Go(func() { <-start; b.clock.Advance(time.Duration(i%3) * time.Microsecond) })
		close(start)
		wg.Wait()
		if rerr != nil || xerr != nil {
			t.Fatalf("iteration %d: resolve %v, reap %v", i, rerr, xerr)
		}
		a := b.approval(park.ApprovalID)
		switch a.Status {
		case engine.ApprovalApproved:
			if out.Result != ResolveApplied || a.ResolvedAt == nil || !a.ResolvedAt.Before(a.ExpiresAt) {
				t.Fatalf("iteration %d: approved by %s at %v, expiry %v", i, out.Result, a.ResolvedAt, a.ExpiresAt)
			}
			mustEqual(t, "run", b.run(c.run.ID).Status, api.RunQueued)
		case engine.ApprovalExpired:
			if a.ResolvedAt == nil || a.ResolvedAt.Before(a.ExpiresAt) {
				t.Fatalf("iteration %d: expired at %v, before its expiry %v", i, a.ResolvedAt, a.ExpiresAt)
			}
			mustEqual(t, "resolver's answer", out.Result, ResolveConflict)
			mustEqual(t, "run", b.run(c.run.ID).Status, api.RunFailed)
			mustEqual(t, "invocation", b.invocation(c.run.ID, park.InvocationID).Status, api.InvocationDenied)
		default:
			t.Fatalf("iteration %d: approval %s", i, a.Status)
		}
		mustEqual(t, "approval.resolved events", b.countEvents(c.run.ID, api.EventApprovalResolved), 1)
		outcomes[a.Status]++
	}
	t.Logf("outcomes: %v", outcomes)
}

package e2e

import (
	"context"
	"errors"
	"flag"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"

	"gatehouse/api"
	"gatehouse/client"
	"gatehouse/engine"
)

var (
	loadDuration  = flag.Duration("load-duration", 20*time.Second, "how long TestLoad drives traffic")
	loadAgents    = flag.Int("load-agents", 8, "concurrent agents in TestLoad")
	loadApprovers = flag.Int("load-approvers", 2, "concurrent approvers in TestLoad")
)

// latencies collects call durations from many goroutines.
type latencies struct {
	mu sync.Mutex
	d  []time.Duration
}

func (l *latencies) add(d time.Duration) {
	l.mu.Lock()
	l.d = append(l.d, d)
	l.mu.Unlock()
}

// quantile is the q-quantile by nearest rank.
func (l *latencies) quantile(q float64) time.Duration {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.d) == 0 {
		return 0
	}
	s := slices.Clone(l.d)
	slices.Sort(s)
	return s[min(len(s)-1, int(q*float64(len(s))))]
}

// loadStats are the counters of one load run.
type loadStats struct {
	proposals, parked, resolves, conflicts, serverErrors atomic.Int64
	propose, resolve                                     latencies
}

// record counts a call's outcome; a 5xx fails the run at the end.
func (s *loadStats) record(t *testing.T, what string, err error) {
	var ce *client.Error
	if errors.As(err, &ce) && ce.Status >= 500 {
		s.serverErrors.Add(1)
		t.Errorf("%s: %v", what, err)
	}
}

// TestLoad drives agents proposing (half the actions park, half are
// allowed) and approvers resolving through the client, concurrently, for
// -load-duration; then it checks that every approval is in exactly one
// state and the event log has one approval.requested per approval and at
// most one approval.resolved. Run with `make loadtest`.
func TestLoad(t *testing.T) {
	if !*loadFlag {
		t.Skip("load test: run with -load (make loadtest)")
	}
	srv := startServer(t, serverOptions{ReaperInterval: time.Second})
	var st loadStats
	// stop ends the loops; calls run on their own context so none is cut
	// off mid-flight (a proposal the server made but the test did not count
	// would break the bookkeeping below).
	stop, cancel := context.WithTimeout(context.Background(), *loadDuration)
	defer cancel()
	ctx := testContext(t)
	start := time.Now()

	var wg sync.WaitGroup
	for range *loadAgents {
		wg.Go(func() { runAgent(stop, ctx, t, srv.Client("alice"), &st) })
	}
	for range *loadApprovers {
		wg.Go(func() { runApprover(stop, ctx, t, srv.Client("bob"), &st) })
	}
	wg.Wait()
	elapsed := time.Since(start).Seconds()

	t.Logf("%d agents, %d approvers, %.1fs", *loadAgents, *loadApprovers, elapsed)
	t.Logf("proposals: %d (%.1f/s), parked %d; propose p50 %v p99 %v",
		st.proposals.Load(), float64(st.proposals.Load())/elapsed, st.parked.Load(),
		st.propose.quantile(0.50), st.propose.quantile(0.99))
	t.Logf("resolves: %d (%.1f/s), conflicts %d; resolve p50 %v p99 %v",
		st.resolves.Load(), float64(st.resolves.Load())/elapsed, st.conflicts.Load(),
		st.resolve.quantile(0.50), st.resolve.quantile(0.99))
	if n := st.serverErrors.Load(); n > 0 {
		t.Errorf("%d responses were 5xx", n)
	}
	checkLoadInvariants(t, srv.Client("bob"), st.parked.Load())
}

// runAgent submits a run, claims it, proposes an allowed action, and on
// every other run a parking one (which ends the agent's turn on that run).
func runAgent(stop, ctx context.Context, t *testing.T, c *client.Client, st *loadStats) {
	for stop.Err() == nil {
		run, err := c.SubmitRun(ctx, api.SubmitRunInput{SessionID: uuid.NewString(), AgentID: "load", AgentVersion: "1.0.0"})
		if err != nil {
			st.record(t, "submit", err)
			continue
		}
		worker := uuid.NewString()
		claimed, ok, err := c.Claim(ctx, api.ClaimInput{WorkerID: worker, LeaseSeconds: 60, RunID: run.ID})
		if err != nil || !ok {
			st.record(t, "claim", err)
			continue
		}
		lease := api.Lease{WorkerID: worker, FencingToken: claimed.FencingToken}
		actions := []engine.ActionRequest{allowedAction()}
		if rand.IntN(2) == 0 {
			actions = append(actions, parkingAction())
		}
		for _, a := range actions {
			t0 := time.Now()
			res, err := c.Propose(ctx, run.ID, lease, a)
			if err != nil {
				st.record(t, "propose", err)
				break
			}
			st.propose.add(time.Since(t0))
			st.proposals.Add(1)
			if res.Decision == engine.DecisionRequireApproval {
				st.parked.Add(1)
			}
		}
	}
}

// runApprover resolves the pending queue, approving or denying at random;
// approvers race each other on the same cards, so 409s are expected.
func runApprover(stop, ctx context.Context, t *testing.T, c *client.Client, st *loadStats) {
	for stop.Err() == nil {
		page, err := c.ListApprovals(ctx, client.ApprovalQuery{Limit: 20})
		if err != nil {
			st.record(t, "list", err)
			continue
		}
		if len(page.Items) == 0 {
			time.Sleep(20 * time.Millisecond)
			continue
		}
		for _, a := range page.Items {
			r := engine.ResolutionApproveOnce
			if rand.IntN(2) == 0 {
				r = engine.ResolutionDeny
			}
			t0 := time.Now()
			_, err := c.Resolve(ctx, a.ID, r, "")
			switch {
			case err == nil:
				st.resolve.add(time.Since(t0))
				st.resolves.Add(1)
			case client.IsCode(err, "conflict"):
				st.conflicts.Add(1)
			default:
				st.record(t, "resolve", err)
			}
		}
	}
}

// checkLoadInvariants reads every approval and the whole event log.
func checkLoadInvariants(t *testing.T, c *client.Client, parked int64) {
	ctx := testContext(t)
	states := map[string]engine.ApprovalStatus{}
	for _, status := range []string{"pending", "resolved"} {
		var cursor string
		for {
			page, err := c.ListApprovals(ctx, client.ApprovalQuery{Status: status, Limit: 200, Cursor: cursor})
			if err != nil {
				t.Fatalf("listing %s approvals: %v", status, err)
			}
			for _, a := range page.Items {
				if prev, dup := states[a.ID]; dup {
					t.Errorf("approval %s listed as %s and %s", a.ID, prev, a.Status)
				}
				states[a.ID] = a.Status
			}
			if cursor = page.NextCursor; cursor == "" {
				break
			}
		}
	}
	if int64(len(states)) != parked {
		t.Errorf("%d approvals listed, %d proposals parked", len(states), parked)
	}

	requested, resolved := map[string]int{}, map[string]int{}
	var events int
	var after string
	for {
		page, err := c.Events(ctx, client.EventQuery{After: after, Limit: 500})
		if err != nil {
			t.Fatalf("events: %v", err)
		}
		if len(page.Events) == 0 {
			break
		}
		events += len(page.Events)
		for _, e := range page.Events {
			if e.Type != api.EventApprovalRequested && e.Type != api.EventApprovalResolved {
				continue
			}
			p, err := e.DecodePayload()
			if err != nil {
				t.Fatalf("event %d: %v", e.ID, err)
			}
			switch p := p.(type) {
			case api.ApprovalRequestedPayload:
				requested[p.ApprovalID]++
			case api.ApprovalResolvedPayload:
				resolved[p.ApprovalID]++
			}
			if requested[""]+resolved[""] > 0 {
				t.Fatalf("event %d: payload without approval_id: %s", e.ID, e.Payload)
			}
		}
		after = page.Watermark
	}
	for id, status := range states {
		if requested[id] != 1 {
			t.Errorf("approval %s: %d approval.requested events", id, requested[id])
		}
		want := 1
		if status == engine.ApprovalPending {
			want = 0
		}
		if resolved[id] != want {
			t.Errorf("approval %s (%s): %d approval.resolved events, want %d", id, status, resolved[id], want)
		}
	}
	t.Logf("invariants hold: %d approvals, %d events", len(states), events)
}

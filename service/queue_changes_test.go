package service

import (
	"testing"
	"time"

	"gatehouse/api"
	"gatehouse/engine"
)

// TestQueueChangesCostConstantRoundTrips: the live queue's poll costs two
// round trips whether one card changed or forty did, and returns each
// changed approval once, in event order, with the pending count.
func TestQueueChangesCostConstantRoundTrips(t *testing.T) {
	t.Parallel()
	b := setup(t)
	svc, rt := tracedService(t, b)
	cursor, err := b.svc.EventWatermark(b.ctx, b.owner)
	if err != nil {
		t.Fatal(err)
	}
	var costs []int
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
			var page QueueChanges
			var err error
			trips, _ := rt.count(func() { page, err = svc.QueueChangesSince(b.ctx, b.human, cursor, 500, 50) })
			if err != nil {
				t.Fatal(err)
			}
			costs = append(costs, trips)
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

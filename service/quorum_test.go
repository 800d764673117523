package service

import (
	"sync"
	"testing"

	"gatehouse/api"
	"gatehouse/engine"
)

// setupQuorum is setup with a default profile whose critical actions need
// two distinct approvers, and three approvers in the tenant.
func setupQuorum(t *testing.T) (b *bundle, alice, bob, carol engine.Principal) {
	t.Helper()
	b = setup(t)
	rs, err := engine.NewLoadedRuleset(engine.Profile{
		Name: "default", Rules: profileRows(nil), Quorum: map[engine.RiskLevel]int{engine.RiskCritical: 2},
	}, []byte("default-quorum"), nil, []byte("hardline-test"))
	if err != nil {
		t.Fatal(err)
	}
	b.policy = testSet(t, map[string]*engine.LoadedRuleset{"default": rs}, testCatalog(t))
	b.svc = b.newService(b.policy)
	approver := func(id string) engine.Principal {
		return engine.Principal{ID: id, TenantID: b.tenant, Scopes: []string{"approval.read", "approval.resolve"}}
	}
	return b, approver("alice"), approver("bob"), approver("carol")
}

// parkedCharge parks a critical payments.charge: quorum 2.
func parkedCharge(b *bundle) (claimed, api.ProposeResult) {
	b.t.Helper()
	c := b.started()
	return c, b.parked(c, action("payments.charge", map[string]any{"customer": "c1", "amount_cents": 500, "currency": "EUR"}))
}

func (b *bundle) vote(p engine.Principal, id string, r engine.ApprovalResolutionType) ResolveOutcome {
	b.t.Helper()
	out, err := b.svc.ResolveApproval(b.ctx, p, id, r, "")
	if err != nil {
		b.t.Fatalf("%s %s: %v", p.ID, r, err)
	}
	return out
}

// TestQuorumCollectsDistinctApprovals: a critical approval stays pending
// through the first approval, counts a repeated vote once, refuses a
// changed vote, and is approved, once, by the second approver; an action
// of a risk without a quorum is approved by one.
func TestQuorumCollectsDistinctApprovals(t *testing.T) {
	t.Parallel()
	b, alice, bob, carol := setupQuorum(t)
	c, park := parkedCharge(b)
	mustEqual(t, "quorum", b.approval(park.ApprovalID).Quorum, 2)

	out := b.vote(alice, park.ApprovalID, engine.ResolutionApproveOnce)
	mustEqual(t, "first approval", out.Result, ResolveVoted)
	mustEqual(t, "status", out.Approval.Status, engine.ApprovalPending)
	mustEqual(t, "votes", len(out.Approval.Votes), 1)
	mustEqual(t, "voter", out.Approval.Votes[0].PrincipalID, "alice")
	mustEqual(t, "run", b.run(c.run.ID).Status, api.RunWaitingForApproval)
	mustEqual(t, "approval.voted events", b.countEvents(c.run.ID, api.EventApprovalVoted), 1)

	out = b.vote(alice, park.ApprovalID, engine.ResolutionApproveOnce)
	mustEqual(t, "alice again", out.Result, ResolveSame)
	mustEqual(t, "status", out.Approval.Status, engine.ApprovalPending)
	out = b.vote(alice, park.ApprovalID, engine.ResolutionDeny)
	mustEqual(t, "alice changes her mind", out.Result, ResolveConflict)
	mustEqual(t, "status", out.Approval.Status, engine.ApprovalPending)
	mustEqual(t, "votes", len(b.approval(park.ApprovalID).Votes), 1)

	out = b.vote(bob, park.ApprovalID, engine.ResolutionApproveOnce)
	mustEqual(t, "second approver", out.Result, ResolveApplied)
	mustEqual(t, "status", out.Approval.Status, engine.ApprovalApproved)
	mustEqual(t, "resolved by", out.Approval.ResolvedBy, "bob")
	mustEqual(t, "votes", len(out.Approval.Votes), 2)
	mustEqual(t, "approval.resolved events", b.countEvents(c.run.ID, api.EventApprovalResolved), 1)
	mustEqual(t, "approval.voted events", b.countEvents(c.run.ID, api.EventApprovalVoted), 1)
	mustEqual(t, "run", b.run(c.run.ID).Status, api.RunQueued)

	mustEqual(t, "a third approval", b.vote(carol, park.ApprovalID, engine.ResolutionApproveOnce).Result, ResolveSame)
	mustEqual(t, "a late deny", b.vote(carol, park.ApprovalID, engine.ResolutionDeny).Result, ResolveConflict)
	mustEqual(t, "approval.resolved events", b.countEvents(c.run.ID, api.EventApprovalResolved), 1)

	// Resume authorizes the quorum's approval as any other.
	c = b.claim(c.run.ID)
	res, err := b.svc.Resume(b.ctx, b.owner, c.run.ID, park.InvocationID, c.lease, api.ResumeInput{
		Arguments: map[string]any{"customer": "c1", "amount_cents": 500, "currency": "EUR"}, AgentVersion: "1.0",
	})
	if err != nil || !res.Authorized {
		t.Fatalf("resume: %+v %v", res, err)
	}

	// A high-risk action has no quorum: one approval approves it.
	c2 := b.started()
	high := b.parked(c2, action("email.send", map[string]any{"to": "x@example.com"}))
	mustEqual(t, "quorum", b.approval(high.ApprovalID).Quorum, 1)
	out = b.vote(alice, high.ApprovalID, engine.ResolutionApproveOnce)
	mustEqual(t, "one approval", out.Result, ResolveApplied)
	mustEqual(t, "votes", len(out.Approval.Votes), 0)
}

// TestQuorumAnyDenyDenies: a deny after an approval denies at once, and
// the invocation with it.
func TestQuorumAnyDenyDenies(t *testing.T) {
	t.Parallel()
	b, alice, bob, _ := setupQuorum(t)
	c, park := parkedCharge(b)
	mustEqual(t, "approval", b.vote(alice, park.ApprovalID, engine.ResolutionApproveOnce).Result, ResolveVoted)
	out := b.vote(bob, park.ApprovalID, engine.ResolutionDeny)
	mustEqual(t, "deny", out.Result, ResolveApplied)
	mustEqual(t, "status", out.Approval.Status, engine.ApprovalDenied)
	mustEqual(t, "invocation", b.invocation(c.run.ID, park.InvocationID).Status, api.InvocationDenied)
	mustEqual(t, "approval.resolved events", b.countEvents(c.run.ID, api.EventApprovalResolved), 1)
	mustEqual(t, "a late approval", b.vote(alice, park.ApprovalID, engine.ResolutionApproveOnce).Result, ResolveConflict)
}

// raceVotes casts two votes at once on a fresh critical approval and
// returns both outcomes and the approval after.
func raceVotes(t *testing.T, b *bundle, p1 engine.Principal, r1 engine.ApprovalResolutionType, p2 engine.Principal, r2 engine.ApprovalResolutionType) (o1, o2 ResolveOutcome, c claimed, a api.Approval) {
	t.Helper()
	c, park := parkedCharge(b)
	var e1, e2 error
	var wg sync.WaitGroup
	start := make(chan struct{})
	wg.Go(func() { <-start; o1, e1 = b.svc.ResolveApproval(b.ctx, p1, park.ApprovalID, r1, "") })
	wg.Go(func() { <-start; o2, e2 = b.svc.ResolveApproval(b.ctx, p2, park.ApprovalID, r2, "") })
	close(start)
	wg.Wait()
	if e1 != nil || e2 != nil {
		t.Fatalf("votes: %v, %v", e1, e2)
	}
	return o1, o2, c, b.approval(park.ApprovalID)
}

// oneEach fails unless the two outcomes are r1 and r2, in either order.
func oneEach(t *testing.T, iteration int, o1, o2 ResolveOutcome, r1, r2 ResolveResult) {
	t.Helper()
	if (o1.Result != r1 || o2.Result != r2) && (o1.Result != r2 || o2.Result != r1) {
		t.Fatalf("iteration %d: %s and %s, want one %s and one %s", iteration, o1.Result, o2.Result, r1, r2)
	}
}

// TestRaceQuorumTwoApprovers: two approvers at once reach exactly one
// APPROVED: one vote is counted, the other approves.
func TestRaceQuorumTwoApprovers(t *testing.T) {
	t.Parallel()
	b, alice, bob, _ := setupQuorum(t)
	for i := range raceIterations {
		o1, o2, c, a := raceVotes(t, b, alice, engine.ResolutionApproveOnce, bob, engine.ResolutionApproveOnce)
		oneEach(t, i, o1, o2, ResolveVoted, ResolveApplied)
		mustEqual(t, "status", a.Status, engine.ApprovalApproved)
		mustEqual(t, "votes", len(a.Votes), 2)
		mustEqual(t, "approval.resolved events", b.countEvents(c.run.ID, api.EventApprovalResolved), 1)
		mustEqual(t, "approval.voted events", b.countEvents(c.run.ID, api.EventApprovalVoted), 1)
		mustEqual(t, "run", b.run(c.run.ID).Status, api.RunQueued)
	}
}

// TestRaceQuorumApproveAndDeny: an approval and a deny at once end
// DENIED, whichever comes first.
func TestRaceQuorumApproveAndDeny(t *testing.T) {
	t.Parallel()
	b, alice, bob, _ := setupQuorum(t)
	for i := range raceIterations {
		approve, deny, c, a := raceVotes(t, b, alice, engine.ResolutionApproveOnce, bob, engine.ResolutionDeny)
		if deny.Result != ResolveApplied || (approve.Result != ResolveVoted && approve.Result != ResolveConflict) {
			t.Fatalf("iteration %d: approve %s, deny %s", i, approve.Result, deny.Result)
		}
		mustEqual(t, "status", a.Status, engine.ApprovalDenied)
		mustEqual(t, "resolved by", a.ResolvedBy, "bob")
		mustEqual(t, "invocation", b.invocation(c.run.ID, a.ToolInvocationID).Status, api.InvocationDenied)
		mustEqual(t, "approval.resolved events", b.countEvents(c.run.ID, api.EventApprovalResolved), 1)
	}
}

// TestRaceQuorumOneApproverTwice: one approver's identical votes at once
// count once (one voted, one same; still pending), and differing ones
// conflict (one changes something, the other nothing).
func TestRaceQuorumOneApproverTwice(t *testing.T) {
	t.Parallel()
	b, alice, bob, _ := setupQuorum(t)
	for i := range raceIterations {
		o1, o2, c, a := raceVotes(t, b, alice, engine.ResolutionApproveOnce, alice, engine.ResolutionApproveOnce)
		oneEach(t, i, o1, o2, ResolveVoted, ResolveSame)
		mustEqual(t, "status", a.Status, engine.ApprovalPending)
		mustEqual(t, "votes", len(a.Votes), 1)
		mustEqual(t, "approval.voted events", b.countEvents(c.run.ID, api.EventApprovalVoted), 1)
		mustEqual(t, "bob completes it", b.vote(bob, a.ID, engine.ResolutionApproveOnce).Result, ResolveApplied)

		approve, deny, c, a := raceVotes(t, b, alice, engine.ResolutionApproveOnce, alice, engine.ResolutionDeny)
		resolved := 0
		switch {
		case approve.Result == ResolveVoted && deny.Result == ResolveConflict:
			mustEqual(t, "status", a.Status, engine.ApprovalPending)
		case deny.Result == ResolveApplied && approve.Result == ResolveConflict:
			mustEqual(t, "status", a.Status, engine.ApprovalDenied)
			resolved = 1
		default:
			t.Fatalf("iteration %d: alice's approve %s and deny %s", i, approve.Result, deny.Result)
		}
		mustEqual(t, "votes", len(a.Votes), 1)
		mustEqual(t, "approval.resolved events", b.countEvents(c.run.ID, api.EventApprovalResolved), resolved)
	}
}

package service

import (
	"testing"
	"time"

	"gatehouse/engine"
)

// A resolution bound to the arguments the reviewer saw applies only while
// they are still the approval's: another hash changes nothing and says so.
func TestResolveApprovalSeenIsBoundToTheArgumentsHash(t *testing.T) {
	t.Parallel()
	b := setup(t)
	res := b.parked(b.started(), action("email.send", map[string]any{"to": "a@example.com", "body": "hi", "subject": "s"}))
	a := b.approval(res.ApprovalID)
	if len(a.ArgumentsHash) != 64 || a.AgentID != "agent" {
		t.Fatalf("approval carries hash %q and agent %q", a.ArgumentsHash, a.AgentID)
	}

	stale, err := b.svc.ResolveApprovalSeen(b.ctx, b.human, a.ID, "0000"+a.ArgumentsHash[4:], engine.ResolutionApproveOnce, "")
	if err != nil {
		t.Fatal(err)
	}
	mustEqual(t, "result", stale.Result, ResolveStale)
	mustEqual(t, "status", b.approval(a.ID).Status, engine.ApprovalPending)
	mustEqual(t, "events", b.countEvents(a.RunID, "approval.resolved"), 0)

	_, err = b.svc.ResolveApprovalSeen(b.ctx, b.human, a.ID, "", engine.ResolutionApproveOnce, "")
	wantErr(t, err, ErrInvalid)

	done, err := b.svc.ResolveApprovalSeen(b.ctx, b.human, a.ID, a.ArgumentsHash, engine.ResolutionDeny, "wrong recipient")
	if err != nil {
		t.Fatal(err)
	}
	mustEqual(t, "result", done.Result, ResolveApplied)
	again, err := b.svc.ResolveApprovalSeen(b.ctx, b.human, a.ID, a.ArgumentsHash, engine.ResolutionApproveOnce, "")
	if err != nil {
		t.Fatal(err)
	}
	mustEqual(t, "second result", again.Result, ResolveConflict)
}

// History filters by tool, agent and text; the text search ignores case.
func TestHistoryFiltersByToolAgentAndText(t *testing.T) {
	t.Parallel()
	b := setup(t)
	mail := action("email.send", map[string]any{"to": "a@example.com", "body": "hi", "subject": "s"})
	mail.Summary = "Send the Quarterly report"
	post := action("http.post", map[string]any{"url": "https://example.com/", "body": "x"})
	for _, req := range []struct {
		r   engine.ActionRequest
		res engine.ApprovalResolutionType
	}{{mail, engine.ResolutionDeny}, {post, engine.ResolutionApproveOnce}} {
		b.resolve(b.parked(b.started(), req.r).ApprovalID, req.res)
	}
	count := func(f ApprovalFilter) int {
		t.Helper()
		f.Status = StatusResolved
		page, err := b.svc.ListApprovals(b.ctx, b.human, f)
		if err != nil {
			t.Fatal(err)
		}
		return len(page.Items)
	}
	mustEqual(t, "all", count(ApprovalFilter{}), 2)
	mustEqual(t, "tool", count(ApprovalFilter{Tool: "http.post"}), 1)
	mustEqual(t, "text", count(ApprovalFilter{Text: "quarterly"}), 1)
	mustEqual(t, "text in tool name", count(ApprovalFilter{Text: "EMAIL"}), 1)
	mustEqual(t, "no text match", count(ApprovalFilter{Text: "invoice"}), 0)
	mustEqual(t, "agent", count(ApprovalFilter{AgentID: "agent"}), 2)
	mustEqual(t, "other agent", count(ApprovalFilter{AgentID: "someone-else"}), 0)
}

// The expiring-soon group holds the pending approvals due within the
// window, soonest first, and nothing later.
func TestExpiringSoonListsApprovalsDueWithinTheWindow(t *testing.T) {
	t.Parallel()
	b := setup(t)
	deadline := b.clock.Now().Add(10 * time.Minute)
	soon := b.parked(b.claim(b.submit(b.owner, &deadline).ID), action("email.send", map[string]any{"to": "a@example.com", "body": "hi", "subject": "s"}))
	b.parked(b.started(), action("email.send", map[string]any{"to": "b@example.com", "body": "hi", "subject": "s"}))
	got, err := b.svc.ExpiringSoon(b.ctx, b.human, 15*time.Minute, 10)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got[0].ID != soon.ApprovalID {
		t.Fatalf("expiring soon = %v, want only %s", got, soon.ApprovalID)
	}
}

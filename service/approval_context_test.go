package service

import (
	"testing"
	"time"

	"gatehouse/engine"
)

// TestApprovalContext: the detail page's context of an approval is its
// run's agent and step, the steps and the denials of the same call before
// it in the run, and the identical requests pending from the tenant's
// other runs; never another tenant's, never a resolved one, never a
// different call.
func TestApprovalContext(t *testing.T) {
	t.Parallel()
	b := setup(t)
	other := setup(t, func(o *setupOpts) { o.pool = b.pool })
	args := map[string]any{"url": "https://api.example.com/hook", "body": "ship it"}
	call := func(step int32) engine.ActionRequest {
		req := action("http.post", args)
		req.StepNumber = step
		return req
	}

	// The run: the call is denied by a human, the run goes on, writes a
	// file, and proposes the same call again.
	c := b.started()
	first := b.parked(c, call(1))
	b.clock.Advance(time.Second)
	b.resolve(first.ApprovalID, engine.ResolutionDeny)
	c = b.claim(c.run.ID)
	write := action("workspace.write_text", map[string]any{"path": "notes.md", "text": "x"})
	write.StepNumber = 2
	b.propose(c, write)
	b.clock.Advance(time.Second)
	again := b.parked(c, call(3))

	// The same call pending in another run of the tenant, in another
	// tenant, resolved in a third run, and a different call pending.
	twin := b.parked(b.started(), call(1))
	other.parked(other.started(), call(1))
	resolved := b.parked(b.started(), call(1))
	b.resolve(resolved.ApprovalID, engine.ResolutionApproveOnce)
	b.parked(b.started(), action("http.post", map[string]any{"url": "https://api.example.com/hook", "body": "other"}))

	got, err := b.svc.GetApprovalContext(b.ctx, b.owner, again.ApprovalID)
	if err != nil {
		t.Fatal(err)
	}
	mustEqual(t, "agent", got.AgentID+"@"+got.AgentVersion, "agent@1.0")
	mustEqual(t, "principal", got.PrincipalID, b.owner.ID)
	mustEqual(t, "step", got.StepNumber, 3)
	mustEqual(t, "run shown", got.RunShown, true)
	mustEqual(t, "steps before", len(got.StepsBefore), 2)
	mustEqual(t, "first step", got.StepsBefore[0].ToolName+" "+got.StepsBefore[0].Status+" "+got.StepsBefore[0].ReasonCode,
		"http.post DENIED approval.denied")
	mustEqual(t, "second step", got.StepsBefore[1].ToolName+" "+string(got.StepsBefore[1].Decision.Decision), "workspace.write_text allow")
	mustEqual(t, "denials before", len(got.DenialsBefore), 1)
	mustEqual(t, "denial", got.DenialsBefore[0].ApprovalID, first.ApprovalID)
	mustEqual(t, "identical pending", len(got.IdenticalPending), 1)
	mustEqual(t, "identical", got.IdenticalPending[0].ID, twin.ApprovalID)
	mustEqual(t, "more identical", got.MoreIdentical, false)

	// The twin sees this approval as its identical request, and nothing
	// of the run it is not in.
	tw, err := b.svc.GetApprovalContext(b.ctx, b.owner, twin.ApprovalID)
	if err != nil {
		t.Fatal(err)
	}
	mustEqual(t, "twin identical", len(tw.IdenticalPending), 1)
	mustEqual(t, "twin identical id", tw.IdenticalPending[0].ID, again.ApprovalID)
	mustEqual(t, "twin steps", len(tw.StepsBefore), 0)

	// A reviewer without run.read gets who asks and the identical
	// requests, not the run's steps.
	h, err := b.svc.GetApprovalContext(b.ctx, b.human, again.ApprovalID)
	if err != nil {
		t.Fatal(err)
	}
	mustEqual(t, "run shown without run.read", h.RunShown, false)
	mustEqual(t, "steps without run.read", len(h.StepsBefore)+len(h.DenialsBefore), 0)
	mustEqual(t, "identical without run.read", len(h.IdenticalPending), 1)

	// Another tenant's reviewer cannot read it; a viewer without
	// approval.read cannot either.
	_, err = other.svc.GetApprovalContext(b.ctx, other.owner, again.ApprovalID)
	wantErr(t, err, ErrNotFound)
	_, err = b.svc.GetApprovalContext(b.ctx, engine.Principal{ID: "x", TenantID: b.tenant, Scopes: []string{"run.read"}}, again.ApprovalID)
	wantErr(t, err, ErrForbidden)
}

// TestApprovalContextCapsIdentical: past a page of identical requests the
// context says there are more rather than reading them all.
func TestApprovalContextCapsIdentical(t *testing.T) {
	t.Parallel()
	b := setup(t)
	req := func() engine.ActionRequest {
		return action("email.send", map[string]any{"to": "a@example.com", "subject": "s", "body": "b"})
	}
	for range contextIdenticalLimit + 1 {
		b.parked(b.started(), req())
	}
	last := b.parked(b.started(), req())
	got, err := b.svc.GetApprovalContext(b.ctx, b.owner, last.ApprovalID)
	if err != nil {
		t.Fatal(err)
	}
	mustEqual(t, "identical", len(got.IdenticalPending), contextIdenticalLimit)
	mustEqual(t, "more", got.MoreIdentical, true)
}

// TestApprovalKeepsTrustLabels: the approval stores the proposal's trust
// labels and the engine's explanation, so a card can mark what came from
// content that cannot authorize.
func TestApprovalKeepsTrustLabels(t *testing.T) {
	t.Parallel()
	b := setup(t)
	req := action("email.send", map[string]any{"to": "x@evil.example", "subject": "s", "body": "b"})
	req.OriginTrust = engine.TrustExternalUntrusted
	req.ArgumentTrust = map[string]engine.TrustLevel{"to": engine.TrustExternalUntrusted, "body": engine.TrustMemory}
	res := b.parked(b.started(), req)
	a := b.approval(res.ApprovalID)
	mustEqual(t, "origin", a.OriginTrust, engine.TrustExternalUntrusted)
	mustEqual(t, "to", a.ArgumentTrust["to"], engine.TrustExternalUntrusted)
	mustEqual(t, "body", a.ArgumentTrust["body"], engine.TrustMemory)
	mustEqual(t, "labels", len(a.ArgumentTrust), 2)
	if a.PolicyExplanation == "" {
		t.Fatal("the approval has no explanation")
	}

	// Without labels the approval has none, not a null.
	plain := b.parked(b.started(), action("email.send", map[string]any{"to": "a@example.com", "subject": "s", "body": "b"}))
	p := b.approval(plain.ApprovalID)
	mustEqual(t, "plain labels", len(p.ArgumentTrust), 0)
	mustEqual(t, "plain origin", p.OriginTrust, engine.TrustUser)
}

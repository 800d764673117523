package service

import (
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"gatehouse/api"
	"gatehouse/engine"
	"gatehouse/internal/pgdb"
	"gatehouse/rules"
)

func TestSubmitValidatesAndStamps(t *testing.T) {
	t.Parallel()
	b := setup(t)
	_, err := b.svc.SubmitRun(b.ctx, b.owner, api.SubmitRunInput{SessionID: uuid.NewString(), AgentID: "a", AgentVersion: "1", PolicyProfile: "nope"})
	wantErr(t, err, ErrInvalid)
	_, err = b.svc.SubmitRun(b.ctx, b.owner, api.SubmitRunInput{SessionID: "x", AgentID: "a", AgentVersion: "1"})
	wantErr(t, err, ErrInvalid)
	r := b.submit(b.owner, nil)
	mustEqual(t, "status", r.Status, api.RunQueued)
	mustEqual(t, "profile", r.PolicyProfile, "default")
	if !slices.Equal(r.PrincipalScopes, b.owner.Scopes) {
		t.Fatalf("stamp = %v", r.PrincipalScopes)
	}
	other := engine.Principal{ID: "owner", TenantID: "elsewhere", Scopes: allScopes}
	_, err = b.svc.GetRun(b.ctx, other, r.ID)
	wantErr(t, err, ErrNotFound)
}

func TestClaimLeaseFencing(t *testing.T) {
	t.Parallel()
	b := setup(t)
	r := b.submit(b.owner, nil)
	c := b.claim(r.ID)
	mustEqual(t, "token", c.lease.FencingToken, int64(1))
	if _, ok, err := b.svc.ClaimRun(b.ctx, b.owner, api.ClaimInput{WorkerID: "w2", LeaseSeconds: 60, RunID: r.ID}); ok || err != nil {
		t.Fatalf("second claim of a leased run: ok=%v err=%v", ok, err)
	}
	_, _, err := b.svc.ClaimRun(b.ctx, b.owner, api.ClaimInput{WorkerID: "w2", LeaseSeconds: 1})
	wantErr(t, err, ErrInvalid)
	if _, err := b.svc.Heartbeat(b.ctx, b.owner, r.ID, c.lease, 60); err != nil {
		t.Fatalf("heartbeat: %v", err)
	}
	_, err = b.svc.Heartbeat(b.ctx, b.owner, r.ID, api.Lease{WorkerID: c.lease.WorkerID, FencingToken: 7}, 60)
	wantErr(t, err, ErrStaleLease)

	// The lease expires; another worker reclaims with the next token and
	// the first worker's calls are stale.
	b.clock.Advance(61 * time.Second)
	r2, ok, err := b.svc.ClaimRun(b.ctx, b.owner, api.ClaimInput{WorkerID: "w2", LeaseSeconds: 60, RunID: r.ID})
	if err != nil || !ok {
		t.Fatalf("reclaim: ok=%v err=%v", ok, err)
	}
	mustEqual(t, "token", r2.FencingToken, int64(2))
	_, err = b.svc.Propose(b.ctx, b.owner, r.ID, c.lease, action("workspace.read_text", map[string]any{"path": "a.txt"}))
	wantErr(t, err, ErrStaleLease)
	_, err = b.svc.CompleteRun(b.ctx, b.owner, r.ID, c.lease, "completed")
	wantErr(t, err, ErrStaleLease)
	done, err := b.svc.CompleteRun(b.ctx, b.owner, r.ID, api.Lease{WorkerID: "w2", FencingToken: 2}, "completed")
	if err != nil {
		t.Fatal(err)
	}
	mustEqual(t, "status", done.Status, api.RunCompleted)
}

func TestProposeAllowDenyAndIdempotency(t *testing.T) {
	t.Parallel()
	b := setup(t)
	c := b.started()
	req := action("workspace.write_text", map[string]any{"path": "notes.txt", "text": "hi"})
	res := b.propose(c, req)
	mustEqual(t, "decision", res.Decision, engine.DecisionAllow)
	mustEqual(t, "status", b.invocation(c.run.ID, res.InvocationID).Status, api.InvocationAuthorized)

	again := b.propose(c, req)
	mustEqual(t, "repeat invocation", again.InvocationID, res.InvocationID)
	changed := req
	changed.Arguments = map[string]any{"path": "other.txt", "text": "hi"}
	_, err := b.svc.Propose(b.ctx, b.owner, c.run.ID, c.lease, changed)
	wantErr(t, err, ErrConflict)

	denied := b.propose(c, action("secrets.read", map[string]any{"name": "prod"}))
	mustEqual(t, "decision", denied.Decision, engine.DecisionDeny)
	if denied.Result == nil || denied.Result.ReasonCode != engine.MatrixReason(engine.SideEffectCredentialAccess) {
		t.Fatalf("denial result = %+v", denied.Result)
	}
	mustEqual(t, "status", b.invocation(c.run.ID, denied.InvocationID).Status, api.InvocationDenied)

	if inv, err := b.svc.RecordResult(b.ctx, b.owner, c.run.ID, res.InvocationID, c.lease, "succeeded"); err != nil || inv.Status != api.InvocationSucceeded {
		t.Fatalf("record result: %v %v", inv.Status, err)
	}
	_, err = b.svc.RecordResult(b.ctx, b.owner, c.run.ID, denied.InvocationID, c.lease, "succeeded")
	wantErr(t, err, ErrConflict)
}

func TestCircuitBreakerThirdIdenticalDenial(t *testing.T) {
	t.Parallel()
	b := setup(t)
	c := b.started()
	args := map[string]any{"name": "prod"}
	for i := 1; i <= 3; i++ {
		res := b.propose(c, action("secrets.read", args))
		want := api.RunRunning
		if i == 3 {
			want = api.RunFailed
		}
		mustEqual(t, "run status after denial", res.RunStatus, want)
		if i == 2 {
			// A corrected proposal changes the hash and does not count.
			b.propose(c, action("secrets.read", map[string]any{"name": "staging"}))
		}
	}
	r := b.run(c.run.ID)
	mustEqual(t, "failure", r.FailureReason, failureCircuitBreaker)
	mustEqual(t, "breaker events", b.countEvents(c.run.ID, api.EventCircuitBreakerTipped), 1)
}

func TestParkResolveResume(t *testing.T) {
	t.Parallel()
	b := setup(t)
	authorized := 0
	b.svc.onAuthorize = func(string) { authorized++ }
	c := b.started()
	req := action("email.send", map[string]any{"to": "a@example.com", "subject": "hi", "body": "hello"})
	res := b.parked(c, req)

	r := b.run(c.run.ID)
	mustEqual(t, "run", r.Status, api.RunWaitingForApproval)
	if r.LeaseExpiresAt != nil {
		t.Fatal("lease not released")
	}
	if !slices.Equal(r.Checkpoint.PendingApprovalIDs, []string{res.ApprovalID}) {
		t.Fatalf("checkpoint = %+v", r.Checkpoint)
	}
	a := b.approval(res.ApprovalID)
	mustEqual(t, "approval", a.Status, engine.ApprovalPending)
	mustEqual(t, "expiry (high: 4h)", a.ExpiresAt.Sub(a.CreatedAt), 4*time.Hour)
	mustEqual(t, "requested events", b.countEvents(c.run.ID, api.EventApprovalRequested), 1)

	// A retry of the same proposal after the park answers from the record.
	again := b.propose(c, req)
	mustEqual(t, "retry approval", again.ApprovalID, res.ApprovalID)

	_, err := b.svc.Resume(b.ctx, b.owner, c.run.ID, res.InvocationID, c.lease, api.ResumeInput{Arguments: req.Arguments, AgentVersion: "1.0"})
	wantErr(t, err, ErrStaleLease)

	out := b.resolve(res.ApprovalID, engine.ResolutionApproveOnce)
	mustEqual(t, "result", out.Result, ResolveApplied)
	r = b.run(c.run.ID)
	mustEqual(t, "run after resolve", r.Status, api.RunQueued)
	if !slices.Equal(r.Checkpoint.ResumableInvocationIDs, []string{res.InvocationID}) || len(r.Checkpoint.PendingApprovalIDs) != 0 {
		t.Fatalf("checkpoint = %+v", r.Checkpoint)
	}

	c2 := b.claim(c.run.ID)
	in := api.ResumeInput{Arguments: req.Arguments, AgentVersion: "1.0"}
	rr, err := b.svc.Resume(b.ctx, b.owner, c.run.ID, res.InvocationID, c2.lease, in)
	if err != nil || !rr.Authorized {
		t.Fatalf("resume: %+v %v", rr, err)
	}
	mustEqual(t, "invocation status", rr.InvocationStatus, api.InvocationAuthorized)
	mustEqual(t, "idempotency", rr.IdempotencyClass, engine.IdempotencyNonIdempotent)
	// The same lease asking again before any result is an idempotent
	// replay of the same call: authorized, and nothing written.
	rr, err = b.svc.Resume(b.ctx, b.owner, c.run.ID, res.InvocationID, c2.lease, in)
	if err != nil || !rr.Authorized {
		t.Fatalf("second resume: %+v %v", rr, err)
	}
	mustEqual(t, "authorizations", authorized, 1)
	mustEqual(t, "invocation", b.invocation(c.run.ID, res.InvocationID).Status, api.InvocationAuthorized)
	mustEqual(t, "revalidated version", b.approval(res.ApprovalID).RevalidatedPolicyVersion, a.PolicyVersion)

	// Once the result is recorded the approval is spent: no lease hears
	// "authorized" again.
	if _, err := b.svc.RecordResult(b.ctx, b.owner, c.run.ID, res.InvocationID, c2.lease, "succeeded"); err != nil {
		t.Fatalf("record result: %v", err)
	}
	rr, err = b.svc.Resume(b.ctx, b.owner, c.run.ID, res.InvocationID, c2.lease, in)
	if err != nil || rr.Authorized || rr.Result != nil || rr.InvocationStatus != api.InvocationSucceeded {
		t.Fatalf("resume after result: %+v %v", rr, err)
	}
	mustEqual(t, "authorizations", authorized, 1)
}

// One approval authorizes exactly one execution: a resume that re-presents
// other arguments or another agent version, or comes from a reclaimed run's
// new worker, is never authorized again, and a reclaimed run's replayed
// proposal of an allowed action is refused.
func TestResumeAuthorizesOneExecution(t *testing.T) {
	t.Parallel()
	b := setup(t)
	authorized := 0
	b.svc.onAuthorize = func(string) { authorized++ }
	c := b.started()
	req := action("http.post", map[string]any{"url": "https://example.com/hook", "body": "pay 10"})
	res := b.parked(c, req)
	b.resolve(res.ApprovalID, engine.ResolutionApproveOnce)
	c2 := b.claim(c.run.ID)
	in := api.ResumeInput{Arguments: req.Arguments, AgentVersion: "1.0"}
	if rr, err := b.svc.Resume(b.ctx, b.owner, c.run.ID, res.InvocationID, c2.lease, in); err != nil || !rr.Authorized {
		t.Fatalf("resume: %+v %v", rr, err)
	}

	for name, changed := range map[string]api.ResumeInput{
		"arguments":     {Arguments: map[string]any{"url": "https://example.com/hook", "body": "pay 10000"}, AgentVersion: "1.0"},
		"agent version": {Arguments: req.Arguments, AgentVersion: "2.0"},
	} {
		rr, err := b.svc.Resume(b.ctx, b.owner, c.run.ID, res.InvocationID, c2.lease, changed)
		if err != nil || rr.Authorized || rr.Result == nil || rr.Result.ReasonCode != engine.ReasonApprovalInvalidated {
			t.Fatalf("resume with changed %s: %+v %v", name, rr, err)
		}
		mustEqual(t, "status after changed "+name, rr.InvocationStatus, api.InvocationAuthorized)
	}
	// The approval was consumed by the first resume: nothing is voided.
	mustEqual(t, "invalidated events", b.countEvents(c.run.ID, api.EventApprovalInvalidated), 0)

	// A reclaim while AUTHORIZED (the worker crashed mid-call): the new
	// lease is told the status and class, not "authorized".
	b.clock.Advance(61 * time.Second)
	c3 := b.claim(c.run.ID)
	rr, err := b.svc.Resume(b.ctx, b.owner, c.run.ID, res.InvocationID, c3.lease, in)
	if err != nil || rr.Authorized || rr.Result != nil {
		t.Fatalf("resume by a new lease: %+v %v", rr, err)
	}
	mustEqual(t, "status", rr.InvocationStatus, api.InvocationAuthorized)
	mustEqual(t, "idempotency", rr.IdempotencyClass, engine.IdempotencyNonIdempotent)

	// The new worker records the crash-recovery outcome; after SUCCEEDED a
	// further reclaim is still not authorized.
	if _, err := b.svc.RecordResult(b.ctx, b.owner, c.run.ID, res.InvocationID, c3.lease, "succeeded"); err != nil {
		t.Fatalf("record result: %v", err)
	}
	b.clock.Advance(61 * time.Second)
	c4 := b.claim(c.run.ID)
	rr, err = b.svc.Resume(b.ctx, b.owner, c.run.ID, res.InvocationID, c4.lease, in)
	if err != nil || rr.Authorized || rr.InvocationStatus != api.InvocationSucceeded {
		t.Fatalf("resume after succeeded by a new lease: %+v %v", rr, err)
	}
	mustEqual(t, "authorizations", authorized, 1)

	// The same for an allowed proposal replayed by a reclaimed run.
	write := action("workspace.write_text", map[string]any{"path": "a.txt", "text": "x"})
	if got := b.propose(c4, write); got.Decision != engine.DecisionAllow {
		t.Fatalf("propose: %+v", got)
	}
	mustEqual(t, "replay by the same lease", b.propose(c4, write).Decision, engine.DecisionAllow)
	b.clock.Advance(61 * time.Second)
	c5 := b.claim(c.run.ID)
	_, err = b.svc.Propose(b.ctx, b.owner, c.run.ID, c5.lease, write)
	wantErr(t, err, ErrConflict)
	mustEqual(t, "authorizations", authorized, 2)
}

// An approval resolved after its expiry, before the reaper ran, is expired
// on the spot as the reaper would expire it, and never authorizes.
func TestResolveAfterExpiryExpires(t *testing.T) {
	t.Parallel()
	b := setup(t)
	authorized := 0
	b.svc.onAuthorize = func(string) { authorized++ }
	c := b.started()
	res := b.parked(c, action("payments.charge", map[string]any{"customer": "c1", "amount_cents": 500, "currency": "EUR"}))
	a := b.approval(res.ApprovalID)
	mustEqual(t, "expiry (critical: 1h)", a.ExpiresAt.Sub(a.CreatedAt), time.Hour)
	b.clock.Advance(3 * time.Hour)

	for _, r := range []engine.ApprovalResolutionType{engine.ResolutionApproveOnce, engine.ResolutionApproveOnce, engine.ResolutionDeny} {
		out := b.resolve(res.ApprovalID, r)
		mustEqual(t, "result", out.Result, ResolveConflict)
		mustEqual(t, "stored status", out.Approval.Status, engine.ApprovalExpired)
		if out.Approval.ResolvedBy != "" {
			t.Fatalf("expired approval names a resolver: %q", out.Approval.ResolvedBy)
		}
	}
	mustEqual(t, "invocation", b.invocation(c.run.ID, res.InvocationID).Status, api.InvocationDenied)
	r := b.run(c.run.ID)
	mustEqual(t, "run", r.Status, api.RunFailed)
	mustEqual(t, "failure", r.FailureReason, engine.ReasonApprovalExpired)
	mustEqual(t, "approval.resolved events", b.countEvents(c.run.ID, api.EventApprovalResolved), 1)
	var resolution string
	if err := b.pool.QueryRow(b.ctx, `SELECT payload->>'resolution' FROM events WHERE run_id = $1 AND type = $2`,
		c.run.ID, api.EventApprovalResolved).Scan(&resolution); err != nil {
		t.Fatal(err)
	}
	mustEqual(t, "resolution", resolution, "expired")
	mustEqual(t, "authorizations", authorized, 0)
}

// Should an approval ever be approved at or past its expiry (a row written
// around the service), resume still refuses it and fails the run.
func TestResumeRefusesApprovalResolvedPastExpiry(t *testing.T) {
	t.Parallel()
	b := setup(t)
	c := b.started()
	req := action("payments.charge", map[string]any{"customer": "c1", "amount_cents": 500, "currency": "EUR"})
	res := b.parked(c, req)
	if _, err := b.pool.Exec(b.ctx, `UPDATE approvals SET status = 'approved', resolution = 'approve_once',
	        resolved_by = 'human', resolved_at = expires_at + interval '1 minute' WHERE id = $1`, res.ApprovalID); err != nil {
		t.Fatal(err)
	}
	if _, err := b.pool.Exec(b.ctx, `UPDATE runs SET status = 'QUEUED' WHERE id = $1`, c.run.ID); err != nil {
		t.Fatal(err)
	}
	c2 := b.claim(c.run.ID)
	rr, err := b.svc.Resume(b.ctx, b.owner, c.run.ID, res.InvocationID, c2.lease, api.ResumeInput{Arguments: req.Arguments, AgentVersion: "1.0"})
	if err != nil || rr.Authorized || rr.Result == nil || rr.Result.ReasonCode != engine.ReasonApprovalExpired {
		t.Fatalf("resume: %+v %v", rr, err)
	}
	mustEqual(t, "run", rr.RunStatus, api.RunFailed)
	mustEqual(t, "invocation", rr.InvocationStatus, api.InvocationDenied)
}

func TestDenyResolutionDeniesInvocation(t *testing.T) {
	t.Parallel()
	b := setup(t)
	c := b.started()
	res := b.parked(c, action("files.delete", map[string]any{"file_id": "f1", "name": "report"}))
	b.resolve(res.ApprovalID, engine.ResolutionDeny)
	mustEqual(t, "invocation", b.invocation(c.run.ID, res.InvocationID).Status, api.InvocationDenied)
	c2 := b.claim(c.run.ID)
	rr, err := b.svc.Resume(b.ctx, b.owner, c.run.ID, res.InvocationID, c2.lease, api.ResumeInput{AgentVersion: "1.0"})
	if err != nil || rr.Authorized || rr.Result == nil || rr.Result.ReasonCode != engine.ReasonApprovalDenied {
		t.Fatalf("resume after deny: %+v %v", rr, err)
	}
}

func TestResolveRules(t *testing.T) {
	t.Parallel()
	b := setup(t, withDistinctResolver)
	c := b.started()
	res := b.parked(c, action("blog.publish", map[string]any{"title": "t", "body": "b"}))
	_, err := b.svc.ResolveApproval(b.ctx, b.owner, res.ApprovalID, engine.ResolutionApproveOnce, "")
	wantErr(t, err, ErrForbidden)
	_, err = b.svc.ResolveApproval(b.ctx, b.human, res.ApprovalID, engine.ResolutionApproveForTask, "")
	wantErr(t, err, ErrInvalid)
	_, err = b.svc.ResolveApproval(b.ctx, b.human, "not-a-uuid", engine.ResolutionDeny, "")
	wantErr(t, err, ErrNotFound)
	mustEqual(t, "applied", b.resolve(res.ApprovalID, engine.ResolutionApproveOnce).Result, ResolveApplied)
}

func TestCancelParkedRunCancelsNotDenies(t *testing.T) {
	t.Parallel()
	b := setup(t)
	c := b.started()
	res := b.parked(c, action("http.post", map[string]any{"url": "https://example.com", "body": "x"}))
	r, err := b.svc.CancelRun(b.ctx, b.owner, c.run.ID)
	if err != nil {
		t.Fatal(err)
	}
	mustEqual(t, "run", r.Status, api.RunCancelled)
	mustEqual(t, "approval", b.approval(res.ApprovalID).Status, engine.ApprovalCancelled)
	mustEqual(t, "invocation", b.invocation(c.run.ID, res.InvocationID).Status, api.InvocationCancelled)
	mustEqual(t, "pending in the returned checkpoint", len(r.Checkpoint.PendingApprovalIDs), 0)
	mustEqual(t, "pending in the stored checkpoint", len(b.run(c.run.ID).Checkpoint.PendingApprovalIDs), 0)
	_, err = b.svc.CancelRun(b.ctx, b.owner, c.run.ID)
	wantErr(t, err, ErrConflict)
	out := b.resolve(res.ApprovalID, engine.ResolutionApproveOnce)
	mustEqual(t, "resolve after cancel", out.Result, ResolveConflict)
}

func TestCancelRunningRunFencesLease(t *testing.T) {
	t.Parallel()
	b := setup(t)
	c := b.started()
	r, err := b.svc.CancelRun(b.ctx, b.owner, c.run.ID)
	if err != nil {
		t.Fatal(err)
	}
	mustEqual(t, "token", r.FencingToken, c.lease.FencingToken+1)
	_, err = b.svc.Propose(b.ctx, b.owner, c.run.ID, c.lease, action("workspace.read_text", map[string]any{"path": "a"}))
	wantErr(t, err, ErrStaleLease)
}

func TestExpiryCappedByDeadline(t *testing.T) {
	t.Parallel()
	b := setup(t)
	deadline := b.clock.Now().Add(30 * time.Minute)
	c := b.claim(b.submit(b.owner, &deadline).ID)
	res := b.parked(c, action("payments.charge", map[string]any{"customer": "c1", "amount_cents": 100, "currency": "EUR"}))
	a := b.approval(res.ApprovalID)
	if !a.ExpiresAt.Equal(deadline) {
		t.Fatalf("expires_at = %v, want the deadline %v", a.ExpiresAt, deadline)
	}
}

func TestListApprovalsKeysetOrder(t *testing.T) {
	t.Parallel()
	b := setup(t)
	// Six parked runs: risks high, critical, medium-ish, in creation order.
	tools := []struct {
		name string
		args map[string]any
	}{
		{"email.send", map[string]any{"to": "a"}},
		{"payments.charge", map[string]any{"customer": "c"}},
		{"http.post", map[string]any{"url": "u"}},
		{"payments.charge", map[string]any{"customer": "d"}},
		{"artifact.export", map[string]any{"artifact_id": "x"}},
		{"blog.publish", map[string]any{"title": "t"}},
	}
	for _, tl := range tools {
		c := b.started()
		req := action(tl.name, tl.args)
		if tl.name == "artifact.export" {
			req.Kind = engine.ActionArtifactExport
		}
		b.parked(c, req)
		b.clock.Advance(time.Second)
	}
	var got []api.Approval
	cursor := ""
	for {
		page, err := b.svc.ListApprovals(b.ctx, b.human, ApprovalFilter{Limit: 2, Cursor: cursor})
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, page.Items...)
		if page.NextCursor == "" {
			break
		}
		cursor = page.NextCursor
	}
	mustEqual(t, "count", len(got), len(tools))
	for i := 1; i < len(got); i++ {
		prev, cur := got[i-1], got[i]
		if prev.Risk.Rank() < cur.Risk.Rank() ||
			(prev.Risk == cur.Risk && prev.CreatedAt.After(cur.CreatedAt)) {
			t.Fatalf("queue order broken at %d: %s@%v before %s@%v", i, prev.Risk, prev.CreatedAt, cur.Risk, cur.CreatedAt)
		}
	}
	mustEqual(t, "first", got[0].Risk, engine.RiskCritical)
	mustEqual(t, "last", got[len(got)-1].Risk, engine.RiskMedium)
	_, err := b.svc.ListApprovals(b.ctx, b.human, ApprovalFilter{Cursor: "garbage"})
	wantErr(t, err, ErrInvalid)

	// History: newest resolution first.
	for _, a := range got[:3] {
		b.resolve(a.ID, engine.ResolutionDeny)
		b.clock.Advance(time.Second)
	}
	page, err := b.svc.ListApprovals(b.ctx, b.human, ApprovalFilter{Status: "resolved", Limit: 2})
	if err != nil {
		t.Fatal(err)
	}
	mustEqual(t, "history first", page.Items[0].ID, got[2].ID)
	page, err = b.svc.ListApprovals(b.ctx, b.human, ApprovalFilter{Status: "resolved", Limit: 2, Cursor: page.NextCursor})
	if err != nil {
		t.Fatal(err)
	}
	mustEqual(t, "history last", page.Items[0].ID, got[0].ID)
	mustEqual(t, "history end", page.NextCursor, "")
}

func TestListEventsWatermarkAndLongPoll(t *testing.T) {
	t.Parallel()
	b := setup(t)
	c := b.started()
	// An event becomes visible once every older transaction has ended, so
	// poll until both are there.
	var evs []api.Event
	for deadline := time.Now().Add(5 * time.Second); len(evs) < 2 && time.Now().Before(deadline); {
		var err error
		if evs, err = b.svc.ListEvents(b.ctx, b.owner, EventFilter{RunID: c.run.ID, Wait: time.Second}); err != nil {
			t.Fatal(err)
		}
	}
	if len(evs) != 2 || evs[0].Type != api.EventRunSubmitted || evs[1].Type != api.EventRunClaimed {
		t.Fatalf("events = %+v; want submitted and claimed", evs)
	}
	last := evs[len(evs)-1].Cursor
	done := make(chan []api.Event)
	go func() {
		evs, _ := b.svc.ListEvents(b.ctx, b.owner, EventFilter{After: last, Wait: 5 * time.Second})
		done <- evs
	}()
	time.Sleep(100 * time.Millisecond)
	b.parked(c, action("email.send", map[string]any{"to": "x"}))
	got := <-done
	if len(got) == 0 || got[0].Type != api.EventApprovalRequested {
		t.Fatalf("long poll got %+v", got)
	}
	other := engine.Principal{ID: "x", TenantID: "another-tenant"}
	evs, err := b.svc.ListEvents(b.ctx, other, EventFilter{RunID: c.run.ID})
	if err != nil || len(evs) != 0 {
		t.Fatalf("another tenant sees %d events (%v)", len(evs), err)
	}
}

func TestOverview(t *testing.T) {
	t.Parallel()
	b := setup(t)
	c := b.started()
	res := b.parked(c, action("payments.charge", map[string]any{"customer": "c"}))
	c2 := b.started()
	b.parked(c2, action("email.send", map[string]any{"to": "x"}))
	b.clock.Advance(10 * time.Second)
	b.resolve(res.ApprovalID, engine.ResolutionApproveOnce)
	o, err := b.svc.Overview(b.ctx, b.human)
	if err != nil {
		t.Fatal(err)
	}
	mustEqual(t, "pending high", o.PendingByRisk[engine.RiskHigh], 1)
	mustEqual(t, "resolved", o.ResolvedLastDay, 1)
	mustEqual(t, "p50", o.LatencyP50, 10*time.Second)
	mustEqual(t, "approvals this hour", o.ApprovalsByHour[23], 1)
}

// Arguments too deep to normalize exactly are denied unclassifiable (never
// hashed to a digest another argument set shares), and a retry of the same
// action answers from the record.
func TestProposeDeepArgumentsUnclassifiable(t *testing.T) {
	t.Parallel()
	b := setup(t)
	c := b.started()
	deep := map[string]any{"leaf": "x"}
	for range 70 {
		deep = map[string]any{"k": deep}
	}
	req := action("workspace.write_text", map[string]any{"path": "a.txt", "text": deep})
	res := b.propose(c, req)
	if res.Decision != engine.DecisionDeny || res.Result == nil || res.Result.ReasonCode != engine.ReasonUnclassifiable {
		t.Fatalf("deep arguments: %+v", res)
	}
	mustEqual(t, "retry", b.propose(c, req).InvocationID, res.InvocationID)
}

// The operator's default profile binds a run: naming another loaded
// profile is refused unless the principal's entry lists it; naming the
// default, or none, is always fine; the dev principal may name any.
func TestSubmitBindsTheOperatorsProfile(t *testing.T) {
	t.Parallel()
	b := setup(t)
	set, err := rules.NewSet(map[string]*engine.LoadedRuleset{
		"default": b.policy.DefaultRuleset(),
		"strict":  testRuleset(t, "strict", "v1", nil, true),
	}, "strict", b.policy.Catalog())
	if err != nil {
		t.Fatal(err)
	}
	svc := b.newService(set)
	submit := func(p engine.Principal, profile string) (api.Run, error) {
		return svc.SubmitRun(b.ctx, p, api.SubmitRunInput{SessionID: uuid.NewString(), AgentID: "a", AgentVersion: "1", PolicyProfile: profile})
	}
	_, err = submit(b.owner, "default")
	var pnp *ProfileNotPermittedError
	if !errors.As(err, &pnp) || pnp.Profile != "default" || !errors.Is(err, ErrForbidden) {
		t.Fatalf("unlisted profile: err = %v, want a ProfileNotPermittedError naming default", err)
	}
	for _, profile := range []string{"", "strict"} {
		r, err := submit(b.owner, profile)
		if err != nil || r.PolicyProfile != "strict" {
			t.Fatalf("profile %q: %+v %v, want a run under strict", profile, r, err)
		}
	}
	listed := b.owner
	listed.PolicyProfiles = []string{"default"}
	if r, err := submit(listed, "default"); err != nil || r.PolicyProfile != "default" {
		t.Fatalf("listed profile: %+v %v", r, err)
	}
	dev := b.owner
	dev.AnyPolicyProfile = true
	if r, err := submit(dev, "default"); err != nil || r.PolicyProfile != "default" {
		t.Fatalf("dev principal: %+v %v", r, err)
	}
	_, err = submit(listed, "nope")
	wantErr(t, err, ErrInvalid)
}

// A process that has not loaded a run's profile cannot check its resolver
// rule: it refuses to approve (the owner could otherwise self-approve past a
// distinct-resolver profile) but still accepts a deny.
func TestResolveUnknownProfileRefusesApproval(t *testing.T) {
	t.Parallel()
	b := setup(t)
	withStrict := testSet(t, map[string]*engine.LoadedRuleset{
		"default": b.policy.DefaultRuleset(),
		"strict":  testRuleset(t, "strict", "v1", nil, true),
	}, b.policy.Catalog())
	strict := b.newService(withStrict)
	owner := b.owner
	owner.PolicyProfiles = []string{"strict"}
	r, err := strict.SubmitRun(b.ctx, owner, api.SubmitRunInput{SessionID: uuid.NewString(), AgentID: "a", AgentVersion: "1.0", PolicyProfile: "strict"})
	if err != nil {
		t.Fatal(err)
	}
	c := b.claim(r.ID)
	res, err := strict.Propose(b.ctx, b.owner, r.ID, c.lease, action("blog.publish", map[string]any{"title": "t", "body": "b"}))
	if err != nil || res.ApprovalID == "" {
		t.Fatalf("park: %+v %v", res, err)
	}
	// b.svc knows only "default".
	_, err = b.svc.ResolveApproval(b.ctx, b.owner, res.ApprovalID, engine.ResolutionApproveOnce, "")
	wantErr(t, err, ErrConflict)
	_, err = b.svc.ResolveApproval(b.ctx, b.human, res.ApprovalID, engine.ResolutionApproveOnce, "")
	wantErr(t, err, ErrConflict)
	mustEqual(t, "still pending", b.approval(res.ApprovalID).Status, engine.ApprovalPending)
	mustEqual(t, "deny", b.resolve(res.ApprovalID, engine.ResolutionDeny).Result, ResolveApplied)
}

// The service checks the scopes the routes require, so a surface that
// forgets (a CLI, a console page) cannot skip them; the refusal comes
// before any lookup and says nothing about the row.
func TestServiceRequiresRouteScopes(t *testing.T) {
	t.Parallel()
	b := setup(t)
	c := b.started()
	res := b.parked(c, action("blog.publish", map[string]any{"title": "t", "body": "b"}))
	worker := engine.Principal{ID: "worker", TenantID: b.tenant, Scopes: []string{"run.read", "run.write"}}
	for _, id := range []string{res.ApprovalID, uuid.NewString()} {
		_, err := b.svc.GetApproval(b.ctx, worker, id)
		wantErr(t, err, ErrForbidden)
		_, err = b.svc.ResolveApproval(b.ctx, worker, id, engine.ResolutionApproveOnce, "")
		wantErr(t, err, ErrForbidden)
	}
	_, err := b.svc.ListApprovals(b.ctx, worker, ApprovalFilter{})
	wantErr(t, err, ErrForbidden)
	_, err = b.svc.CancelRun(b.ctx, worker, c.run.ID)
	wantErr(t, err, ErrForbidden)
	readOnly := engine.Principal{ID: "reader", TenantID: b.tenant, Scopes: []string{"approval.read"}}
	if _, err := b.svc.GetApproval(b.ctx, readOnly, res.ApprovalID); err != nil {
		t.Fatalf("read with approval.read: %v", err)
	}
	_, err = b.svc.ResolveApproval(b.ctx, readOnly, res.ApprovalID, engine.ResolutionDeny, "")
	wantErr(t, err, ErrForbidden)
	mustEqual(t, "still pending", b.approval(res.ApprovalID).Status, engine.ApprovalPending)
}

// An action that would need approval after the run's deadline is denied
// with its action.denied event, and the run fails deadline_exceeded.
func TestProposePastDeadlineDenies(t *testing.T) {
	t.Parallel()
	b := setup(t)
	deadline := b.clock.Now().Add(30 * time.Second)
	c := b.claim(b.submit(b.owner, &deadline).ID)
	b.clock.Advance(31 * time.Second)
	res := b.propose(c, action("email.send", map[string]any{"to": "a@example.com"}))
	if res.Decision != engine.DecisionDeny || res.Result == nil || res.Result.ReasonCode != engine.ReasonApprovalExpired {
		t.Fatalf("propose past deadline: %+v", res)
	}
	mustEqual(t, "run", res.RunStatus, api.RunFailed)
	mustEqual(t, "failure", b.run(c.run.ID).FailureReason, failureDeadlineExceeded)
	mustEqual(t, "action.denied events", b.countEvents(c.run.ID, api.EventActionDenied), 1)
}

// allow_with_modifications persists both hashes and the effective
// arguments on the invocation, and a repeated proposal answers with the
// stored effective arguments, numbers intact (2^53+1 survives no float64).
func TestAllowWithModificationsPersistsAndReplays(t *testing.T) {
	t.Parallel()
	b := setup(t)
	big := json.Number("9007199254740993")
	rs, err := engine.NewLoadedRuleset(engine.Profile{
		Name:  "modify",
		Rules: profileRows(nil),
		ToolRules: []engine.ProfileRule{{
			Tool: "workspace.write_text", Decision: engine.DecisionAllowWithModifications,
			Modifications: &engine.ArgumentModification{Set: map[string]any{"max_bytes": big, "dry_run": true}},
		}},
	}, []byte("modify-v1"), nil, []byte("hardline-test"))
	if err != nil {
		t.Fatal(err)
	}
	b.svc = b.newService(testSet(t, map[string]*engine.LoadedRuleset{"default": rs}, b.policy.Catalog()))
	c := b.started()
	req := action("workspace.write_text", map[string]any{"path": "a.txt", "text": "x"})
	first := b.propose(c, req)
	mustEqual(t, "decision", first.Decision, engine.DecisionAllowWithModifications)
	again := b.propose(c, req)
	for name, res := range map[string]api.ProposeResult{"first": first, "replay": again} {
		if res.EffectiveArguments["max_bytes"] != big || res.EffectiveArguments["dry_run"] != true || res.EffectiveArguments["path"] != "a.txt" {
			t.Fatalf("%s effective arguments: %#v", name, res.EffectiveArguments)
		}
	}

	inv := b.invocation(c.run.ID, first.InvocationID)
	_, proposed, _ := engine.NormalizeArguments(req.Arguments)
	canonical, effective, err := engine.NormalizeArguments(first.EffectiveArguments)
	if err != nil {
		t.Fatal(err)
	}
	mustEqual(t, "proposed hash", inv.NormalizedArgumentsHash, proposed)
	mustEqual(t, "effective hash", inv.EffectiveArgumentsHash, effective)
	var stored string
	if err := b.pool.QueryRow(b.ctx, `SELECT effective_arguments::text FROM actions WHERE id = $1`, inv.ID).Scan(&stored); err != nil {
		t.Fatal(err)
	}
	var storedArgs map[string]any
	if err := pgdb.UnmarshalNumbers([]byte(stored), &storedArgs); err != nil {
		t.Fatal(err)
	}
	if again, _, _ := engine.NormalizeArguments(storedArgs); string(again) != string(canonical) {
		t.Fatalf("stored effective arguments %s, want %s", again, canonical)
	}
}

// approvals.action_id is globally unique: a proposal that reuses another
// run's action_id (in any tenant) and needs approval is a conflict, not a
// 500, and leaves nothing behind.
func TestProposeReusedActionIDAcrossRunsConflicts(t *testing.T) {
	t.Parallel()
	b := setup(t)
	other := setup(t, func(o *setupOpts) { o.pool = b.pool })
	req := action("email.send", map[string]any{"to": "a@example.com"})
	b.parked(b.started(), req)
	c := other.started()
	_, err := other.svc.Propose(other.ctx, other.owner, c.run.ID, c.lease, req)
	wantErr(t, err, ErrConflict)
	if strings.Contains(err.Error(), b.tenant) {
		t.Fatalf("conflict names the other tenant: %v", err)
	}
	r := other.run(c.run.ID)
	mustEqual(t, "run", r.Status, api.RunRunning)
	invs, err := other.svc.ListInvocations(other.ctx, other.owner, c.run.ID)
	if err != nil || len(invs) != 0 {
		t.Fatalf("invocations left: %d %v", len(invs), err)
	}
}

// New records each loaded profile: the policy_profiles row (its first load
// kept) and a policy.profile.loaded event per load, in one transaction; a
// one-shot command records nothing.
func TestNewRecordsProfileLoads(t *testing.T) {
	t.Parallel()
	b := setup(t)
	name := "audit-" + uuid.NewString()[:8]
	rs := testRuleset(t, name, "v1", nil, false)
	policy, err := rules.NewSet(map[string]*engine.LoadedRuleset{name: rs}, name, b.policy.Catalog())
	if err != nil {
		t.Fatal(err)
	}
	load := func(replica string, skip bool) {
		t.Helper()
		if _, err := New(b.ctx, Config{Pool: b.pool, Policy: policy, Now: b.clock.Now, ReplicaID: replica, SkipProfileAudit: skip}); err != nil {
			t.Fatal(err)
		}
	}
	load("replica-1", false)
	var loadedBy, rowXmin, eventXmin string
	if err := b.pool.QueryRow(b.ctx, `SELECT loaded_by, xmin::text FROM policy_profiles WHERE policy_version = $1`,
		rs.PolicyVersion()).Scan(&loadedBy, &rowXmin); err != nil {
		t.Fatal(err)
	}
	if err := b.pool.QueryRow(b.ctx, `SELECT xmin::text FROM events WHERE type = $1 AND payload->>'policy_version' = $2`,
		api.EventPolicyProfileLoaded, rs.PolicyVersion()).Scan(&eventXmin); err != nil {
		t.Fatal(err)
	}
	mustEqual(t, "loaded_by", loadedBy, "replica-1")
	mustEqual(t, "row and event in one transaction", eventXmin, rowXmin)

	load("replica-2", false)
	load("cli", true)
	if err := b.pool.QueryRow(b.ctx, `SELECT loaded_by FROM policy_profiles WHERE policy_version = $1`, rs.PolicyVersion()).Scan(&loadedBy); err != nil {
		t.Fatal(err)
	}
	mustEqual(t, "first loaded_by kept", loadedBy, "replica-1")
	rows, err := b.pool.Query(b.ctx, `SELECT payload->>'loaded_by' FROM events WHERE type = $1 AND payload->>'policy_version' = $2 ORDER BY id`,
		api.EventPolicyProfileLoaded, rs.PolicyVersion())
	if err != nil {
		t.Fatal(err)
	}
	by, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil || !slices.Equal(by, []string{"replica-1", "replica-2"}) {
		t.Fatalf("load events by %v (%v)", by, err)
	}
}

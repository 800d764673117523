package service

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"gatehouse/api"
	"gatehouse/engine"
)

// sameCall is one action re-proposed with a fresh action_id: the same name
// and arguments, so the same breaker key.
func sameCall(name string, args map[string]any) func() engine.ActionRequest {
	return func() engine.ActionRequest { return action(name, args) }
}

// The breaker counts a human's denials: the same action proposed, denied
// by a human and proposed again fails the run at the third denial instead
// of asking the human forever.
func TestCircuitBreakerCountsHumanDenials(t *testing.T) {
	t.Parallel()
	b := setup(t)
	next := sameCall("email.send", map[string]any{"to": "a@example.com", "body": "hi"})
	c := b.started()
	for i := 1; i <= circuitBreakerThreshold; i++ {
		park := b.parked(c, next())
		b.resolve(park.ApprovalID, engine.ResolutionDeny)
		r := b.run(c.run.ID)
		if i < circuitBreakerThreshold {
			mustEqual(t, "run after a human denial", r.Status, api.RunQueued)
			c = b.claim(c.run.ID)
			continue
		}
		mustEqual(t, "run after the third human denial", r.Status, api.RunFailed)
		mustEqual(t, "failure", r.FailureReason, failureCircuitBreaker)
	}
	mustEqual(t, "breaker events", b.countEvents(c.run.ID, api.EventCircuitBreakerTipped), 1)
	_, err := b.svc.Propose(b.ctx, b.owner, c.run.ID, c.lease, next())
	wantErr(t, err, ErrStaleLease)
}

// The breaker counts revalidation's denials too: an approval voided at
// resume three times for the same call fails the run.
func TestCircuitBreakerCountsRevalidationDenials(t *testing.T) {
	t.Parallel()
	b := setup(t)
	next := sameCall("http.post", map[string]any{"url": "https://example.com/hook", "body": "x"})
	c := b.started()
	for i := 1; i <= circuitBreakerThreshold; i++ {
		req := next()
		park := b.parked(c, req)
		b.resolve(park.ApprovalID, engine.ResolutionApproveOnce)
		c = b.claim(c.run.ID)
		rr, err := b.svc.Resume(b.ctx, b.owner, c.run.ID, park.InvocationID, c.lease, api.ResumeInput{Arguments: req.Arguments, AgentVersion: "2.0"})
		if err != nil || rr.Authorized || rr.Result == nil || rr.Result.ReasonCode != engine.ReasonApprovalInvalidated {
			t.Fatalf("resume %d: %+v %v", i, rr, err)
		}
		want := api.RunRunning
		if i == circuitBreakerThreshold {
			want = api.RunFailed
		}
		mustEqual(t, "run status in the answer", rr.RunStatus, want)
	}
	mustEqual(t, "failure", b.run(c.run.ID).FailureReason, failureCircuitBreaker)
}

// A proposal failing schema validation is a recorded denial with the thin
// denial result, never an error: the model reads a denial and the breaker
// counts it.
func TestSchemaInvalidProposalIsRecordedDenial(t *testing.T) {
	t.Parallel()
	b := setup(t)
	for name, spoil := range map[string]func(*engine.ActionRequest){
		"bad kind":             func(r *engine.ActionRequest) { r.Kind = "teleport" },
		"bad origin_trust":     func(r *engine.ActionRequest) { r.OriginTrust = "divine" },
		"bad argument_trust":   func(r *engine.ActionRequest) { r.ArgumentTrust = map[string]engine.TrustLevel{"path": "divine"} },
		"negative step_number": func(r *engine.ActionRequest) { r.StepNumber = -1 },
		"missing name":         func(r *engine.ActionRequest) { r.Name = "" },
		"argument_trust unlisted": func(r *engine.ActionRequest) {
			r.ArgumentTrust = map[string]engine.TrustLevel{"nope": engine.TrustUser}
		},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			c := b.started()
			var res api.ProposeResult
			for i := range circuitBreakerThreshold {
				req := action("workspace.read_text", map[string]any{"path": "a"})
				spoil(&req)
				var err error
				res, err = b.svc.Propose(b.ctx, b.owner, c.run.ID, c.lease, req)
				if err != nil || res.Decision != engine.DecisionDeny || res.Result == nil || res.Result.ReasonCode != engine.ReasonUnclassifiable {
					t.Fatalf("proposal %d: %+v %v", i, res, err)
				}
				mustEqual(t, "recorded", b.invocation(c.run.ID, res.InvocationID).Status, api.InvocationDenied)
				if i == circuitBreakerThreshold-1 {
					break // the run has failed: its lease is stale
				}
				// A retry of the same action_id answers from the record.
				again, err := b.svc.Propose(b.ctx, b.owner, c.run.ID, c.lease, req)
				if err != nil || again.InvocationID != res.InvocationID {
					t.Fatalf("retry: %+v %v", again, err)
				}
			}
			mustEqual(t, "the breaker counted them", res.RunStatus, api.RunFailed)
		})
	}
}

// What the API could not decode at all, but could key, is recorded the
// same way, and never evaluated: the readable fields of an allowed action
// are still denied.
func TestUnreadableProposalIsRecordedDenial(t *testing.T) {
	t.Parallel()
	b := setup(t)
	c := b.started()
	req := action("workspace.read_text", map[string]any{"path": "a"})
	res, err := b.svc.ProposeUnreadable(b.ctx, b.owner, c.run.ID, c.lease, req)
	if err != nil || res.Decision != engine.DecisionDeny || res.Result == nil || res.Result.ReasonCode != engine.ReasonUnclassifiable {
		t.Fatalf("unreadable: %+v %v", res, err)
	}
	inv := b.invocation(c.run.ID, res.InvocationID)
	mustEqual(t, "status", inv.Status, api.InvocationDenied)
	mustEqual(t, "tool", inv.ToolName, "workspace.read_text")
	// Without a usable action_id there is nothing to key a record on.
	req.ActionID = "x"
	_, err = b.svc.ProposeUnreadable(b.ctx, b.owner, c.run.ID, c.lease, req)
	wantErr(t, err, ErrInvalid)
}

// Past the deadline the deadline wins over every other refusal: a resume
// with changed arguments fails the run deadline_exceeded and voids nothing.
func TestResumePastDeadlineOutranksInvalidation(t *testing.T) {
	t.Parallel()
	b := setup(t)
	deadline := b.clock.Now().Add(10 * time.Minute)
	c := b.claim(b.submit(b.owner, &deadline).ID)
	req := action("email.send", map[string]any{"to": "a@example.com"})
	park := b.parked(c, req)
	b.clock.Advance(9*time.Minute + 30*time.Second)
	b.resolve(park.ApprovalID, engine.ResolutionApproveOnce)
	c = b.claim(c.run.ID)
	b.clock.Advance(40 * time.Second)
	rr, err := b.svc.Resume(b.ctx, b.owner, c.run.ID, park.InvocationID, c.lease, api.ResumeInput{
		Arguments: map[string]any{"to": "attacker@example.com"}, AgentVersion: "1.0",
	})
	if err != nil || rr.Authorized || rr.Result == nil || rr.Result.ReasonCode != engine.ReasonApprovalExpired {
		t.Fatalf("resume: %+v %v", rr, err)
	}
	mustEqual(t, "run", rr.RunStatus, api.RunFailed)
	mustEqual(t, "failure", b.run(c.run.ID).FailureReason, failureDeadlineExceeded)
	mustEqual(t, "approval.invalidated events", b.countEvents(c.run.ID, api.EventApprovalInvalidated), 0)
}

// Past the deadline an action the policy allows is refused too, and the
// run fails.
func TestProposeAllowedPastDeadlineIsRefused(t *testing.T) {
	t.Parallel()
	b := setup(t)
	deadline := b.clock.Now().Add(30 * time.Second)
	c := b.claim(b.submit(b.owner, &deadline).ID)
	if res := b.propose(c, action("workspace.read_text", map[string]any{"path": "a"})); res.Decision != engine.DecisionAllow {
		t.Fatalf("before the deadline: %+v", res)
	}
	b.clock.Advance(31 * time.Second) // inside the 60 s lease
	res := b.propose(c, action("workspace.read_text", map[string]any{"path": "b"}))
	if res.Decision != engine.DecisionDeny || res.Result == nil || res.Result.ReasonCode != engine.ReasonApprovalExpired {
		t.Fatalf("past the deadline: %+v", res)
	}
	mustEqual(t, "run", res.RunStatus, api.RunFailed)
	mustEqual(t, "failure", b.run(c.run.ID).FailureReason, failureDeadlineExceeded)
}

// strictRun parks a blog.publish on a run of profile "strict" through a
// service that has it loaded; b.svc knows only "default".
func strictRun(t *testing.T, b *bundle) (*Service, claimed, api.ProposeResult, engine.ActionRequest) {
	t.Helper()
	withStrict := testSet(t, map[string]*engine.LoadedRuleset{
		"default": b.policy.DefaultRuleset(),
		"strict":  testRuleset(t, "strict", "v1", nil, false),
	}, b.policy.Catalog())
	strict := b.newService(withStrict)
	owner := b.owner
	owner.PolicyProfiles = []string{"strict"}
	r, err := strict.SubmitRun(b.ctx, owner, api.SubmitRunInput{SessionID: uuid.NewString(), AgentID: "a", AgentVersion: "1.0", PolicyProfile: "strict"})
	if err != nil {
		t.Fatal(err)
	}
	c := b.claim(r.ID)
	req := action("blog.publish", map[string]any{"title": "t", "body": "b"})
	res, err := strict.Propose(b.ctx, b.owner, r.ID, c.lease, req)
	if err != nil || res.ApprovalID == "" {
		t.Fatalf("park: %+v %v", res, err)
	}
	return strict, c, res, req
}

// A resume whose run profile is no longer loaded is a denial the model can
// answer (policy.revalidation.escalated), never a 409 that pauses the run
// forever; the audit says why.
func TestResumeWithUnloadedProfileDeniesEscalated(t *testing.T) {
	t.Parallel()
	b := setup(t)
	strict, c, park, req := strictRun(t, b)
	if out, err := strict.ResolveApproval(b.ctx, b.human, park.ApprovalID, engine.ResolutionApproveOnce, ""); err != nil || out.Result != ResolveApplied {
		t.Fatalf("approve: %+v %v", out, err)
	}
	c = b.claim(c.run.ID)
	rr, err := b.svc.Resume(b.ctx, b.owner, c.run.ID, park.InvocationID, c.lease, api.ResumeInput{Arguments: req.Arguments, AgentVersion: "1.0"})
	if err != nil || rr.Authorized || rr.Result == nil || rr.Result.ReasonCode != engine.ReasonRevalidationEscalated || !rr.Result.Retryable {
		t.Fatalf("resume: %+v %v", rr, err)
	}
	mustEqual(t, "invocation", b.invocation(c.run.ID, park.InvocationID).Status, api.InvocationDenied)
	mustEqual(t, "run", b.run(c.run.ID).Status, api.RunRunning)
	var cause string
	if err := b.pool.QueryRow(b.ctx, `SELECT payload->>'cause' FROM events WHERE run_id = $1 AND type = $2`, c.run.ID, api.EventActionDenied).Scan(&cause); err != nil {
		t.Fatal(err)
	}
	mustEqual(t, "audit cause", cause, causeProfileNotLoaded)
}

// The invocation the worker's result route returns carries no explanation
// and no rule id (they name the profile and the rule); the console's copy
// keeps them.
func TestRecordResultHidesExplanationAndRuleID(t *testing.T) {
	t.Parallel()
	b := setup(t)
	c := b.started()
	res := b.propose(c, action("workspace.read_text", map[string]any{"path": "a"}))
	full := b.invocation(c.run.ID, res.InvocationID)
	if full.Decision.Explanation == "" {
		t.Fatal("the audit copy lost its explanation")
	}
	inv, err := b.svc.RecordResult(b.ctx, b.owner, c.run.ID, res.InvocationID, c.lease, "succeeded")
	if err != nil {
		t.Fatal(err)
	}
	raw, err := json.Marshal(inv)
	if err != nil {
		t.Fatal(err)
	}
	for _, key := range []string{`"explanation"`, `"rule_id"`} {
		if strings.Contains(string(raw), key) {
			t.Errorf("result response carries %s: %s", key, raw)
		}
	}
	if !strings.Contains(string(raw), `"reason_code"`) || inv.Status != api.InvocationSucceeded {
		t.Errorf("result response lost what the worker needs: %s", raw)
	}
}

// A repeated resume of an already authorized invocation with other
// arguments is refused, but voids nothing: no approval.invalidated.
func TestRepeatResumeOfAuthorizedInvocationVoidsNothing(t *testing.T) {
	t.Parallel()
	b := setup(t)
	c, park, in := approvedAndReclaimed(b)
	if rr, err := b.svc.Resume(b.ctx, b.owner, c.run.ID, park.InvocationID, c.lease, in); err != nil || !rr.Authorized {
		t.Fatalf("resume: %+v %v", rr, err)
	}
	changed := api.ResumeInput{Arguments: map[string]any{"url": "https://example.com/hook", "body": "y"}, AgentVersion: "1.0"}
	rr, err := b.svc.Resume(b.ctx, b.owner, c.run.ID, park.InvocationID, c.lease, changed)
	if err != nil || rr.Authorized || rr.Result == nil {
		t.Fatalf("changed repeat: %+v %v", rr, err)
	}
	mustEqual(t, "approval.invalidated events", b.countEvents(c.run.ID, api.EventApprovalInvalidated), 0)
}

// The distinct-resolver rule is against self-approval: the run's owner may
// still deny its own action, but not approve it.
func TestOwnerMayDenyUnderDistinctResolver(t *testing.T) {
	t.Parallel()
	b := setup(t, withDistinctResolver)
	approve := b.parked(b.started(), action("email.send", map[string]any{"to": "a@example.com"}))
	_, err := b.svc.ResolveApproval(b.ctx, b.owner, approve.ApprovalID, engine.ResolutionApproveOnce, "")
	wantErr(t, err, ErrForbidden)
	out, err := b.svc.ResolveApproval(b.ctx, b.owner, approve.ApprovalID, engine.ResolutionDeny, "not mine to send")
	if err != nil || out.Result != ResolveApplied {
		t.Fatalf("owner denying: %+v %v", out, err)
	}
}

// reclassified is the test catalog with http.post moved to another side
// effect class, under the same profile (so the same policy_version).
func reclassified(t *testing.T, b *bundle, se engine.SideEffectClass) *Service {
	t.Helper()
	var specs []engine.ToolSpec
	for _, spec := range b.policy.Catalog().Tools() {
		if spec.Name == "http.post" {
			spec.SideEffect = se
		}
		specs = append(specs, spec)
	}
	cat, err := engine.NewCatalog(specs)
	if err != nil {
		t.Fatal(err)
	}
	return b.newService(testSet(t, map[string]*engine.LoadedRuleset{"default": b.policy.DefaultRuleset()}, cat))
}

// A tool the operator reclassified after the approval is re-evaluated at
// resume under its current classification, though the policy_version did
// not move; an unchanged classification resumes as before.
func TestCatalogReclassificationReevaluatesAtResume(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name       string
		se         engine.SideEffectClass
		authorized bool
	}{
		{"reclassified to a denied class", engine.SideEffectPrivileged, false},
		{"reclassified, still needs approval", engine.SideEffectFinancial, false},
		{"classification unchanged", engine.SideEffectExternalWrite, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			b := setup(t)
			c, park, in := approvedAndReclaimed(b)
			svc := reclassified(t, b, tc.se)
			mustEqual(t, "policy_version", svc.cfg.Policy.DefaultRuleset().PolicyVersion(), b.approval(park.ApprovalID).PolicyVersion)
			rr, err := svc.Resume(b.ctx, b.owner, c.run.ID, park.InvocationID, c.lease, in)
			if err != nil {
				t.Fatal(err)
			}
			mustEqual(t, "authorized", rr.Authorized, tc.authorized)
			if !tc.authorized && (rr.Result == nil || rr.Result.ReasonCode != engine.ReasonRevalidationEscalated) {
				t.Fatalf("result = %+v", rr.Result)
			}
		})
	}
}

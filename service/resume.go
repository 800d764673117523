package service

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"gatehouse/api"
	"gatehouse/engine"
	"gatehouse/notify"
)

// Resume decides whether an invocation that waited for approval may execute
// now. Past the run deadline the run fails (deadline_exceeded) before
// anything else is looked at. Otherwise the worker re-presents the arguments
// and its agent version; the approval must be approved, and revalidation
// (seed step 8) compares the request with now: the argument hash, the run
// principal's CURRENT scopes, the agent version (any change voids the
// approval: approval.invalidated), the policy version and the tool's
// catalog classification (either changed: re-evaluated; anything but allow
// is denied policy.revalidation.escalated). A run whose profile is no longer
// loaded cannot be re-evaluated: denied policy.revalidation.escalated, which
// the model may retry as a new proposal. An approval authorizes exactly one
// execution. Outcomes, each with the invocation's status and idempotency
// class:
//   - authorized through authorize (the approval is consumed, the lease
//     recorded);
//   - a repeat by the lease that authorized it, while the invocation is
//     still AUTHORIZED, with the same arguments, scopes and agent version:
//     authorized again (an idempotent replay; nothing is written);
//   - a repeat whose arguments, scopes or agent version changed: not
//     authorized, denial result approval.invalidated; the invocation is
//     left as it is and no event is written (the approval was already
//     consumed: nothing is voided);
//   - a repeat by another lease (a reclaimed run) or after a result was
//     recorded: not authorized and no denial result; the runtime applies
//     crash recovery by invocation_status and idempotency_class;
//   - denied with a denial result: approval.denied, approval.expired,
//     approval.cancelled, approval.invalidated,
//     policy.revalidation.escalated;
//   - ErrConflict while the approval is pending or the invocation never
//     waited; ErrStaleLease; ErrNotFound.
func (s *Service) Resume(ctx context.Context, p engine.Principal, runID, invocationID string, lease api.Lease, in api.ResumeInput) (api.ResumeResult, error) {
	now := s.now()
	var res api.ResumeResult
	err := s.withTx(ctx, func(tx pgx.Tx, after *afterCommit) error {
		run, err := lockRunForWorker(ctx, tx, p.TenantID, runID, lease, now)
		if err != nil {
			return err
		}
		inv, err := invocationsGet(ctx, tx, p.TenantID, runID, invocationID)
		if err != nil {
			return err
		}
		if inv.ApprovalID == "" {
			return fmt.Errorf("invocation did not wait for approval: %w", ErrConflict)
		}
		res = api.ResumeResult{InvocationID: inv.ID, RunStatus: run.Status, InvocationStatus: inv.Status, IdempotencyClass: inv.Idempotency}
		if pastDeadline(run, now) {
			// The deadline outranks every other refusal: whatever the
			// resume would have found, the run is over.
			return s.refuse(ctx, tx, after, run, inv, approvalRow{}, engine.RevalidationOutcome{
				Cause: engine.VoidDeadlineExceeded, ReasonCode: engine.ReasonApprovalExpired,
			}, now, &res)
		}
		switch inv.Status {
		case api.InvocationAuthorized, api.InvocationSucceeded, api.InvocationFailed, api.InvocationUncertain:
			return s.resumeAgain(ctx, tx, run, inv, lease, in, &res)
		case api.InvocationDenied, api.InvocationCancelled:
			d := engine.Denial(inv.ToolName, inv.ReasonCode, nil)
			res.Result = &d
			return nil
		case api.InvocationWaitingForApproval:
		default:
			return fmt.Errorf("invocation did not wait for approval: %w", ErrConflict)
		}
		a, err := approvalsGet(ctx, tx, p.TenantID, inv.ApprovalID)
		if err != nil {
			return err
		}
		if a.Status != engine.ApprovalApproved {
			return fmt.Errorf("approval is %s: %w", a.Status, ErrConflict)
		}
		if a.ResolvedAt == nil || !a.ResolvedAt.Before(a.ExpiresAt) {
			// Resolve refuses a due approval; should one ever be approved
			// at or past its expiry anyway, it still never authorizes.
			return s.refuse(ctx, tx, after, run, inv, a, engine.RevalidationOutcome{
				Cause: causeApprovedAfterExpiry, ReasonCode: engine.ReasonApprovalExpired,
			}, now, &res)
		}
		return s.revalidate(ctx, tx, after, run, inv, a, lease, in, now, &res)
	})
	if err != nil {
		return api.ResumeResult{}, fmt.Errorf("service: resume: %w", err)
	}
	return res, nil
}

// resumeAgain answers a resume of an invocation that was already
// authorized. The re-presented call must still be the approved one; only the
// lease that authorized it, while nothing has been recorded yet, hears
// "authorized" again.
func (s *Service) resumeAgain(ctx context.Context, tx pgx.Tx, run api.Run, inv invocationRow, lease api.Lease, in api.ResumeInput, res *api.ResumeResult) error {
	a, err := approvalsGet(ctx, tx, run.TenantID, inv.ApprovalID)
	if err != nil {
		return err
	}
	current := s.currentPrincipal(run.TenantID, run.PrincipalID, run.PrincipalScopes)
	hash := argumentsHash(in.Arguments)
	cause := engine.VoidCause(a.snapshot(inv), engine.ResumeSnapshot{
		ArgumentsHash: hash, PrincipalScopes: current.Scopes, AgentVersion: in.AgentVersion,
	})
	if cause != "" {
		// Not authorized, but nothing is voided: the approval was
		// consumed by the first resume. No approval.invalidated.
		d := engine.Denial(inv.ToolName, engine.ReasonApprovalInvalidated, nil)
		res.Result = &d
		return nil
	}
	res.Authorized = inv.authorizedTo(lease)
	return nil
}

// snapshot is what the approval recorded at request time, for revalidation.
func (a approvalRow) snapshot(inv invocationRow) engine.ApprovalSnapshot {
	return engine.ApprovalSnapshot{
		ArgumentsHash: a.NormalizedArgumentsHash, PrincipalScopes: a.RequestedScopes,
		AgentVersion: a.AgentVersion, PolicyVersion: a.PolicyVersion,
		Action: inv.Action, Decision: inv.Decision,
	}
}

// revalidate is seed step 8 for an approved invocation.
func (s *Service) revalidate(ctx context.Context, tx pgx.Tx, after *afterCommit, run api.Run, inv invocationRow, a approvalRow, lease api.Lease, in api.ResumeInput, now time.Time, res *api.ResumeResult) error {
	current := s.currentPrincipal(run.TenantID, run.PrincipalID, run.PrincipalScopes)
	if err := runsCheckpointResumed(ctx, tx, run.ID, inv.ID, now); err != nil {
		return err
	}
	rs, ok := s.ruleset(run.PolicyProfile)
	if !ok {
		// Nothing here can re-evaluate the approval. Refusing with a
		// conflict would leave the run paused with no way out; a denial
		// the model can answer with a new proposal is the seed's choice.
		return s.refuse(ctx, tx, after, run, inv, a, engine.RevalidationOutcome{
			Cause: causeProfileNotLoaded, ReasonCode: engine.ReasonRevalidationEscalated,
		}, now, res)
	}
	hash := argumentsHash(in.Arguments)
	outcome := engine.Revalidate(a.snapshot(inv), engine.ResumeSnapshot{
		ArgumentsHash: hash, PrincipalScopes: current.Scopes, AgentVersion: in.AgentVersion,
		Principal: current, Run: runSnapshot(run), Ruleset: rs, Catalog: s.cfg.Policy.Catalog(), Now: now,
	})
	if err := approvalsSetRevalidated(ctx, tx, a.ID, rs.PolicyVersion()); err != nil {
		return err
	}
	if outcome.Authorized {
		row, err := s.authorize(ctx, tx, nil, inv, lease, now)
		res.Authorized, res.InvocationStatus = err == nil, row.Status
		return err
	}
	return s.refuse(ctx, tx, after, run, inv, a, outcome, now, res)
}

// Refusal causes of the service's own, beside the engine's Void* causes.
const (
	// causeApprovedAfterExpiry: an approval resolved at or past its
	// expires_at.
	causeApprovedAfterExpiry = "approved_after_expiry"
	// causeProfileNotLoaded: the run's policy profile is not loaded in
	// this process, so nothing can re-evaluate the approval.
	causeProfileNotLoaded = "policy_profile_not_loaded"
)

// refuse denies an invocation at resume. One still waiting is DENIED, with
// approval.invalidated when the approval was voided, action.denied (its
// cause is the audit's explanation) and the circuit breaker; one past
// waiting (a resume after the deadline of an invocation already
// authorized) is left as it is. The run fails when the refusal ends it
// (deadline_exceeded, or approval.expired for an approval resolved too
// late).
func (s *Service) refuse(ctx context.Context, tx pgx.Tx, after *afterCommit, run api.Run, inv invocationRow, a approvalRow, outcome engine.RevalidationOutcome, now time.Time, res *api.ResumeResult) error {
	reason := outcome.ReasonCode
	if reason == "" {
		reason = engine.ReasonRevalidationEscalated
	}
	d := engine.Denial(inv.ToolName, reason, nil)
	res.Result = &d
	cause := outcome.Cause
	if inv.Status == api.InvocationWaitingForApproval {
		if err := s.denyAtResume(ctx, tx, after, run, inv, a, outcome, reason, now); err != nil {
			return err
		}
		res.InvocationStatus = api.InvocationDenied
	}
	failure := ""
	switch cause {
	case engine.VoidDeadlineExceeded:
		failure = failureDeadlineExceeded
	case causeApprovedAfterExpiry:
		failure = engine.ReasonApprovalExpired
	}
	if failure != "" {
		failed, _, err := failRun(ctx, tx, run.ID, []string{api.RunRunning}, failure, now)
		if err != nil {
			return err
		}
		res.RunStatus = failed.Status
		return nil
	}
	if inv.Status != api.InvocationWaitingForApproval {
		return nil
	}
	tripped, ok, err := s.countDenial(ctx, tx, after, inv, reason, now)
	if ok {
		res.RunStatus = tripped.Status
	}
	return err
}

// denyAtResume denies a waiting invocation at resume and writes its events.
func (s *Service) denyAtResume(ctx context.Context, tx pgx.Tx, after *afterCommit, run api.Run, inv invocationRow, a approvalRow, outcome engine.RevalidationOutcome, reason string, now time.Time) error {
	if err := invocationsDenyWaiting(ctx, tx, inv.ID, reason, now); err != nil {
		return err
	}
	cause := outcome.Cause
	after.add(func() { s.metrics.RevalidationVoided(cause); s.metrics.Denied(reason) })
	if outcome.Invalidated {
		if err := insertEvent(ctx, tx, run.TenantID, run.ID, now, api.ApprovalInvalidatedPayload{
			ApprovalID: a.ID, InvocationID: inv.ID, Cause: cause,
		}); err != nil {
			return err
		}
		if err := s.insertNotification(ctx, tx, after, a, notify.KindInvalidated, now); err != nil {
			return err
		}
	}
	return insertEvent(ctx, tx, run.TenantID, run.ID, now, api.ActionDeniedPayload{
		InvocationID: inv.ID, ToolName: inv.ToolName, ReasonCode: reason, Cause: cause,
	})
}

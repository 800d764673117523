package service

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"gatehouse/engine"
)

// Resume decides whether an invocation that waited for approval may execute
// now. The worker re-presents the arguments and its agent version; the
// approval must be approved, and revalidation (seed step 8) compares the
// request with now: the argument hash, the run principal's CURRENT scopes,
// the agent version (any change voids the approval: approval.invalidated)
// and the policy version (re-evaluated; anything but allow is denied
// policy.revalidation.escalated); past the run deadline the run fails
// (deadline_exceeded). Outcomes:
//   - authorized through authorize (the approval is consumed);
//   - a second Resume of an authorized invocation returns the stored
//     authorization, never a second one;
//   - denied with a denial result: approval.denied, approval.expired,
//     approval.cancelled, approval.invalidated,
//     policy.revalidation.escalated;
//   - ErrConflict while the approval is pending or the invocation never
//     waited; ErrStaleLease; ErrNotFound.
func (s *Service) Resume(ctx context.Context, p engine.Principal, runID, invocationID string, lease Lease, in ResumeInput) (ResumeResult, error) {
	now := s.now()
	var res ResumeResult
	err := s.withTx(ctx, func(tx pgx.Tx, after *afterCommit) error {
		run, err := lockRunForWorker(ctx, tx, p.TenantID, runID, lease, now)
		if err != nil {
			return err
		}
		inv, err := getInvocation(ctx, tx, p.TenantID, runID, invocationID)
		if err != nil {
			return err
		}
		res = ResumeResult{InvocationID: inv.ID, RunStatus: run.Status}
		switch inv.Status {
		case InvocationAuthorized, InvocationSucceeded, InvocationFailed, InvocationUncertain:
			res.Authorized = inv.ApprovalID != ""
			if !res.Authorized {
				return fmt.Errorf("invocation did not wait for approval: %w", ErrConflict)
			}
			return nil
		case InvocationDenied, InvocationCancelled:
			d := engine.Denial(inv.ToolName, inv.ReasonCode, nil)
			res.Result = &d
			return nil
		case InvocationWaitingForApproval:
		default:
			return fmt.Errorf("invocation did not wait for approval: %w", ErrConflict)
		}
		a, err := approvalRepo{tx}.get(ctx, p.TenantID, inv.ApprovalID)
		if err != nil {
			return err
		}
		if a.Status != engine.ApprovalApproved {
			return fmt.Errorf("approval is %s: %w", a.Status, ErrConflict)
		}
		return s.revalidate(ctx, tx, after, run, inv, a, in, now, &res)
	})
	if err != nil {
		return ResumeResult{}, fmt.Errorf("service: resume: %w", err)
	}
	return res, nil
}

// revalidate is seed step 8 for an approved invocation.
func (s *Service) revalidate(ctx context.Context, tx pgx.Tx, after *afterCommit, run Run, inv invocationRow, a approvalRow, in ResumeInput, now time.Time, res *ResumeResult) error {
	current := s.currentPrincipal(run.TenantID, run.PrincipalID, run.PrincipalScopes)
	rs, ok := s.ruleset(run.PolicyProfile)
	if !ok {
		return fmt.Errorf("run profile %q is not loaded: %w", run.PolicyProfile, ErrConflict)
	}
	_, hash := engine.NormalizeArguments(in.Arguments)
	snap := engine.ApprovalSnapshot{
		ArgumentsHash: a.NormalizedArgumentsHash, PrincipalScopes: a.RequestedScopes,
		AgentVersion: a.AgentVersion, PolicyVersion: a.PolicyVersion,
		Action: inv.Action, Decision: inv.Decision,
	}
	outcome := engine.Revalidate(snap, engine.ResumeSnapshot{
		ArgumentsHash: hash, PrincipalScopes: current.Scopes, AgentVersion: in.AgentVersion,
		Principal: current, Run: run.snapshot(), Ruleset: rs, Now: now,
	})
	if _, err := tx.Exec(ctx, approvalSetRevalidated, a.ID, rs.PolicyVersion()); err != nil {
		return fmt.Errorf("record revalidation: %w", err)
	}
	if _, err := execRun(ctx, tx, "checkpoint", runCheckpointResumed, run.ID, inv.ID, now); err != nil {
		return err
	}
	if outcome.Authorized {
		res.Authorized = true
		return s.authorize(ctx, tx, inv, now)
	}
	reason := outcome.ReasonCode
	if reason == "" {
		reason = engine.ReasonRevalidationEscalated
	}
	if err := denyWaitingInvocation(ctx, tx, inv.ID, reason, now); err != nil {
		return err
	}
	d := engine.Denial(inv.ToolName, reason, nil)
	res.Result = &d
	cause := outcome.Cause
	after.add(func() { s.metrics.RevalidationVoided(cause); s.metrics.Denied(reason) })
	if outcome.Invalidated {
		if err := insertEvent(ctx, tx, run.TenantID, run.ID, EventApprovalInvalidated, now, map[string]any{
			"approval_id": a.ID, "invocation_id": inv.ID, "cause": cause,
		}); err != nil {
			return err
		}
	}
	if err := insertEvent(ctx, tx, run.TenantID, run.ID, EventActionDenied, now, map[string]any{
		"invocation_id": inv.ID, "tool_name": inv.ToolName, "reason_code": reason, "cause": cause,
	}); err != nil {
		return err
	}
	if cause == engine.VoidDeadlineExceeded {
		failed, _, err := failRun(ctx, tx, run.ID, []string{RunRunning}, failureDeadlineExceeded, now)
		if err != nil {
			return err
		}
		res.RunStatus = failed.Status
	}
	return nil
}

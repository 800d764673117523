package service

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"gatehouse/api"
	"gatehouse/engine"
)

// MaxReasonLength bounds the reason a human gives with a resolution, in
// bytes, on every surface (API, console, CLI).
const MaxReasonLength = 2000

// ResolveApproval resolves an approval of the principal's tenant: the
// guarded update of the seed, first resolution wins. Outcomes:
//   - ResolveApplied: this call resolved it; in the same transaction a deny
//     denies the invocation, approval.resolved is written, the checkpoint is
//     updated and, when no approval of the run is pending any more, the run
//     is re-queued so a worker claims it and resumes;
//   - ResolveSame: already resolved the same way; the stored approval with
//     its original resolver and time, and no second event;
//   - ResolveConflict: resolved differently, expired or cancelled first; the
//     stored approval. An approval still pending at or past expires_at is
//     expired in this transaction, exactly as the reaper would (invocation
//     DENIED, approval.resolved "expired", run failed approval.expired),
//     and the conflict carries the expired approval: never authorized;
//   - ErrNotFound: no such approval in the tenant (never ErrForbidden);
//   - ErrForbidden: p lacks approval.resolve, or p approves a run it
//     started under a profile that requires a distinct resolver (denying
//     one's own action is always allowed);
//   - ErrConflict: an approval of a run whose profile is not loaded here
//     (the resolver rule cannot be checked; deny is still accepted);
//   - ErrInvalid: approve_for_task (no task grants in 0.1) or an unknown
//     resolution.
func (s *Service) ResolveApproval(ctx context.Context, p engine.Principal, id string, resolution engine.ApprovalResolutionType, reason string) (ResolveOutcome, error) {
	if err := requireScope(p, scopeApprovalResolve); err != nil {
		return ResolveOutcome{}, fmt.Errorf("service: resolve approval: %w", err)
	}
	switch {
	case resolution == engine.ResolutionApproveForTask:
		return ResolveOutcome{}, &InvalidError{Msg: "approve_for_task needs a task grant offer; none is offered"}
	case !resolution.Valid():
		return ResolveOutcome{}, &InvalidError{Msg: "resolution must be approve_once or deny"}
	case len(reason) > MaxReasonLength:
		return ResolveOutcome{}, &InvalidError{Msg: "reason is too long"}
	}
	now := s.now()
	var out ResolveOutcome
	err := s.withTx(ctx, func(tx pgx.Tx, after *afterCommit) error {
		repo := approvalRepo{tx}
		cur, err := repo.get(ctx, p.TenantID, id)
		if err != nil {
			return err
		}
		// Lock the run first, as every run-changing flow does, so that of
		// two resolutions of one run's approvals the second sees the first.
		run, err := getRun(ctx, tx, p.TenantID, cur.RunID, true)
		if err != nil {
			return err
		}
		if err := s.checkResolver(p, run, resolution); err != nil {
			return err
		}
		result, a, err := repo.resolve(ctx, p.TenantID, id, p.ID, resolution, reason, now)
		if err != nil {
			return err
		}
		if result == resolveDue {
			// Past expires_at a human's answer comes too late, even when the
			// reaper has not run yet: expire it here as the reaper would.
			expired, ok, err := s.expireOne(ctx, tx, after, a.ID, now)
			if err != nil {
				return err
			}
			if !ok {
				return fmt.Errorf("approval %s left pending past expiry: %w", a.ID, ErrConflict)
			}
			result, a = ResolveConflict, expired
		}
		out = ResolveOutcome{Result: result, Approval: a.Approval}
		if result != ResolveApplied {
			return nil
		}
		return s.settle(ctx, tx, after, a, now)
	})
	if err != nil {
		return ResolveOutcome{}, fmt.Errorf("service: resolve approval: %w", err)
	}
	return out, nil
}

// checkResolver applies the run profile's distinct-resolver rule: a
// principal may not approve a run it started when the profile forbids it.
// The rule exists against self-approval, so a deny is never checked: no
// one is stopped from refusing their own action. A run whose profile this
// process has not loaded cannot be checked, so it cannot be approved here
// (ErrConflict).
func (s *Service) checkResolver(p engine.Principal, run api.Run, resolution engine.ApprovalResolutionType) error {
	if resolution == engine.ResolutionDeny {
		return nil
	}
	rs, ok := s.ruleset(run.PolicyProfile)
	switch {
	case !ok:
		return fmt.Errorf("run profile %q is not loaded, so its resolver rule cannot be checked: %w", run.PolicyProfile, ErrConflict)
	case rs.RequireDistinctResolver() && p.ID == run.PrincipalID:
		return ErrForbidden
	}
	return nil
}

// settle applies a human resolution to the approval's invocation and run,
// in the resolving transaction.
func (s *Service) settle(ctx context.Context, tx pgx.Tx, after *afterCommit, a approvalRow, now time.Time) error {
	inv, found, err := getInvocationByAction(ctx, tx, a.RunID, a.ActionID)
	if err != nil {
		return err
	}
	resumable := ""
	denied := found && a.Status == engine.ApprovalDenied
	if denied {
		if err := denyWaitingInvocation(ctx, tx, inv.ID, engine.ReasonApprovalDenied, now); err != nil {
			return err
		}
		after.add(func() { s.metrics.Denied(engine.ReasonApprovalDenied) })
	} else if found {
		resumable = inv.ID
	}
	if err := recordSettled(ctx, tx, a, resumable, now); err != nil {
		return err
	}
	if _, _, err := requeueIfSettled(ctx, tx, a.RunID, now); err != nil {
		return err
	}
	if denied {
		// A human's denial counts toward the breaker like any other: a
		// model re-proposing what a human refused must not ask forever.
		if _, _, err := s.countDenial(ctx, tx, after, inv, engine.ReasonApprovalDenied, now); err != nil {
			return err
		}
	}
	if err := notify(ctx, tx, a.TenantID); err != nil {
		return err
	}
	latency := now.Sub(a.CreatedAt)
	after.add(func() { s.metrics.ApprovalResolved(a.Status, latency) })
	return nil
}

// recordSettled drops a settled approval from its run's checkpoint (listing
// resumableInvocation, if any, for resume) and writes approval.resolved.
func recordSettled(ctx context.Context, tx pgx.Tx, a approvalRow, resumableInvocation string, now time.Time) error {
	if _, err := execRun(ctx, tx, "checkpoint", runCheckpointSettle, a.RunID, a.ID, resumableInvocation, now); err != nil {
		return err
	}
	return insertEvent(ctx, tx, a.TenantID, a.RunID, now, resolvedPayload(a))
}

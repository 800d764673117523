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
//   - ErrInvalid: approve_for_task (only ResolveApprovalForTask, which the
//     CLI and notifications never call, resolves with it) or an unknown
//     resolution.
//
// An approval whose quorum is above one (the profile's approvals.quorum)
// collects votes first (castVote): ResolveVoted while the approve votes
// are below the quorum; each principal's vote counts once.
func (s *Service) ResolveApproval(ctx context.Context, p engine.Principal, id string, resolution engine.ApprovalResolutionType, reason string) (ResolveOutcome, error) {
	return s.resolveApproval(ctx, p, id, "", resolution, reason, nil)
}

// ResolveApprovalSeen is ResolveApproval bound to what the resolver saw:
// argumentsHash (api.Approval.ArgumentsHash) must still be the approval's,
// else nothing changes and the outcome is ResolveStale with the stored
// approval. The console's forms carry the hash, so a batch resolves only
// the approvals its reviewer read.
func (s *Service) ResolveApprovalSeen(ctx context.Context, p engine.Principal, id, argumentsHash string, resolution engine.ApprovalResolutionType, reason string) (ResolveOutcome, error) {
	if argumentsHash == "" {
		return ResolveOutcome{}, &InvalidError{Msg: "the arguments hash the resolver saw is missing"}
	}
	return s.resolveApproval(ctx, p, id, argumentsHash, resolution, reason, nil)
}

// resolveApproval resolves with approve_for_task only when grant, the
// offer the resolver repeats, is set (ResolveApprovalForTask).
func (s *Service) resolveApproval(ctx context.Context, p engine.Principal, id, seenHash string, resolution engine.ApprovalResolutionType, reason string, grant *engine.SiteScope) (ResolveOutcome, error) {
	if err := requireScope(p, scopeApprovalResolve); err != nil {
		return ResolveOutcome{}, fmt.Errorf("service: resolve approval: %w", err)
	}
	switch {
	case resolution == engine.ResolutionApproveForTask && grant == nil:
		return ResolveOutcome{}, &InvalidError{Msg: "approve_for_task is offered only on a browser.act card in the console or through the API, with task_grant"}
	case !resolution.Valid():
		return ResolveOutcome{}, &InvalidError{Msg: "resolution must be approve_once or deny"}
	case len(reason) > MaxReasonLength:
		return ResolveOutcome{}, &InvalidError{Msg: "reason is too long"}
	}
	now := s.now()
	var out ResolveOutcome
	err := s.withTx(ctx, func(tx pgx.Tx, after *afterCommit) error {
		// Lock the run first, as every run-changing flow does, so that of
		// two resolutions of one run's approvals the second sees the first.
		run, err := runsLockForApproval(ctx, tx, p.TenantID, id)
		if err != nil {
			return err
		}
		if err := s.checkResolver(p, run, resolution); err != nil {
			return err
		}
		if grant != nil {
			if err := checkTaskGrantRequest(ctx, tx, p.TenantID, id, grant); err != nil {
				return err
			}
		}
		// The guarded update, and the invocation settle needs, in one
		// round trip. An approval with a quorum refuses it until the
		// votes are counted (resolveVote); then it runs once more.
		var resolved approvalResolution
		var inv invocationRow
		var found bool
		for quorumMet := false; ; quorumMet = true {
			resolved = approvalResolution{}
			b := &pgx.Batch{}
			queueApprovalsResolve(b, p.TenantID, id, p.ID, resolution, reason, seenHash, quorumMet, now, &resolved)
			queueInvocationsGetForApproval(b, id, &inv, &found)
			if err := tx.SendBatch(ctx, b).Close(); err != nil {
				return err
			}
			if resolved.result != resolveVote {
				break
			}
			voted, done, err := s.castVote(ctx, tx, p, resolved.row, resolution, reason, now)
			if err != nil || done {
				out = voted
				return err
			}
		}
		result, a := resolved.result, resolved.row
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
		if result == ResolveApplied && grant != nil {
			if a, err = s.createTaskGrant(ctx, tx, a, now); err != nil {
				return err
			}
		}
		out = ResolveOutcome{Result: result, Approval: a.Approval}
		if result != ResolveApplied {
			return nil
		}
		return s.settle(ctx, tx, after, a, inv, found, now)
	})
	if err != nil {
		return ResolveOutcome{}, fmt.Errorf("service: resolve approval: %w", err)
	}
	return out, nil
}

// castVote casts p's vote on a, a pending approval whose quorum is above
// one, under the run lock resolveApproval holds, so the votes on one
// approval are cast and counted one at a time. done is true when the vote
// is the whole answer:
//   - ResolveSame: p voted the same way before; the vote counts once and
//     nothing changes (gate 9, per vote);
//   - ResolveConflict: p voted differently before; nothing changes;
//   - ResolveVoted: an approve vote below the quorum; the approval stays
//     pending and approval.voted is written.
//
// Otherwise (a deny, or the approve vote that reaches the quorum) the
// guarded update decides as for any resolution, and writes the one
// approval.resolved.
func (s *Service) castVote(ctx context.Context, tx pgx.Tx, p engine.Principal, a approvalRow, resolution engine.ApprovalResolutionType, reason string, now time.Time) (ResolveOutcome, bool, error) {
	v, err := approvalVotesCast(ctx, tx, a.ID, p.ID, resolution, reason, now)
	switch {
	case err != nil:
		return ResolveOutcome{}, false, err
	case !v.inserted && v.resolution == resolution:
		return ResolveOutcome{Result: ResolveSame, Approval: a.Approval}, true, nil
	case !v.inserted:
		return ResolveOutcome{Result: ResolveConflict, Approval: a.Approval}, true, nil
	case resolution == engine.ResolutionDeny || v.approvals >= a.Quorum:
		return ResolveOutcome{}, false, nil
	}
	b := &pgx.Batch{}
	if err := queueEvent(b, a.TenantID, a.RunID, now, api.ApprovalVotedPayload{
		ApprovalID: a.ID, InvocationID: a.ToolInvocationID, ToolName: a.ToolName, Risk: a.Risk,
		VotedBy: p.ID, Approvals: v.approvals, Quorum: a.Quorum,
	}); err != nil {
		return ResolveOutcome{}, false, err
	}
	queueNotify(b, a.TenantID)
	if err := tx.SendBatch(ctx, b).Close(); err != nil {
		return ResolveOutcome{}, false, fmt.Errorf("record vote: %w", err)
	}
	if a, err = approvalsGet(ctx, tx, a.TenantID, a.ID); err != nil {
		return ResolveOutcome{}, false, err
	}
	return ResolveOutcome{Result: ResolveVoted, Approval: a.Approval}, true, nil
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

// settle applies a human resolution to the approval's invocation (found
// false when there is none) and run, in the resolving transaction, in one
// round trip unless the circuit breaker trips.
func (s *Service) settle(ctx context.Context, tx pgx.Tx, after *afterCommit, a approvalRow, inv invocationRow, found bool, now time.Time) error {
	b := &pgx.Batch{}
	resumable := ""
	denied := found && a.Status == engine.ApprovalDenied
	if denied {
		queueInvocationsDenyWaiting(b, inv.ID, engine.ReasonApprovalDenied, now)
		after.add(func() { s.metrics.Denied(engine.ReasonApprovalDenied) })
	} else if found {
		resumable = inv.ID
	}
	if err := s.queueRecordSettled(b, after, a, resumable, now); err != nil {
		return err
	}
	if err := queueRunsRequeueIfSettled(b, a.RunID, now); err != nil {
		return err
	}
	// A human's denial counts toward the breaker like any other: a model
	// re-proposing what a human refused must not ask forever.
	denials := 0
	if denied {
		queueInvocationsCountDenials(b, inv, engine.ReasonApprovalDenied, &denials)
	}
	queueNotify(b, a.TenantID)
	if err := tx.SendBatch(ctx, b).Close(); err != nil {
		return fmt.Errorf("settle approval: %w", err)
	}
	if denied {
		if _, _, err := s.tripBreaker(ctx, tx, after, inv, engine.ReasonApprovalDenied, denials, now); err != nil {
			return err
		}
	}
	latency := now.Sub(a.CreatedAt)
	after.add(func() { s.metrics.ApprovalResolved(a.Status, latency) })
	return nil
}

// recordSettled drops a settled approval from its run's checkpoint (listing
// resumableInvocation, if any, for resume) and writes approval.resolved and
// its notification.
func (s *Service) recordSettled(ctx context.Context, tx pgx.Tx, after *afterCommit, a approvalRow, resumableInvocation string, now time.Time) error {
	b := &pgx.Batch{}
	if err := s.queueRecordSettled(b, after, a, resumableInvocation, now); err != nil {
		return err
	}
	if err := tx.SendBatch(ctx, b).Close(); err != nil {
		return fmt.Errorf("record settled approval: %w", err)
	}
	return nil
}

// queueRecordSettled is recordSettled queued on b.
func (s *Service) queueRecordSettled(b *pgx.Batch, after *afterCommit, a approvalRow, resumableInvocation string, now time.Time) error {
	queueRunsCheckpointSettle(b, a.RunID, a.ID, resumableInvocation, now)
	s.queueNotification(b, after, a, notificationKind(a.Status), now)
	return queueEvent(b, a.TenantID, a.RunID, now, resolvedPayload(a))
}

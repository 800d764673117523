package service

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"gatehouse/api"
	"gatehouse/engine"
)

const reaperBatch = 100

// ExpireDue is one reaper pass: it expires up to limit due approvals in one
// transaction. For each it claims the approval and its run with SKIP LOCKED
// (rows a resolver, canceller or other reaper holds are left for later),
// expires it under the pending guard, denies the invocation, writes
// approval.resolved with resolution "expired" and fails the run
// (approval.expired) if it is still parked. It never approves anything.
// It returns how many approvals it expired.
func (s *Service) ExpireDue(ctx context.Context, limit int) (int, error) {
	if limit <= 0 {
		limit = reaperBatch
	}
	now := s.now()
	var n int
	err := s.withTx(ctx, func(tx pgx.Tx, after *afterCommit) error {
		n = 0
		ids, err := approvalsClaimDue(ctx, tx, now, limit)
		if err != nil {
			return err
		}
		for _, id := range ids {
			_, ok, err := s.expireOne(ctx, tx, after, id, now)
			if err != nil {
				return err
			}
			if ok {
				n++
			}
		}
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("service: expire due approvals: %w", err)
	}
	return n, nil
}

// expireOne expires one due approval under the pending guard and applies
// the expiry to its invocation and run; ok=false when it was no longer
// pending or not yet due. The reaper and a too-late resolution share it.
func (s *Service) expireOne(ctx context.Context, tx pgx.Tx, after *afterCommit, id string, now time.Time) (approvalRow, bool, error) {
	a, ok, err := approvalsExpire(ctx, tx, id, now)
	if err != nil || !ok {
		return a, ok, err
	}
	if err := s.expired(ctx, tx, after, a, now); err != nil {
		return a, false, err
	}
	// The invocation is denied approval.expired: an expiry counts in the
	// denial rate under its own reason code, beside the expiry rate.
	risk := a.Risk
	after.add(func() { s.metrics.ApprovalExpired(risk); s.metrics.Denied(engine.ReasonApprovalExpired) })
	return a, true, nil
}

// expired applies an expiry to the approval's invocation and run.
func (s *Service) expired(ctx context.Context, tx pgx.Tx, after *afterCommit, a approvalRow, now time.Time) error {
	inv, found, err := invocationsGetByAction(ctx, tx, a.RunID, a.ActionID)
	if err != nil {
		return err
	}
	if found {
		if err := invocationsDenyWaiting(ctx, tx, inv.ID, engine.ReasonApprovalExpired, now); err != nil {
			return err
		}
	}
	if err := s.recordSettled(ctx, tx, after, a, "", now); err != nil {
		return err
	}
	if _, _, err := failRun(ctx, tx, a.RunID, []string{api.RunWaitingForApproval}, engine.ReasonApprovalExpired, now); err != nil {
		return err
	}
	return signalEvents(ctx, tx, a.TenantID)
}

// RunReaper calls ExpireDue every interval until ctx ends, draining full
// batches at once so a backlog does not wait for the ticker.
func (s *Service) RunReaper(ctx context.Context, interval time.Duration) {
	if interval <= 0 {
		return
	}
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		for {
			n, err := s.ExpireDue(ctx, reaperBatch)
			if err != nil {
				if ctx.Err() == nil {
					s.log.Error("reaper pass failed", "err", err)
				}
				break
			}
			if n < reaperBatch {
				break
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

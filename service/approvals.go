package service

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/jackc/pgx/v5"

	"gatehouse/api"
	"gatehouse/engine"
)

// This file is the approval repository (seed "Ports and data model"):
// create, get, list_pending with a cursor, resolve with outcome applied /
// same / conflict, expire_due and cancel_for_run. Resolve, expire and cancel
// share one guard, status = 'pending', so whichever runs second changes
// nothing.

const approvalColumns = `id::text, tenant_id, principal_id, run_id::text, session_id::text, action_kind,
       action_id::text, COALESCE(tool_invocation_id::text, ''), action_summary, tool_name, side_effect,
       arguments_view, argument_digests, risk, policy_reason, policy_version,
       COALESCE(revalidated_policy_version, ''), status, COALESCE(resolution, ''),
       COALESCE(resolved_by, ''), resolved_at, resolution_reason, expires_at, created_at,
       normalized_arguments_hash, requested_scopes, agent_version, risk_rank,
       origin_trust, argument_trust, policy_explanation,
       (SELECT r.agent_id FROM runs r WHERE r.id = approvals.run_id), quorum,
       (SELECT COALESCE(json_agg(json_build_object('principal_id', v.principal_id, 'resolution', v.resolution,
               'reason', v.reason, 'voted_at', v.voted_at) ORDER BY v.voted_at, v.principal_id), '[]')
          FROM approval_votes v WHERE v.approval_id = approvals.id),
       task_grant_offer, task_grant_not_covered,
       COALESCE((SELECT g.id::text FROM browser_task_grants g WHERE g.approval_id = approvals.id), '')`

const approvalInsert = `
INSERT INTO approvals (id, tenant_id, principal_id, session_id, run_id, action_kind, action_id,
       tool_invocation_id, status, expires_at, created_at, action_summary, tool_name, side_effect,
       risk, risk_rank, arguments_view, argument_digests, policy_reason, policy_version,
       normalized_arguments_hash, requested_scopes, agent_version, origin_trust, argument_trust,
       policy_explanation, quorum, task_grant_offer, task_grant_not_covered)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, 'pending', $9, $10, $11, $12, $13, $14, $15, $16, $17,
        $18, $19, $20, $21, $22, $23, $24, $25, $26, $27, $28)
RETURNING ` + approvalColumns

const approvalGet = `SELECT ` + approvalColumns + ` FROM approvals WHERE id = $1 AND tenant_id = $2`

// approvalResolveIfPending is the seed's guarded update: zero rows means
// someone (a resolver, the reaper, a cancellation) got there first, the
// approval is due ($5, now, at or past expires_at) and only the reaper's
// expiry may end it, its arguments are not the ones the resolver saw
// ($8, a hash; empty when the caller binds none), or it has a quorum and
// the caller has not counted the votes ($9: the vote is a deny or reaches
// the quorum).
const approvalResolveIfPending = `
UPDATE approvals
   SET status = $3, resolution = $4, resolved_at = $5, resolved_by = $6, resolution_reason = $7
 WHERE id = $1 AND tenant_id = $2 AND status = 'pending' AND expires_at > $5
   AND ($8::text = '' OR normalized_arguments_hash = $8)
   AND (quorum <= 1 OR $9::boolean)
RETURNING ` + approvalColumns

// approvalClaimDue locks due pending approvals together with their runs,
// skipping any a resolver, canceller or another reaper holds, so reapers
// never wait and never deadlock with the run-first lock order.
const approvalClaimDue = `
SELECT a.id::text
  FROM approvals a JOIN runs r ON r.id = a.run_id
 WHERE a.status = 'pending' AND a.expires_at <= $1
 ORDER BY a.expires_at, a.id
 LIMIT $2
   FOR UPDATE OF a, r SKIP LOCKED`

// approvalExpireIfPending expires one due approval under the shared guard.
const approvalExpireIfPending = `
UPDATE approvals SET status = 'expired', resolved_at = $2
 WHERE id = $1 AND status = 'pending' AND expires_at <= $2
RETURNING ` + approvalColumns

// approvalCancelForRun reaps a cancelled run's pending approvals to
// cancelled (not denied) under the shared guard.
const approvalCancelForRun = `
UPDATE approvals SET status = 'cancelled', resolved_at = $2
 WHERE run_id = $1 AND status = 'pending'
RETURNING ` + approvalColumns

const approvalSetRevalidated = `UPDATE approvals SET revalidated_policy_version = $2 WHERE id = $1`

// approvalListPending is the queue: critical first, then oldest first,
// keyset-paginated. The position is ($7, $8, $9) over (-risk_rank,
// created_at, id), all ascending, so it is an index condition on the queue
// index and a deep page costs what the first one does; the first page
// passes a position before every row (queueStart).
const approvalListPending = `
SELECT ` + approvalColumns + ` FROM approvals
 WHERE tenant_id = $1 AND status = 'pending'
   AND ($2::uuid IS NULL OR run_id = $2)
   AND ($3::uuid IS NULL OR session_id = $3)
   AND ($4::text = '' OR risk = $4)
   AND ($5::timestamptz IS NULL OR created_at >= $5)
   AND ($6::timestamptz IS NULL OR created_at < $6)
   AND (-risk_rank, created_at, id) > ($7::int, $8::timestamptz, $9::uuid)
   AND ($11::text = '' OR tool_name = $11)
 ORDER BY -risk_rank, created_at, id
 LIMIT $10`

// approvalListExpiringSoon is the queue's "expiring soon" group: pending
// approvals due before $2, soonest first. The pending expiry index bounds
// the scan to approvals about to expire.
const approvalListExpiringSoon = `
SELECT ` + approvalColumns + ` FROM approvals
 WHERE tenant_id = $1 AND status = 'pending' AND expires_at <= $2
 ORDER BY expires_at, id
 LIMIT $3`

// approvalListHistory lists final approvals, newest resolution first;
// an empty $2 is any final status.
const approvalListHistory = `
SELECT ` + approvalColumns + ` FROM approvals
 WHERE tenant_id = $1 AND status <> 'pending'
   AND ($2::text = '' OR status = $2)
   AND ($3::uuid IS NULL OR run_id = $3)
   AND ($4::uuid IS NULL OR session_id = $4)
   AND ($5::text = '' OR risk = $5)
   AND ($6::text = '' OR resolved_by = $6)
   AND ($7::timestamptz IS NULL OR resolved_at >= $7)
   AND ($8::timestamptz IS NULL OR resolved_at < $8)
   AND (resolved_at, id) < ($9::timestamptz, $10::uuid)
   AND ($12::text = '' OR tool_name = $12)
   AND ($13::text = '' OR EXISTS (SELECT 1 FROM runs r WHERE r.id = approvals.run_id AND r.agent_id = $13))
   AND ($14::text = '' OR strpos(lower(action_summary || ' ' || tool_name), lower($14)) > 0)
 ORDER BY resolved_at DESC, id DESC
 LIMIT $11`

const (
	approvalListByIDs = `SELECT ` + approvalColumns + ` FROM approvals WHERE tenant_id = $1 AND id = ANY($2::uuid[])`
	// approvalCountPending counts at most $2 pending approvals: the queue
	// shows "50+" past a page, so counting never costs more than a page.
	approvalCountPending = `SELECT count(*) FROM (SELECT 1 FROM approvals WHERE tenant_id = $1 AND status = 'pending' LIMIT $2) p`
)

// approvalListPendingIdentical is the same call ($2 tool, $3 normalized
// arguments hash) pending in the tenant from runs other than $4, newest
// first, at most $5: a backward scan of approvals_pending_identical_idx.
const approvalListPendingIdentical = `
SELECT ` + approvalColumns + ` FROM approvals
 WHERE tenant_id = $1 AND tool_name = $2 AND normalized_arguments_hash = $3 AND status = 'pending'
   AND run_id <> $4
 ORDER BY created_at DESC
 LIMIT $5`

// approvalListAllPending is every tenant's pending approvals, oldest
// first, at most $1: what a policy deploy would revalidate
// (PreviewDeploy, an operator's tool, not a tenant's read).
const approvalListAllPending = `
SELECT ` + approvalColumns + ` FROM approvals
 WHERE status = 'pending'
 ORDER BY created_at, id
 LIMIT $1`

const overviewPendingByRisk = `
SELECT risk, count(*) FROM approvals
 WHERE tenant_id = $1 AND status = 'pending'
 GROUP BY risk`

// overviewLatency is over human resolutions in the 24 hours before $2.
const overviewLatency = `
SELECT count(*),
       COALESCE(percentile_cont(0.5) WITHIN GROUP (ORDER BY extract(epoch FROM resolved_at - created_at)), 0),
       COALESCE(percentile_cont(0.95) WITHIN GROUP (ORDER BY extract(epoch FROM resolved_at - created_at)), 0)
  FROM approvals
 WHERE tenant_id = $1 AND status IN ('approved', 'denied')
   AND resolved_at > $2::timestamptz - interval '24 hours' AND resolved_at <= $2`

// overviewAdvisoryDisagreement counts the approvals the advisory layer
// escalated that a human resolved in the last 24 hours, and how many of
// them the human approved: the owner disagreeing with the advisor.
const overviewAdvisoryDisagreement = `
SELECT count(*), count(*) FILTER (WHERE status = 'approved')
  FROM approvals
 WHERE tenant_id = $1 AND policy_reason = 'policy.advisory.escalated' AND status IN ('approved', 'denied')
   AND resolved_at > $2::timestamptz - interval '24 hours' AND resolved_at <= $2`

// overviewApprovalsByHour buckets expiries and approvals of the last 24
// hours; bucket 23 is the hour ending at $2.
const overviewApprovalsByHour = `
SELECT 23 - floor(extract(epoch FROM $2::timestamptz - resolved_at) / 3600)::int AS bucket,
       count(*) FILTER (WHERE status = 'expired'),
       count(*) FILTER (WHERE status = 'approved')
  FROM approvals
 WHERE tenant_id = $1 AND status IN ('expired', 'approved')
   AND resolved_at > $2::timestamptz - interval '24 hours' AND resolved_at <= $2::timestamptz
 GROUP BY 1`

// approvalRow is an approval with what only the service reads.
type approvalRow struct {
	api.Approval
	NormalizedArgumentsHash string
	RequestedScopes         []string
	AgentVersion            string
	RiskRank                int16
}

func scanApproval(row pgx.Row) (approvalRow, error) {
	var a approvalRow
	err := row.Scan(&a.ID, &a.TenantID, &a.PrincipalID, &a.RunID, &a.SessionID, &a.ActionKind,
		&a.ActionID, &a.ToolInvocationID, &a.ActionSummary, &a.ToolName, &a.SideEffect,
		&a.Arguments, &a.ArgumentDigests, &a.Risk, &a.PolicyReason, &a.PolicyVersion,
		&a.RevalidatedPolicyVersion, &a.Status, &a.Resolution,
		&a.ResolvedBy, &a.ResolvedAt, &a.ResolutionReason, &a.ExpiresAt, &a.CreatedAt,
		&a.NormalizedArgumentsHash, &a.RequestedScopes, &a.AgentVersion, &a.RiskRank,
		&a.OriginTrust, &a.ArgumentTrust, &a.PolicyExplanation, &a.AgentID, &a.Quorum, &a.Votes,
		&a.TaskGrantOffer, &a.TaskGrantNotCovered, &a.TaskGrantID)
	a.ArgumentsHash = a.NormalizedArgumentsHash
	return a, err
}

func collectApprovals(rows pgx.Rows) ([]approvalRow, error) {
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (approvalRow, error) { return scanApproval(r) })
}

// queueApprovalsInsert is the repository's create, queued on b: the stored
// row is scanned into out when the batch is read.
func queueApprovalsInsert(b *pgx.Batch, a approvalRow, out *approvalRow) {
	var inv any
	if a.ToolInvocationID != "" {
		inv = a.ToolInvocationID
	}
	b.Queue(approvalInsert, a.ID, a.TenantID, a.PrincipalID, a.SessionID,
		a.RunID, string(a.ActionKind), a.ActionID, inv, a.ExpiresAt, a.CreatedAt, a.ActionSummary,
		a.ToolName, string(a.SideEffect), string(a.Risk), a.Risk.Rank(), a.Arguments, a.ArgumentDigests,
		a.PolicyReason, a.PolicyVersion, a.NormalizedArgumentsHash, a.RequestedScopes, a.AgentVersion,
		string(a.OriginTrust), a.ArgumentTrust, a.PolicyExplanation, max(a.Quorum, 1), a.TaskGrantOffer,
		a.TaskGrantNotCovered).QueryRow(func(row pgx.Row) error {
		stored, err := scanApproval(row)
		if isUniqueViolation(err) {
			return fmt.Errorf("create approval: action_id already used: %w", ErrConflict)
		}
		if err != nil {
			return fmt.Errorf("create approval: %w", err)
		}
		*out = stored
		return nil
	})
}

// approvalsGet reads an approval of a tenant; another tenant's is
// ErrNotFound.
func approvalsGet(ctx context.Context, db DBTX, tenantID, id string) (approvalRow, error) {
	if !engine.ValidUUID(id) {
		return approvalRow{}, ErrNotFound
	}
	a, err := scanApproval(db.QueryRow(ctx, approvalGet, id, tenantID))
	if errors.Is(err, pgx.ErrNoRows) {
		return approvalRow{}, ErrNotFound
	}
	if err != nil {
		return approvalRow{}, fmt.Errorf("get approval: %w", err)
	}
	return a, nil
}

// resolveDue is resolve's answer for a pending approval past its expiry:
// the caller expires it (ExpireDue's path) and reports a conflict.
const resolveDue ResolveResult = "due"

// resolveVote is resolve's answer for a pending approval with a quorum
// whose votes the caller has not counted: the caller casts the vote
// (castVote) and, for a deny or the vote that reaches the quorum, resolves
// again with quorumMet.
const resolveVote ResolveResult = "vote"

// approvalResolution is what resolving an approval came to: applied (this
// call changed the row); same (already resolved the same way, the stored
// row with its original resolver and time); conflict (resolved
// differently, expired or cancelled first, the stored row); resolveDue
// (still pending but past expires_at, the stored row); resolveVote (still
// pending, with a quorum, the stored row).
type approvalResolution struct {
	result ResolveResult
	row    approvalRow
}

// queueApprovalsResolve queues a resolution under the pending guard on b, with the
// re-read a refused update answers from after it, in the same round trip;
// the outcome is in out once the batch is read. quorumMet lets the update
// resolve an approval with a quorum (the caller counted the votes). No
// such approval in the tenant is ErrNotFound.
func queueApprovalsResolve(b *pgx.Batch, tenantID, id, resolver string, res engine.ApprovalResolutionType, reason, seenHash string, quorumMet bool, now time.Time, out *approvalResolution) {
	b.Queue(approvalResolveIfPending, id, tenantID, string(res.Status()), string(res), now, resolver, reason, seenHash, quorumMet).QueryRow(func(row pgx.Row) error {
		a, err := scanApproval(row)
		if errors.Is(err, pgx.ErrNoRows) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("resolve approval: %w", err)
		}
		*out = approvalResolution{result: ResolveApplied, row: a}
		return nil
	})
	b.Queue(approvalGet, id, tenantID).QueryRow(func(row pgx.Row) error {
		stored, err := scanApproval(row)
		switch {
		case errors.Is(err, pgx.ErrNoRows):
			return ErrNotFound
		case err != nil:
			return fmt.Errorf("get approval: %w", err)
		case out.result == ResolveApplied:
			return nil
		}
		switch {
		case stored.Status == engine.ApprovalPending && seenHash != "" && stored.NormalizedArgumentsHash != seenHash:
			*out = approvalResolution{result: ResolveStale, row: stored}
		case stored.Status == engine.ApprovalPending && stored.Quorum > 1 && !quorumMet && now.Before(stored.ExpiresAt):
			*out = approvalResolution{result: resolveVote, row: stored}
		case stored.Status == engine.ApprovalPending:
			*out = approvalResolution{result: resolveDue, row: stored}
		case stored.Resolution == res:
			*out = approvalResolution{result: ResolveSame, row: stored}
		default:
			*out = approvalResolution{result: ResolveConflict, row: stored}
		}
		return nil
	})
}

// approvalsClaimDue locks up to limit due pending approvals and returns
// their ids.
func approvalsClaimDue(ctx context.Context, db DBTX, now time.Time, limit int) ([]string, error) {
	rows, err := db.Query(ctx, approvalClaimDue, now, limit)
	if err != nil {
		return nil, fmt.Errorf("claim due approvals: %w", err)
	}
	ids, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, fmt.Errorf("claim due approvals: %w", err)
	}
	return ids, nil
}

// approvalsExpire expires one approval; ok=false when it was no longer
// pending.
func approvalsExpire(ctx context.Context, db DBTX, id string, now time.Time) (approvalRow, bool, error) {
	a, err := scanApproval(db.QueryRow(ctx, approvalExpireIfPending, id, now))
	if errors.Is(err, pgx.ErrNoRows) {
		return approvalRow{}, false, nil
	}
	if err != nil {
		return approvalRow{}, false, fmt.Errorf("expire approval: %w", err)
	}
	return a, true, nil
}

// approvalsCancelForRun is cancel_for_run: the approvals it cancelled.
func approvalsCancelForRun(ctx context.Context, db DBTX, runID string, now time.Time) ([]approvalRow, error) {
	rows, err := db.Query(ctx, approvalCancelForRun, runID, now)
	if err != nil {
		return nil, fmt.Errorf("cancel approvals: %w", err)
	}
	out, err := collectApprovals(rows)
	if err != nil {
		return nil, fmt.Errorf("cancel approvals: %w", err)
	}
	return out, nil
}

// approvalsSetRevalidated records the policy version an approval was
// revalidated under.
func approvalsSetRevalidated(ctx context.Context, db DBTX, id, policyVersion string) error {
	if _, err := db.Exec(ctx, approvalSetRevalidated, id, policyVersion); err != nil {
		return fmt.Errorf("record revalidation: %w", err)
	}
	return nil
}

// approvalsListPending reads up to limit pending approvals of the tenant
// in queue order after the position c.
func approvalsListPending(ctx context.Context, db DBTX, tenantID string, f ApprovalFilter, c approvalCursor, limit int) ([]approvalRow, error) {
	rows, err := db.Query(ctx, approvalListPending, tenantID, nullUUID(f.RunID), nullUUID(f.SessionID),
		string(f.Risk), f.Since, f.Until, -int(c.Rank), c.At, c.ID, limit, f.Tool)
	if err != nil {
		return nil, err
	}
	return collectApprovals(rows)
}

// approvalsListAllPending reads up to limit pending approvals of every
// tenant, oldest first.
func approvalsListAllPending(ctx context.Context, db DBTX, limit int) ([]approvalRow, error) {
	rows, err := db.Query(ctx, approvalListAllPending, limit)
	if err != nil {
		return nil, fmt.Errorf("list pending approvals: %w", err)
	}
	return collectApprovals(rows)
}

// approvalsListHistory reads up to limit final approvals of the tenant
// (of status, "" for any), newest resolution first, after the position c.
func approvalsListHistory(ctx context.Context, db DBTX, tenantID, status string, f ApprovalFilter, c approvalCursor, limit int) ([]approvalRow, error) {
	rows, err := db.Query(ctx, approvalListHistory, tenantID, status, nullUUID(f.RunID),
		nullUUID(f.SessionID), string(f.Risk), f.ResolvedBy, f.Since, f.Until, c.At, c.ID, limit,
		f.Tool, f.AgentID, f.Text)
	if err != nil {
		return nil, err
	}
	return collectApprovals(rows)
}

// approvalsListExpiringSoon reads up to limit of the tenant's pending
// approvals that expire at or before by, soonest first.
func approvalsListExpiringSoon(ctx context.Context, db DBTX, tenantID string, by time.Time, limit int) ([]approvalRow, error) {
	rows, err := db.Query(ctx, approvalListExpiringSoon, tenantID, by, limit)
	if err != nil {
		return nil, err
	}
	return collectApprovals(rows)
}

// queueApprovalsListByIDs queues on b the read of the tenant's approvals
// among ids, into out; ids the tenant does not have are left out.
func queueApprovalsListByIDs(b *pgx.Batch, tenantID string, ids []string, out *[]approvalRow) {
	b.Queue(approvalListByIDs, tenantID, ids).Query(func(rows pgx.Rows) (err error) {
		*out, err = collectApprovals(rows)
		return err
	})
}

// queueApprovalsListPendingIdentical queues on b the read of up to limit
// pending approvals of the tenant for the same call as a (its tool and
// normalized arguments hash) from runs other than a's, newest first.
func queueApprovalsListPendingIdentical(b *pgx.Batch, a approvalRow, limit int, out *[]approvalRow) {
	b.Queue(approvalListPendingIdentical, a.TenantID, a.ToolName, a.NormalizedArgumentsHash, a.RunID, limit).Query(func(rows pgx.Rows) (err error) {
		if *out, err = collectApprovals(rows); err != nil {
			return fmt.Errorf("list identical approvals: %w", err)
		}
		return nil
	})
}

// queueApprovalsCountPending queues on b the count, up to limit, of the
// tenant's pending approvals, into n.
func queueApprovalsCountPending(b *pgx.Batch, tenantID string, limit int, n *int) {
	b.Queue(approvalCountPending, tenantID, limit).QueryRow(func(row pgx.Row) error {
		return row.Scan(n)
	})
}

// approvalsCountPendingByRisk counts the tenant's pending approvals by
// risk; a risk with none is absent.
func approvalsCountPendingByRisk(ctx context.Context, db DBTX, tenantID string) (map[engine.RiskLevel]int, error) {
	rows, err := db.Query(ctx, overviewPendingByRisk, tenantID)
	if err != nil {
		return nil, err
	}
	type riskCount struct {
		Risk  engine.RiskLevel
		Count int
	}
	counts, err := pgx.CollectRows(rows, pgx.RowToStructByPos[riskCount])
	if err != nil {
		return nil, err
	}
	out := make(map[engine.RiskLevel]int, len(counts))
	for _, c := range counts {
		out[c.Risk] = c.Count
	}
	return out, nil
}

// approvalsResolutionLatency is how many approvals humans resolved in the
// 24 hours before now, and the median and 95th percentile of the time
// they took, in seconds.
func approvalsResolutionLatency(ctx context.Context, db DBTX, tenantID string, now time.Time) (n int, p50, p95 float64, err error) {
	err = db.QueryRow(ctx, overviewLatency, tenantID, now).Scan(&n, &p50, &p95)
	return n, p50, p95, err
}

// approvalsAdvisoryDisagreement is how many advisory escalations humans
// resolved in the 24 hours before now, and how many they approved.
func approvalsAdvisoryDisagreement(ctx context.Context, db DBTX, tenantID string, now time.Time) (resolved, approved int, err error) {
	err = db.QueryRow(ctx, overviewAdvisoryDisagreement, tenantID, now).Scan(&resolved, &approved)
	return resolved, approved, err
}

// approvalsHour is what one of the 24 hours before now resolved: bucket
// 23 is the hour ending at now.
type approvalsHour struct {
	Bucket, Expired, Approved int
}

// approvalsResolvedByHour buckets the tenant's expiries and approvals of
// the 24 hours before now; an hour with neither is absent.
func approvalsResolvedByHour(ctx context.Context, db DBTX, tenantID string, now time.Time) ([]approvalsHour, error) {
	rows, err := db.Query(ctx, overviewApprovalsByHour, tenantID, now)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, pgx.RowToStructByPos[approvalsHour])
}

// resolvedPayload is the approval.resolved event for every way an approval
// leaves pending; expiry and cancellation carry resolution "expired" or
// "cancelled" and no resolver.
func resolvedPayload(a approvalRow) api.ApprovalResolvedPayload {
	resolution := string(a.Resolution)
	if resolution == "" {
		resolution = string(a.Status)
	}
	return api.ApprovalResolvedPayload{
		ApprovalID: a.ID, InvocationID: a.ToolInvocationID, ToolName: a.ToolName, Risk: a.Risk,
		Status: a.Status, Resolution: resolution, ResolvedBy: a.ResolvedBy,
	}
}

// GetApproval reads one approval of the principal's tenant; another
// tenant's approval is ErrNotFound, never ErrForbidden; a principal without
// approval.read is ErrForbidden whatever the id.
func (s *Service) GetApproval(ctx context.Context, p engine.Principal, id string) (api.Approval, error) {
	if err := requireScope(p, scopeApprovalRead); err != nil {
		return api.Approval{}, fmt.Errorf("service: get approval: %w", err)
	}
	a, err := approvalsGet(ctx, s.pool, p.TenantID, id)
	if err != nil {
		return api.Approval{}, fmt.Errorf("service: get approval: %w", err)
	}
	return a.Approval, nil
}

// GetApprovalArguments is what an approval's detail page shows of the
// action's arguments: the invocation's stored arguments, not the approval's
// view cut at engine.MaxViewChars, redacted by engine.RedactedDetail (whole
// up to engine.MaxDetailChars per value; sensitive keys and credential-
// shaped values still redacted). The approval is read first, in the
// principal's tenant, so another tenant's approval is ErrNotFound.
func (s *Service) GetApprovalArguments(ctx context.Context, p engine.Principal, id string) (view map[string]any, digests map[string]string, err error) {
	if err := requireScope(p, scopeApprovalRead); err != nil {
		return nil, nil, fmt.Errorf("service: get approval arguments: %w", err)
	}
	a, err := approvalsGet(ctx, s.pool, p.TenantID, id)
	if err != nil {
		return nil, nil, fmt.Errorf("service: get approval arguments: %w", err)
	}
	inv, ok, err := invocationsGetByAction(ctx, s.pool, a.RunID, a.ActionID)
	if err != nil {
		return nil, nil, fmt.Errorf("service: get approval arguments: %w", err)
	}
	if !ok {
		return nil, nil, fmt.Errorf("service: get approval arguments: invocation: %w", ErrNotFound)
	}
	view, digests = engine.RedactedDetail(inv.Action.Arguments)
	return view, digests, nil
}

const (
	approvalsDefaultLimit = 50
	approvalsMaxLimit     = 200
)

// approvalCursor is the keyset position after the last item of a page.
type approvalCursor struct {
	Rank int16     `json:"r,omitempty"`
	At   time.Time `json:"t"`
	ID   string    `json:"i"`
}

// The positions before the first row of each order: a rank above every
// risk, and instants before (queue) or after (history) every row.
var (
	queueStart   = approvalCursor{Rank: math.MaxInt16, At: time.Date(1, 1, 1, 0, 0, 0, 0, time.UTC), ID: "00000000-0000-0000-0000-000000000000"}
	historyStart = approvalCursor{At: time.Date(9999, 12, 31, 0, 0, 0, 0, time.UTC), ID: "ffffffff-ffff-ffff-ffff-ffffffffffff"}
)

func encodeCursor(c approvalCursor) string {
	b, _ := json.Marshal(c) // a struct of plain fields always encodes
	return base64.RawURLEncoding.EncodeToString(b)
}

func decodeCursor(s string) (*approvalCursor, error) {
	if s == "" {
		return nil, nil
	}
	b, err := base64.RawURLEncoding.DecodeString(s)
	var c approvalCursor
	if err == nil {
		err = json.Unmarshal(b, &c)
	}
	if err != nil || !engine.ValidUUID(c.ID) {
		return nil, &InvalidError{Msg: "invalid cursor"}
	}
	return &c, nil
}

// ListApprovals lists the principal's tenant's approvals: pending in queue
// order (risk rank descending, then oldest first), or final ones newest
// resolution first, one page at a time. It needs approval.read.
func (s *Service) ListApprovals(ctx context.Context, p engine.Principal, f ApprovalFilter) (api.ApprovalPage, error) {
	if err := requireScope(p, scopeApprovalRead); err != nil {
		return api.ApprovalPage{}, fmt.Errorf("service: list approvals: %w", err)
	}
	limit := clampLimit(f.Limit, approvalsDefaultLimit, approvalsMaxLimit)
	cur, err := decodeCursor(f.Cursor)
	if err != nil {
		return api.ApprovalPage{}, err
	}
	if f.Risk != "" && !f.Risk.Valid() {
		return api.ApprovalPage{}, &InvalidError{Msg: "unknown risk"}
	}
	pending := f.Status == "" || f.Status == engine.ApprovalPending
	status := ""
	if !pending && f.Status != StatusResolved {
		if !f.Status.Valid() {
			return api.ApprovalPage{}, &InvalidError{Msg: "unknown status"}
		}
		status = string(f.Status)
	}
	// A malformed run or session id matches nothing rather than erroring.
	if (f.RunID != "" && !engine.ValidUUID(f.RunID)) || (f.SessionID != "" && !engine.ValidUUID(f.SessionID)) {
		return api.ApprovalPage{Items: []api.Approval{}}, nil
	}
	var list []approvalRow
	if pending {
		c := queueStart
		if cur != nil {
			c = *cur
		}
		list, err = approvalsListPending(ctx, s.pool, p.TenantID, f, c, limit+1)
	} else {
		c := historyStart
		if cur != nil {
			c = *cur
		}
		list, err = approvalsListHistory(ctx, s.pool, p.TenantID, status, f, c, limit+1)
	}
	if err != nil {
		return api.ApprovalPage{}, fmt.Errorf("service: list approvals: %w", err)
	}
	page := api.ApprovalPage{Items: make([]api.Approval, 0, min(len(list), limit))}
	for i, a := range list {
		if i == limit {
			last := list[i-1]
			c := approvalCursor{Rank: last.RiskRank, At: last.CreatedAt, ID: last.ID}
			if !pending && last.ResolvedAt != nil {
				c = approvalCursor{At: *last.ResolvedAt, ID: last.ID}
			}
			page.NextCursor = encodeCursor(c)
			break
		}
		page.Items = append(page.Items, a.Approval)
	}
	return page, nil
}

// ExpiringSoon lists up to limit of the tenant's pending approvals that
// expire within window of now, soonest first: the queue's "expiring soon"
// group. It needs approval.read.
func (s *Service) ExpiringSoon(ctx context.Context, p engine.Principal, window time.Duration, limit int) ([]api.Approval, error) {
	if err := requireScope(p, scopeApprovalRead); err != nil {
		return nil, fmt.Errorf("service: expiring approvals: %w", err)
	}
	rows, err := approvalsListExpiringSoon(ctx, s.pool, p.TenantID, s.now().Add(window), clampLimit(limit, approvalsDefaultLimit, approvalsMaxLimit))
	if err != nil {
		return nil, fmt.Errorf("service: expiring approvals: %w", err)
	}
	out := make([]api.Approval, len(rows))
	for i, a := range rows {
		out[i] = a.Approval
	}
	return out, nil
}

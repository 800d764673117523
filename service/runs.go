package service

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"gatehouse/api"
	"gatehouse/engine"
)

const runColumns = `id::text, tenant_id, principal_id, session_id::text, agent_id, agent_version,
       policy_profile, principal_scopes, status, failure_reason, checkpoint, deadline,
       worker_id, lease_expires_at, fencing_token, created_at, updated_at`

const runInsert = `
INSERT INTO runs (id, tenant_id, principal_id, session_id, agent_id, agent_version, policy_profile,
                  principal_scopes, status, deadline, created_at, updated_at)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, 'QUEUED', $9, $10, $10)
RETURNING ` + runColumns

const runGet = `SELECT ` + runColumns + ` FROM runs WHERE id = $1 AND tenant_id = $2`

// runLock takes the run's row lock. Every flow that changes a run and its
// approvals locks the run first, so two resolutions of one run's approvals
// serialize and the second sees whether any approval is still pending.
const runLock = `SELECT ` + runColumns + ` FROM runs WHERE id = $1 AND tenant_id = $2 FOR UPDATE`

// runLockForApproval is runLock for the run of an approval ($1) of the
// tenant, found and locked in one statement: no approval, or one of
// another tenant, is no row.
const runLockForApproval = `SELECT ` + runColumns + ` FROM runs
 WHERE id = (SELECT run_id FROM approvals WHERE id = $1 AND tenant_id = $2) AND tenant_id = $2
   FOR UPDATE`

// runSessionExists reports whether the tenant has a run in the session.
const runSessionExists = `SELECT EXISTS (SELECT 1 FROM runs WHERE tenant_id = $1 AND session_id = $2)`

// runSessionHasPrincipal reports whether principal $3 works a run of the
// session.
const runSessionHasPrincipal = `SELECT EXISTS (SELECT 1 FROM runs WHERE tenant_id = $1 AND session_id = $2 AND principal_id = $3)`

// runClaim takes the oldest QUEUED run of a tenant, or a RUNNING one whose
// lease expired, skipping rows another claimer holds, and leases it with the
// next fencing token.
const runClaim = `
UPDATE runs
   SET status = 'RUNNING', worker_id = $2, lease_expires_at = $3,
       fencing_token = fencing_token + 1, updated_at = $4
 WHERE id = (
        SELECT id FROM runs
         WHERE tenant_id = $1
           AND (status = 'QUEUED' OR (status = 'RUNNING' AND lease_expires_at <= $4))
           AND ($5::uuid IS NULL OR id = $5)
         ORDER BY created_at, id
         LIMIT 1
           FOR UPDATE SKIP LOCKED)
RETURNING ` + runColumns

// runHeartbeat extends a lease its holder still holds.
const runHeartbeat = `
UPDATE runs SET lease_expires_at = $5, updated_at = $6
 WHERE id = $1 AND tenant_id = $2 AND status = 'RUNNING'
   AND worker_id = $3 AND fencing_token = $4 AND lease_expires_at > $6
RETURNING ` + runColumns

// runTransition moves a run from one of the given statuses to another,
// ending any lease; $5 bumps the fencing token so a fenced worker's next
// call is stale.
const runTransition = `
UPDATE runs
   SET status = $3, failure_reason = $4, fencing_token = fencing_token + $5,
       lease_expires_at = NULL, updated_at = $6
 WHERE id = $1 AND status = ANY($2)
RETURNING ` + runColumns

// runRequeueIfSettled re-queues a parked run once none of its approvals is
// pending any more, so a worker claims and resumes it, and writes the
// run.queued event ($3, $4: type and payload) only when it did, in the
// same statement.
const runRequeueIfSettled = `
WITH requeued AS (
UPDATE runs SET status = 'QUEUED', updated_at = $2
 WHERE id = $1 AND status = 'WAITING_FOR_APPROVAL'
   AND NOT EXISTS (SELECT 1 FROM approvals WHERE run_id = $1 AND status = 'pending')
RETURNING *
), queued AS (
INSERT INTO events (tenant_id, run_id, type, payload, created_at)
SELECT tenant_id, id, $3, $4, $2 FROM requeued
)
SELECT ` + runColumns + ` FROM requeued`

// runCheckpointPark records a new pending approval (park step 3).
const runCheckpointPark = `
UPDATE runs
   SET checkpoint = jsonb_set(jsonb_set(checkpoint, '{pending_approval_ids}',
                      COALESCE(checkpoint->'pending_approval_ids', '[]'::jsonb) || to_jsonb($2::text)),
                      '{step_number}', to_jsonb($3::int)),
       updated_at = $4
 WHERE id = $1`

// runPark is park step 4: guarded on RUNNING under the caller's fencing
// token, so a run cancelled concurrently is not parked.
const runPark = `
UPDATE runs SET status = 'WAITING_FOR_APPROVAL', updated_at = $3
 WHERE id = $1 AND status = 'RUNNING' AND fencing_token = $2`

// runReleaseLease is park step 5, last. worker_id stays as the last holder
// so a retried proposal of that worker can be answered from the record.
const runReleaseLease = `
UPDATE runs SET lease_expires_at = NULL, updated_at = $2
 WHERE id = $1 AND status = 'WAITING_FOR_APPROVAL'`

// runCheckpointSettle drops a settled approval from the checkpoint and, when
// it was approved, lists its invocation as awaiting resume.
const runCheckpointSettle = `
UPDATE runs
   SET checkpoint = jsonb_set(jsonb_set(checkpoint, '{pending_approval_ids}',
                      COALESCE(checkpoint->'pending_approval_ids', '[]'::jsonb) - $2::text),
                      '{resumable_invocation_ids}',
                      COALESCE(checkpoint->'resumable_invocation_ids', '[]'::jsonb)
                        || CASE WHEN $3::text = '' THEN '[]'::jsonb ELSE to_jsonb($3::text) END),
       updated_at = $4
 WHERE id = $1`

// runCheckpointResumed drops a resumed invocation from the checkpoint.
const runCheckpointResumed = `
UPDATE runs
   SET checkpoint = jsonb_set(checkpoint, '{resumable_invocation_ids}',
                      COALESCE(checkpoint->'resumable_invocation_ids', '[]'::jsonb) - $2::text),
       updated_at = $3
 WHERE id = $1`

// runCheckpointCancel empties the pending approvals of a cancelled run, as
// resolve and expiry drop theirs: every one of them was just cancelled.
const runCheckpointCancel = `
UPDATE runs SET checkpoint = jsonb_set(checkpoint, '{pending_approval_ids}', '[]'::jsonb)
 WHERE id = $1`

func scanRun(row pgx.Row) (api.Run, error) {
	var r api.Run
	err := row.Scan(&r.ID, &r.TenantID, &r.PrincipalID, &r.SessionID, &r.AgentID, &r.AgentVersion,
		&r.PolicyProfile, &r.PrincipalScopes, &r.Status, &r.FailureReason, &r.Checkpoint, &r.Deadline,
		&r.WorkerID, &r.LeaseExpiresAt, &r.FencingToken, &r.CreatedAt, &r.UpdatedAt)
	if r.Checkpoint.PendingApprovalIDs == nil {
		r.Checkpoint.PendingApprovalIDs = []string{}
	}
	return r, err
}

// runsGet reads a run of a tenant; another tenant's run is ErrNotFound.
func runsGet(ctx context.Context, db DBTX, tenantID, runID string, lock bool) (api.Run, error) {
	if !engine.ValidUUID(runID) {
		return api.Run{}, ErrNotFound
	}
	q := runGet
	if lock {
		q = runLock
	}
	return runFrom(db.QueryRow(ctx, q, runID, tenantID))
}

// runFrom scans a run read by id; no row is ErrNotFound.
func runFrom(row pgx.Row) (api.Run, error) {
	r, err := scanRun(row)
	if errors.Is(err, pgx.ErrNoRows) {
		return api.Run{}, ErrNotFound
	}
	if err != nil {
		return api.Run{}, fmt.Errorf("get run: %w", err)
	}
	return r, nil
}

// lockRunForWorker locks a run for a worker call and checks the lease:
// ErrNotFound for no such run in the tenant, ErrStaleLease when the run is
// not RUNNING under this worker's unexpired lease and fencing token (the run
// is returned so the caller can answer a retry from the record).
func lockRunForWorker(ctx context.Context, tx DBTX, tenantID, runID string, lease api.Lease, now time.Time) (api.Run, error) {
	r, err := runsGet(ctx, tx, tenantID, runID, true)
	if err != nil {
		return r, err
	}
	return r, checkLease(r, lease, now)
}

// checkLease is ErrStaleLease unless the run is RUNNING under this
// worker's unexpired lease and fencing token.
func checkLease(r api.Run, lease api.Lease, now time.Time) error {
	if r.Status != api.RunRunning || r.WorkerID != lease.WorkerID || r.FencingToken != lease.FencingToken ||
		r.LeaseExpiresAt == nil || !now.Before(*r.LeaseExpiresAt) {
		return ErrStaleLease
	}
	return nil
}

// lockRunForProposal is lockRunForWorker with the record of the proposed
// action (found=false when it is new) read in the same round trip, after
// the lock is taken, so it is what the lock holder sees. The run is
// returned with ErrStaleLease so the caller can answer a retry.
func lockRunForProposal(ctx context.Context, tx pgx.Tx, tenantID, runID, actionID string, lease api.Lease, now time.Time) (api.Run, invocationRow, bool, error) {
	if !engine.ValidUUID(runID) {
		return api.Run{}, invocationRow{}, false, ErrNotFound
	}
	var (
		r         api.Run
		inv       invocationRow
		found     bool
		runErr    error
		lookupErr error
	)
	// The queued reads keep their errors rather than fail the batch: pgx
	// drops a connection's cached statements of a whole batch a callback
	// fails, and an unknown run is an answer here, not a failure of the
	// batch.
	b := &pgx.Batch{}
	queueRunsLock(b, tenantID, runID, &r, &runErr)
	queueInvocationsGetByAction(b, runID, actionID, &inv, &found, &lookupErr)
	if err := tx.SendBatch(ctx, b).Close(); err != nil {
		return api.Run{}, invocationRow{}, false, fmt.Errorf("lock run: %w", err)
	}
	if runErr != nil {
		return api.Run{}, invocationRow{}, false, runErr
	}
	if lookupErr != nil {
		return r, invocationRow{}, false, lookupErr
	}
	return r, inv, found, checkLease(r, lease, now)
}

// runsTransition moves a run from one of from to to; ok=false when the run
// was in none of them (someone else moved it first).
func runsTransition(ctx context.Context, db DBTX, runID string, from []string, to, reason string, fence bool, now time.Time) (api.Run, bool, error) {
	bump := 0
	if fence {
		bump = 1
	}
	r, err := scanRun(db.QueryRow(ctx, runTransition, runID, from, to, reason, bump, now))
	if errors.Is(err, pgx.ErrNoRows) {
		return api.Run{}, false, nil
	}
	if err != nil {
		return api.Run{}, false, fmt.Errorf("run %s -> %s: %w", runID, to, err)
	}
	return r, true, nil
}

// failRun fails a run in one of the from statuses and writes run.failed;
// ok=false when the run was in none of them.
func failRun(ctx context.Context, db DBTX, runID string, from []string, reason string, now time.Time) (api.Run, bool, error) {
	r, ok, err := runsTransition(ctx, db, runID, from, api.RunFailed, reason, false, now)
	if err != nil || !ok {
		return r, ok, err
	}
	return r, true, insertEvent(ctx, db, r.TenantID, r.ID, now, api.RunFailedPayload{FailureReason: reason})
}

// queueRunsRequeueIfSettled re-queues a parked run with no pending approval left
// and writes run.queued; a run that stays as it is is no error.
// It is queued on b, in its caller's round trip.
func queueRunsRequeueIfSettled(b *pgx.Batch, runID string, now time.Time) error {
	payload, err := eventPayload(api.RunQueuedPayload{})
	if err != nil {
		return err
	}
	b.Queue(runRequeueIfSettled, runID, now, api.EventRunQueued, payload).QueryRow(func(row pgx.Row) error {
		if _, err := scanRun(row); err != nil && !errors.Is(err, pgx.ErrNoRows) {
			return fmt.Errorf("requeue run: %w", err)
		}
		return nil
	})
	return nil
}

// runsInsert stores a new QUEUED run.
func runsInsert(ctx context.Context, db DBTX, id, tenantID, principalID, sessionID, agentID, agentVersion, profile string, scopes []string, deadline *time.Time, now time.Time) (api.Run, error) {
	r, err := scanRun(db.QueryRow(ctx, runInsert, id, tenantID, principalID, sessionID, agentID,
		agentVersion, profile, scopes, deadline, now))
	if err != nil {
		return api.Run{}, fmt.Errorf("insert run: %w", err)
	}
	return r, nil
}

// queueRunsLock is runsGet with the lock, queued on b: the run, or the
// error runsGet would return, is in r and runErr once the batch is read,
// and the batch itself never fails on it. runID must be a uuid.
func queueRunsLock(b *pgx.Batch, tenantID, runID string, r *api.Run, runErr *error) {
	b.Queue(runLock, runID, tenantID).QueryRow(func(row pgx.Row) error {
		*r, *runErr = runFrom(row)
		return nil
	})
}

// queueRunsGet is runsGet without the lock, queued on b: the run, or
// ErrNotFound, is in r and runErr once the batch is read. runID must be a
// uuid.
func queueRunsGet(b *pgx.Batch, tenantID, runID string, r *api.Run, runErr *error) {
	b.Queue(runGet, runID, tenantID).QueryRow(func(row pgx.Row) error {
		*r, *runErr = runFrom(row)
		return nil
	})
}

// runsLockForApproval locks the run of an approval of the tenant; no such
// approval in the tenant is ErrNotFound.
func runsLockForApproval(ctx context.Context, db DBTX, tenantID, approvalID string) (api.Run, error) {
	if !engine.ValidUUID(approvalID) {
		return api.Run{}, ErrNotFound
	}
	return runFrom(db.QueryRow(ctx, runLockForApproval, approvalID, tenantID))
}

// runsClaim leases the next claimable run of the tenant (only runID when
// it is not nil) until leaseUntil; ok=false when there is none.
func runsClaim(ctx context.Context, db DBTX, tenantID, workerID string, runID any, leaseUntil, now time.Time) (api.Run, bool, error) {
	r, err := scanRun(db.QueryRow(ctx, runClaim, tenantID, workerID, leaseUntil, now, runID))
	if errors.Is(err, pgx.ErrNoRows) {
		return api.Run{}, false, nil
	}
	if err != nil {
		return api.Run{}, false, fmt.Errorf("claim: %w", err)
	}
	return r, true, nil
}

// runsHeartbeat extends the lease until leaseUntil; ok=false when the
// lease is no longer held (or there is no such run in the tenant).
func runsHeartbeat(ctx context.Context, db DBTX, tenantID, runID string, lease api.Lease, leaseUntil, now time.Time) (api.Run, bool, error) {
	r, err := scanRun(db.QueryRow(ctx, runHeartbeat, runID, tenantID, lease.WorkerID, lease.FencingToken, leaseUntil, now))
	if errors.Is(err, pgx.ErrNoRows) {
		return api.Run{}, false, nil
	}
	if err != nil {
		return api.Run{}, false, err
	}
	return r, true, nil
}

// queueRunsCheckpointPark queues park step 3 on b.
func queueRunsCheckpointPark(b *pgx.Batch, runID, approvalID string, step int, now time.Time) {
	b.Queue(runCheckpointPark, runID, approvalID, step, now)
}

// queueRunsPark queues park step 4 on b; a run no longer RUNNING under
// fencingToken fails the batch with ErrConflict.
func queueRunsPark(b *pgx.Batch, runID string, fencingToken int64, now time.Time) {
	b.Queue(runPark, runID, fencingToken, now).Exec(func(tag pgconn.CommandTag) error {
		if tag.RowsAffected() == 0 {
			return fmt.Errorf("park: run left RUNNING: %w", ErrConflict)
		}
		return nil
	})
}

// queueRunsReleaseLease queues park step 5 on b.
func queueRunsReleaseLease(b *pgx.Batch, runID string, now time.Time) {
	b.Queue(runReleaseLease, runID, now)
}

// queueRunsCheckpointSettle queues on b the checkpoint update of a settled
// approval; resumableInvocation "" lists nothing for resume.
func queueRunsCheckpointSettle(b *pgx.Batch, runID, approvalID, resumableInvocation string, now time.Time) {
	b.Queue(runCheckpointSettle, runID, approvalID, resumableInvocation, now)
}

// runsCheckpointResumed drops a resumed invocation from the checkpoint.
func runsCheckpointResumed(ctx context.Context, db DBTX, runID, invocationID string, now time.Time) error {
	if _, err := db.Exec(ctx, runCheckpointResumed, runID, invocationID, now); err != nil {
		return fmt.Errorf("run checkpoint: %w", err)
	}
	return nil
}

// runsCheckpointCancel empties a cancelled run's pending approvals.
func runsCheckpointCancel(ctx context.Context, db DBTX, runID string) error {
	if _, err := db.Exec(ctx, runCheckpointCancel, runID); err != nil {
		return fmt.Errorf("clear checkpoint: %w", err)
	}
	return nil
}

// pastDeadline reports whether the run's deadline has passed at now.
func pastDeadline(r api.Run, now time.Time) bool {
	return r.Deadline != nil && !now.Before(*r.Deadline)
}

// runSnapshot is what the engine knows of the run: the stamp, never
// current scopes.
func runSnapshot(r api.Run) engine.RunSnapshot {
	return engine.RunSnapshot{
		ID: r.ID, TenantID: r.TenantID, SessionID: r.SessionID, PrincipalID: r.PrincipalID,
		PrincipalScopes: r.PrincipalScopes, AgentVersion: r.AgentVersion,
		PolicyProfile: r.PolicyProfile, Deadline: r.Deadline,
	}
}

// stampPrincipal is the run's principal as stamped at submission.
func stampPrincipal(r api.Run) engine.Principal {
	return engine.Principal{ID: r.PrincipalID, TenantID: r.TenantID, Scopes: r.PrincipalScopes}
}

// runsSessionExists reports whether a session is the tenant's: it has a
// run there. A session of another tenant does not exist for it.
func runsSessionExists(ctx context.Context, db DBTX, tenantID, sessionID string) (bool, error) {
	if !engine.ValidUUID(sessionID) {
		return false, nil
	}
	var ok bool
	if err := db.QueryRow(ctx, runSessionExists, tenantID, sessionID).Scan(&ok); err != nil {
		return false, fmt.Errorf("session exists: %w", err)
	}
	return ok, nil
}

// runsSessionHasPrincipal reports whether principal works a run of the
// tenant's session.
func runsSessionHasPrincipal(ctx context.Context, db DBTX, tenantID, sessionID, principalID string) (bool, error) {
	var ok bool
	if err := db.QueryRow(ctx, runSessionHasPrincipal, tenantID, sessionID, principalID).Scan(&ok); err != nil {
		return false, fmt.Errorf("session principal: %w", err)
	}
	return ok, nil
}

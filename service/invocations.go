package service

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"gatehouse/api"
	"gatehouse/engine"
	"gatehouse/internal/pgdb"
)

// invocationListColumns are what a listing shows (api.Invocation); a row
// read for a flow adds the arguments and the classified action it decodes.
const (
	invocationListColumns = `id::text, run_id::text, tenant_id, action_id::text, kind, tool_name, tool_version,
       summary, step_number, status, side_effect, risk, idempotency_class, origin_trust,
       normalized_arguments_hash, COALESCE(effective_arguments_hash, ''), decision, policy_version,
       COALESCE(approval_id::text, ''), created_at, updated_at, COALESCE(task_grant_id::text, '')`
	invocationColumns = invocationListColumns + `,
       arguments, effective_arguments, action, reason_code,
       COALESCE(authorized_worker_id, ''), COALESCE(authorized_fencing_token, 0)`
)

// invocationInsert records a proposal with its classification and decision.
// Its status is PROPOSED, WAITING_FOR_APPROVAL or DENIED: never AUTHORIZED,
// which only invocationAuthorize writes.
const invocationInsert = `
INSERT INTO actions (id, run_id, tenant_id, action_id, kind, tool_name, tool_version, summary,
       step_number, status, arguments, normalized_arguments_hash, effective_arguments,
       effective_arguments_hash, action, decision, policy_version, side_effect, risk,
       idempotency_class, origin_trust, reason_code, approval_id, created_at, updated_at, advisory, task_grant_id)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9,
        CASE WHEN $10::text IN ('PROPOSED', 'WAITING_FOR_APPROVAL', 'DENIED') THEN $10::text END,
        $11, $12, $13, $14, $15, $16, $17, $18, $19, $20, $21, $22, $23, $24, $24, $25, $26)
RETURNING ` + invocationColumns

const invocationGetByAction = `SELECT ` + invocationColumns + `
  FROM actions WHERE run_id = $1 AND action_id = $2`

const invocationGet = `SELECT ` + invocationColumns + `
  FROM actions WHERE id = $1 AND run_id = $2 AND tenant_id = $3`

// invocationGetForApproval reads the invocation an approval ($1) asked
// about, by its run and action.
const invocationGetForApproval = `SELECT ` + invocationColumns + `
  FROM actions WHERE (run_id, action_id) = (SELECT run_id, action_id FROM approvals WHERE id = $1)`

const invocationListForRun = `SELECT ` + invocationListColumns + `
  FROM actions WHERE run_id = $1 ORDER BY actions.created_at, actions.id`

// invocationAuthorize is the single gate's only write: the one statement in
// Gatehouse that moves an invocation to AUTHORIZED (gate 3). It is guarded
// on the two states an authorization may leave, so a repeat changes nothing,
// and records the lease that authorized it: only that lease is ever told
// "authorized" again.
const invocationAuthorize = `
UPDATE actions
   SET status = 'AUTHORIZED', authorized_worker_id = $3, authorized_fencing_token = $4, updated_at = $2
 WHERE id = $1 AND status IN ('PROPOSED', 'WAITING_FOR_APPROVAL')
RETURNING ` + invocationColumns

// invocationDenyWaiting ends an invocation that waited for approval.
const invocationDenyWaiting = `
UPDATE actions SET status = 'DENIED', reason_code = $2, updated_at = $3
 WHERE id = $1 AND status = 'WAITING_FOR_APPROVAL'`

// invocationCancelForRun ends every invocation of a cancelled run that had
// not been authorized.
const invocationCancelForRun = `
UPDATE actions SET status = 'CANCELLED', reason_code = 'approval.cancelled', updated_at = $2
 WHERE run_id = $1 AND status IN ('PROPOSED', 'WAITING_FOR_APPROVAL')`

// invocationRecordResult records the outcome of an authorized execution.
const invocationRecordResult = `
UPDATE actions SET status = $2, updated_at = $3
 WHERE id = $1 AND status = 'AUTHORIZED'
RETURNING ` + invocationColumns

// invocationCountDenials counts a run's identical denied proposals, the
// circuit breaker's key.
const invocationCountDenials = `
SELECT count(*) FROM actions
 WHERE run_id = $1 AND tool_name = $2 AND normalized_arguments_hash = $3
   AND reason_code = $4 AND status = 'DENIED'`

// The detail page's view of a run around one of its actions ($2, by
// action_id): the action itself, the steps proposed before it (newest
// first, at most $3) and the denials of the same call ($3 tool, $4
// normalized arguments hash) before it (at most $5). Each reads the
// reason code that ended a denied step. The keyset on (created_at, id) is
// an index condition on actions_run_created_idx, so a long run costs what
// a short one does; ORDER BY names the table's columns because the output
// column id is id::text, and sorting by that reads the whole run.
const (
	invocationStepColumns     = invocationListColumns + `, reason_code`
	invocationGetStep         = `SELECT ` + invocationStepColumns + ` FROM actions WHERE run_id = $1 AND action_id = $2`
	invocationListStepsBefore = `SELECT ` + invocationStepColumns + `
  FROM actions
 WHERE run_id = $1
   AND (created_at, id) < (SELECT created_at, id FROM actions WHERE run_id = $1 AND action_id = $2)
 ORDER BY actions.created_at DESC, actions.id DESC
 LIMIT $3`
	invocationListDenialsBefore = `SELECT ` + invocationStepColumns + `
  FROM actions
 WHERE run_id = $1 AND tool_name = $3 AND normalized_arguments_hash = $4 AND status = 'DENIED'
   AND (created_at, id) < (SELECT created_at, id FROM actions WHERE run_id = $1 AND action_id = $2)
 ORDER BY actions.created_at DESC, actions.id DESC
 LIMIT $5`
)

// invocationAdvisoryCounts counts the tenant's actions of the last 24
// hours the advisory layer judged (an abstention with a cause is no
// judgment), and how many of those it would escalate, observing or
// enforcing.
const invocationAdvisoryCounts = `
SELECT count(*) FILTER (WHERE advisory->>'cause' IS NULL),
       count(*) FILTER (WHERE advisory->>'verdict' IN ('require_approval', 'deny'))
  FROM actions
 WHERE tenant_id = $1 AND advisory IS NOT NULL
   AND created_at > $2::timestamptz - interval '24 hours' AND created_at <= $2`

// invocationRow is an invocation with what only the service reads.
type invocationRow struct {
	api.Invocation
	Arguments          json.RawMessage
	EffectiveArguments json.RawMessage
	Action             engine.ProposedAction
	ReasonCode         string
	// AuthorizedBy is the lease under which the invocation was authorized
	// (zero before).
	AuthorizedBy api.Lease
}

// authorizedTo reports whether the invocation is AUTHORIZED under exactly
// this lease: the only case in which telling the caller "authorized" again
// is an idempotent replay rather than a second execution.
func (r invocationRow) authorizedTo(l api.Lease) bool {
	switch r.Status {
	case api.InvocationAuthorized:
		return r.AuthorizedBy.WorkerID != "" && r.AuthorizedBy == l
	}
	return false
}

// listFields are the scan targets of invocationListColumns.
func listFields(r *api.Invocation) []any {
	return []any{&r.ID, &r.RunID, &r.TenantID, &r.ActionID, &r.Kind, &r.ToolName, &r.ToolVersion,
		&r.Summary, &r.StepNumber, &r.Status, &r.SideEffect, &r.Risk, &r.Idempotency, &r.OriginTrust,
		&r.NormalizedArgumentsHash, &r.EffectiveArgumentsHash, &r.Decision, &r.PolicyVersion,
		&r.ApprovalID, &r.CreatedAt, &r.UpdatedAt, &r.TaskGrantID}
}

func scanInvocation(row pgx.Row) (invocationRow, error) {
	var r invocationRow
	var action []byte
	err := row.Scan(append(listFields(&r.Invocation),
		&r.Arguments, &r.EffectiveArguments, &action, &r.ReasonCode,
		&r.AuthorizedBy.WorkerID, &r.AuthorizedBy.FencingToken)...)
	if err != nil {
		return r, err
	}
	if err := pgdb.UnmarshalNumbers(action, &r.Action); err != nil {
		return r, fmt.Errorf("decode action: %w", err)
	}
	if err := pgdb.UnmarshalNumbers(r.Arguments, &r.Action.Arguments); err != nil {
		return r, fmt.Errorf("decode arguments: %w", err)
	}
	return r, nil
}

// newInvocation is what a proposal persists.
type newInvocation struct {
	id, runID, tenantID string
	req                 engine.ActionRequest
	status              string
	out                 engine.GateOutcome
	approvalID          string
	// taskGrantID is the browser task grant that authorizes it, if any.
	taskGrantID string
	// taskGrantNotCovered is why the session's grants did not cover it.
	taskGrantNotCovered string
	// consentID is the owner consent that satisfies its approval: the
	// approval is recorded and resolved at once, never announced.
	consentID string
	now       time.Time
	// advisory is what the advisory layer said, when it was consulted.
	advisory *advisoryRecord
}

// row is the invocation as its insert writes it: what statements sent in
// the insert's own round trip (the authorization, the approval, their
// events) are built from, before the database returns the row.
func (in newInvocation) row() invocationRow {
	return invocationRow{Invocation: api.Invocation{
		ID: in.id, RunID: in.runID, TenantID: in.tenantID, ActionID: in.req.ActionID, Kind: in.req.Kind,
		ToolName: in.req.Name, Summary: in.req.Summary, StepNumber: int(in.req.StepNumber), Status: in.status,
		NormalizedArgumentsHash: in.out.Action.NormalizedArgumentsHash, Decision: in.out.Decision,
		PolicyVersion: in.out.Decision.PolicyVersion, ApprovalID: in.approvalID, TaskGrantID: in.taskGrantID,
	}}
}

func invocationsInsert(ctx context.Context, tx pgx.Tx, in newInvocation) (invocationRow, error) {
	var r invocationRow
	b := &pgx.Batch{}
	if err := queueInvocationsInsert(b, in, &r); err != nil {
		return invocationRow{}, err
	}
	return r, tx.SendBatch(ctx, b).Close()
}

// queueInvocationsInsert queues the insert of in on b, the inserted row
// scanned into out (if not nil) when the batch is read.
func queueInvocationsInsert(b *pgx.Batch, in newInvocation, out *invocationRow) error {
	a := in.out.Action
	withoutArgs := a
	withoutArgs.Arguments = nil
	action, err := json.Marshal(withoutArgs)
	if err != nil {
		return fmt.Errorf("encode action: %w", err)
	}
	decision, err := json.Marshal(in.out.Decision)
	if err != nil {
		return fmt.Errorf("encode decision: %w", err)
	}
	args := in.out.NormalizedArguments
	if len(args) == 0 {
		args = []byte("{}")
	}
	var effective, effectiveHash any
	if len(in.out.EffectiveNormalized) > 0 {
		effective, effectiveHash = in.out.EffectiveNormalized, in.out.EffectiveArgumentsHash
	}
	advisory, err := in.advisory.encode()
	if err != nil {
		return err
	}
	originTrust := a.OriginTrust
	if originTrust == "" {
		originTrust = in.req.OriginTrust
	}
	b.Queue(invocationInsert, in.id, in.runID, in.tenantID, in.req.ActionID,
		string(in.req.Kind), in.req.Name, a.Version, in.req.Summary, in.req.StepNumber, in.status,
		args, a.NormalizedArgumentsHash, effective, effectiveHash, action, decision,
		in.out.Decision.PolicyVersion, string(a.SideEffect), string(a.Risk), string(a.Idempotency),
		string(originTrust), in.out.Decision.ReasonCode, nullUUID(in.approvalID), in.now, advisory,
		nullUUID(in.taskGrantID)).QueryRow(func(row pgx.Row) error {
		r, err := scanInvocation(row)
		if err != nil {
			return fmt.Errorf("insert invocation: %w", err)
		}
		if out != nil {
			*out = r
		}
		return nil
	})
	return nil
}

func invocationsGetByAction(ctx context.Context, db DBTX, runID, actionID string) (invocationRow, bool, error) {
	return invocationFrom(db.QueryRow(ctx, invocationGetByAction, runID, actionID))
}

// queueInvocationsGetByAction is invocationsGetByAction queued on b: its
// answer is in inv, found and lookupErr once the batch is read, and the
// batch itself never fails on it.
func queueInvocationsGetByAction(b *pgx.Batch, runID, actionID string, inv *invocationRow, found *bool, lookupErr *error) {
	b.Queue(invocationGetByAction, runID, actionID).QueryRow(func(row pgx.Row) error {
		*inv, *found, *lookupErr = invocationFrom(row)
		return nil
	})
}

// queueInvocationsGetForApproval queues on b the read of the invocation an
// approval asked about, into inv and found (false: there is none).
func queueInvocationsGetForApproval(b *pgx.Batch, approvalID string, inv *invocationRow, found *bool) {
	b.Queue(invocationGetForApproval, approvalID).QueryRow(func(row pgx.Row) (err error) {
		*inv, *found, err = invocationFrom(row)
		return err
	})
}

// invocationFrom scans an invocation that may not exist (found=false).
func invocationFrom(row pgx.Row) (invocationRow, bool, error) {
	r, err := scanInvocation(row)
	if errors.Is(err, pgx.ErrNoRows) {
		return invocationRow{}, false, nil
	}
	if err != nil {
		return invocationRow{}, false, fmt.Errorf("get invocation: %w", err)
	}
	return r, true, nil
}

func invocationsGet(ctx context.Context, db DBTX, tenantID, runID, id string) (invocationRow, error) {
	if !engine.ValidUUID(id) {
		return invocationRow{}, ErrNotFound
	}
	r, err := scanInvocation(db.QueryRow(ctx, invocationGet, id, runID, tenantID))
	if errors.Is(err, pgx.ErrNoRows) {
		return invocationRow{}, ErrNotFound
	}
	if err != nil {
		return invocationRow{}, fmt.Errorf("get invocation: %w", err)
	}
	return r, nil
}

func invocationsDenyWaiting(ctx context.Context, db DBTX, id, reasonCode string, now time.Time) error {
	if _, err := db.Exec(ctx, invocationDenyWaiting, id, reasonCode, now); err != nil {
		return fmt.Errorf("deny invocation: %w", err)
	}
	return nil
}

// queueInvocationsDenyWaiting is invocationsDenyWaiting queued on b.
func queueInvocationsDenyWaiting(b *pgx.Batch, id, reasonCode string, now time.Time) {
	b.Queue(invocationDenyWaiting, id, reasonCode, now)
}

// invocationsCancelForRun cancels a cancelled run's invocations that were
// never authorized.
func invocationsCancelForRun(ctx context.Context, db DBTX, runID string, now time.Time) error {
	if _, err := db.Exec(ctx, invocationCancelForRun, runID, now); err != nil {
		return fmt.Errorf("cancel invocations: %w", err)
	}
	return nil
}

// invocationsRecordResult moves an AUTHORIZED invocation to status;
// ErrConflict when it was not AUTHORIZED.
func invocationsRecordResult(ctx context.Context, db DBTX, id, status string, now time.Time) (invocationRow, error) {
	inv, err := scanInvocation(db.QueryRow(ctx, invocationRecordResult, id, status, now))
	if errors.Is(err, pgx.ErrNoRows) {
		return invocationRow{}, ErrConflict
	}
	if err != nil {
		return invocationRow{}, fmt.Errorf("record result: %w", err)
	}
	return inv, nil
}

// queueInvocationsCountDenials is countDenial's count queued on b, into n, for a
// caller that sends it with other statements and then calls tripBreaker.
func queueInvocationsCountDenials(b *pgx.Batch, inv invocationRow, reason string, n *int) {
	b.Queue(invocationCountDenials, inv.RunID, inv.ToolName, inv.NormalizedArgumentsHash, reason).QueryRow(func(row pgx.Row) error {
		if err := row.Scan(n); err != nil {
			return fmt.Errorf("count denials: %w", err)
		}
		return nil
	})
}

// invocationsListForRun lists a run's invocations in proposal order.
func invocationsListForRun(ctx context.Context, db DBTX, runID string) ([]api.Invocation, error) {
	rows, err := db.Query(ctx, invocationListForRun, runID)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (api.Invocation, error) {
		var inv api.Invocation
		return inv, r.Scan(listFields(&inv)...)
	})
}

// Step is an action of a run as the approval detail page lists it: the
// invocation with the reason code of the denial that ended it, if any
// (its Decision is what the gate decided when it was proposed).
type Step struct {
	api.Invocation
	ReasonCode string
}

func collectSteps(rows pgx.Rows) ([]Step, error) {
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (Step, error) {
		var s Step
		return s, r.Scan(append(listFields(&s.Invocation), &s.ReasonCode)...)
	})
}

// queueInvocationsGetStep queues on b the read of a run's action by its
// action id into s; found is false when there is none.
func queueInvocationsGetStep(b *pgx.Batch, runID, actionID string, s *Step, found *bool) {
	b.Queue(invocationGetStep, runID, actionID).Query(func(rows pgx.Rows) error {
		steps, err := collectSteps(rows)
		if err != nil {
			return fmt.Errorf("get step: %w", err)
		}
		if *found = len(steps) == 1; *found {
			*s = steps[0]
		}
		return nil
	})
}

// queueInvocationsListStepsBefore queues on b the read of up to limit
// actions of a run proposed before the action actionID, newest first.
func queueInvocationsListStepsBefore(b *pgx.Batch, runID, actionID string, limit int, out *[]Step) {
	b.Queue(invocationListStepsBefore, runID, actionID, limit).Query(func(rows pgx.Rows) (err error) {
		if *out, err = collectSteps(rows); err != nil {
			return fmt.Errorf("list steps: %w", err)
		}
		return nil
	})
}

// queueInvocationsListDenialsBefore queues on b the read of up to limit
// denials of the same call (tool, normalized arguments hash) in a run
// before the action actionID, newest first.
func queueInvocationsListDenialsBefore(b *pgx.Batch, runID, actionID, tool, hash string, limit int, out *[]Step) {
	b.Queue(invocationListDenialsBefore, runID, actionID, tool, hash, limit).Query(func(rows pgx.Rows) (err error) {
		if *out, err = collectSteps(rows); err != nil {
			return fmt.Errorf("list denials: %w", err)
		}
		return nil
	})
}

// RecordResult records the outcome of an authorized invocation: succeeded,
// failed or uncertain, and returns it as the worker may see it. Outcomes: recorded; the same status again returns the
// stored invocation; any other state -> ErrConflict; a stale lease ->
// ErrStaleLease; no such run or invocation in the tenant -> ErrNotFound.
func (s *Service) RecordResult(ctx context.Context, p engine.Principal, runID, invocationID string, lease api.Lease, status string) (api.WorkerInvocation, error) {
	var to string
	switch strings.ToLower(status) {
	case "succeeded":
		to = api.InvocationSucceeded
	case "failed":
		to = api.InvocationFailed
	case "uncertain":
		to = api.InvocationUncertain
	default:
		return api.WorkerInvocation{}, &InvalidError{Msg: "status must be succeeded, failed or uncertain"}
	}
	now := s.now()
	var inv invocationRow
	err := s.withTx(ctx, func(tx pgx.Tx, _ *afterCommit) error {
		if _, err := lockRunForWorker(ctx, tx, p.TenantID, runID, lease, now); err != nil {
			return err
		}
		cur, err := invocationsGet(ctx, tx, p.TenantID, runID, invocationID)
		if err != nil {
			return err
		}
		if cur.Status == to {
			inv = cur
			return nil
		}
		inv, err = invocationsRecordResult(ctx, tx, invocationID, to, now)
		if err != nil {
			return err
		}
		return insertEvent(ctx, tx, p.TenantID, runID, now, api.ActionResultPayload{
			InvocationID: inv.ID, ToolName: inv.ToolName, Status: to,
		})
	})
	if err != nil {
		return api.WorkerInvocation{}, fmt.Errorf("service: record result: %w", err)
	}
	return inv.ForWorker(), nil
}

// ListInvocations lists a run's invocations in proposal order; another
// tenant's run is ErrNotFound.
func (s *Service) ListInvocations(ctx context.Context, p engine.Principal, runID string) ([]api.Invocation, error) {
	if _, err := runsGet(ctx, s.pool, p.TenantID, runID, false); err != nil {
		return nil, fmt.Errorf("service: list invocations: %w", err)
	}
	out, err := invocationsListForRun(ctx, s.pool, runID)
	if err != nil {
		return nil, fmt.Errorf("service: list invocations: %w", err)
	}
	return out, nil
}

// invocationsAdvisoryCounts is how many of the tenant's actions of the 24
// hours before now the advisory layer judged, and would escalate.
func invocationsAdvisoryCounts(ctx context.Context, db DBTX, tenantID string, now time.Time) (judged, escalated int, err error) {
	err = db.QueryRow(ctx, invocationAdvisoryCounts, tenantID, now).Scan(&judged, &escalated)
	return judged, escalated, err
}

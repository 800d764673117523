package service

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"gatehouse/api"
	"gatehouse/engine"
	"gatehouse/internal/pgdb"
	"gatehouse/notify"
)

// failureCircuitBreaker is the failure reason of a run the circuit breaker
// ended (the seed's ToolPolicyDenied).
const failureCircuitBreaker = "tool_policy_denied"

// failureDeadlineExceeded is the failure reason of a run past its deadline.
const failureDeadlineExceeded = "deadline_exceeded"

// circuitBreakerThreshold is how many identical denied proposals a run may
// make: the third fails it. Three, not one, because a model correcting its
// arguments after a denial changes the hash.
const circuitBreakerThreshold = 3

// Propose is the single gate for a proposed action: lease check, then
// catalog lookup, scope check against the run's stamp and the engine
// (engine.Gate), then the decision is persisted on the invocation. Outcomes:
//   - allow / allow_with_modifications: AUTHORIZED through authorize;
//   - deny: DENIED with the denial result; the third identical denial in the
//     run fails it (circuit breaker);
//   - require_approval: the seed's parking steps in one transaction, the run
//     left WAITING_FOR_APPROVAL with its lease released;
//   - a repeat of the same action_id returns the stored outcome, a different
//     argument hash for it is ErrConflict;
//   - a request that fails schema validation (a bad kind, trust label,
//     step_number, a missing name or summary) is not an error: the engine
//     denies it policy.unclassifiable_action and it is recorded like any
//     denial, so the model reads a denial and the breaker counts it;
//   - past the run's deadline: denied approval.expired and the run failed
//     (deadline_exceeded), before any other decision;
//   - a stale lease is ErrStaleLease, another tenant's run ErrNotFound; an
//     action_id that is not a uuid (nothing to key the record on) is
//     ErrInvalid.
func (s *Service) Propose(ctx context.Context, p engine.Principal, runID string, lease api.Lease, req engine.ActionRequest) (api.ProposeResult, error) {
	return s.proposeRequest(ctx, p, runID, lease, req, false)
}

// ProposeUnreadable records a proposal whose action the API could not
// decode (a field of the wrong type or range, a field the schema does not
// have) as denied policy.unclassifiable_action, keyed on its action_id like
// any proposal: the model gets the denial result, a retry gets the stored
// answer, and the breaker counts it. req carries only the fields that could
// be read; the rest is never evaluated.
func (s *Service) ProposeUnreadable(ctx context.Context, p engine.Principal, runID string, lease api.Lease, req engine.ActionRequest) (api.ProposeResult, error) {
	return s.proposeRequest(ctx, p, runID, lease, req, true)
}

func (s *Service) proposeRequest(ctx context.Context, p engine.Principal, runID string, lease api.Lease, req engine.ActionRequest, unreadable bool) (api.ProposeResult, error) {
	if !engine.ValidUUID(req.ActionID) {
		return api.ProposeResult{}, &InvalidError{Msg: "action.action_id must be a uuid"}
	}
	now := s.now()
	var res api.ProposeResult
	var adv *advice
	propose := func(tx pgx.Tx, after *afterCommit) error {
		run, stored, found, err := lockRunForProposal(ctx, tx, p.TenantID, runID, req.ActionID, lease, now)
		if errors.Is(err, ErrStaleLease) && retriedAfterPark(run, lease) {
			// The worker's proposal parked the run and released its
			// lease; answer its retry from the record.
			if !found {
				return ErrStaleLease
			}
			res, err = storedProposal(run, lease, req, stored)
			return err
		}
		if err != nil {
			return err
		}
		if found {
			res, err = storedProposal(run, lease, req, stored)
			return err
		}
		res, err = s.propose(ctx, tx, after, run, lease, req, unreadable, adv, now)
		return err
	}
	err := s.withTx(ctx, propose)
	var consult *consultAdvisorError
	if errors.As(err, &consult) {
		// Nothing was written: ask the advisor with no transaction open,
		// then decide again and write once. A proposal of the same
		// action_id that committed meanwhile is answered from its row.
		a := s.consult(ctx, consult.action, consult.enforced)
		adv = &a
		err = s.withTx(ctx, propose)
	}
	if err != nil {
		return api.ProposeResult{}, fmt.Errorf("service: propose: %w", err)
	}
	if s.failAfterStep != nil {
		if err := s.failAfterStep(8); err != nil {
			return api.ProposeResult{}, err
		}
	}
	return res, nil
}

func retriedAfterPark(run api.Run, lease api.Lease) bool {
	return run.Status == api.RunWaitingForApproval && run.WorkerID == lease.WorkerID && run.FencingToken == lease.FencingToken
}

// storedProposal answers a repeated action_id from its record inv;
// ErrConflict when its arguments differ. A stored
// allow is repeated only to the lease it authorized while the invocation is
// still AUTHORIZED (an idempotent replay): once a result is recorded, or to
// another lease (a reclaimed run replaying its steps), repeating "allow"
// would authorize a second execution, so the answer is ErrConflict and the
// runtime applies crash recovery to the invocation it already holds.
func storedProposal(run api.Run, lease api.Lease, req engine.ActionRequest, inv invocationRow) (api.ProposeResult, error) {
	if argumentsHash(req.Arguments) != inv.NormalizedArgumentsHash || req.Name != inv.ToolName {
		return api.ProposeResult{}, fmt.Errorf("action_id reused with different arguments: %w", ErrConflict)
	}
	if allowed := inv.Decision.Decision == engine.DecisionAllow || inv.Decision.Decision == engine.DecisionAllowWithModifications; allowed && !inv.authorizedTo(lease) {
		return api.ProposeResult{}, fmt.Errorf("action already authorized under another lease or executed (%s): %w", inv.Status, ErrConflict)
	}
	res := api.ProposeResult{
		Decision:     inv.Decision.Decision,
		InvocationID: inv.ID,
		ApprovalID:   inv.ApprovalID,
		RunStatus:    run.Status,
		TaskGrantID:  inv.TaskGrantID,
	}
	if inv.Decision.Decision == engine.DecisionDeny {
		d := engine.Denial(inv.ToolName, inv.ReasonCode, missingFrom(inv.Action, run))
		res.Result = &d
	}
	if inv.Decision.Decision == engine.DecisionAllowWithModifications {
		// The stored effective arguments, numbers kept as literals: the
		// decision's copy went through float64 and would not hash the same.
		if err := pgdb.UnmarshalNumbers(inv.EffectiveArguments, &res.EffectiveArguments); err != nil {
			return api.ProposeResult{}, fmt.Errorf("decode effective arguments: %w", err)
		}
	}
	return res, nil
}

// argumentsHash is the normalized arguments hash, or "" for arguments that
// cannot be represented exactly. The gate denies those unclassifiable and
// records them with an empty hash, so a retry matches its stored denial,
// while an approval (always of representable bytes) never matches them.
func argumentsHash(args map[string]any) string {
	_, hash, err := engine.NormalizeArguments(args)
	if err != nil {
		return ""
	}
	return hash
}

// missingFrom recomputes which scopes a scope denial named.
func missingFrom(a engine.ProposedAction, run api.Run) []string {
	return engine.MissingScopes(a.RequiredScopes, run.PrincipalScopes)
}

// propose decides a new action and persists the outcome.
func (s *Service) propose(ctx context.Context, tx pgx.Tx, after *afterCommit, run api.Run, lease api.Lease, req engine.ActionRequest, unreadable bool, adv *advice, now time.Time) (api.ProposeResult, error) {
	rs, ok := s.ruleset(run.PolicyProfile)
	var out engine.GateOutcome
	switch {
	case unreadable:
		out = unclassifiable(req, "request failed validation: the action does not match the schema")
	case ok:
		// The principal the engine sees is the run's stamp, never the
		// caller's or the principal's current scopes (gate 13).
		out = engine.Gate(req, s.cfg.Policy.Catalog(), runSnapshot(run), stampPrincipal(run), rs, now)
	default:
		// The run's profile is no longer loaded: nothing can classify it.
		out = unclassifiable(req, "the run's policy profile is not loaded")
	}
	if out.Action.NormalizedArgumentsHash == "" {
		// Best effort for the record: unrepresentable arguments stay
		// without bytes or hash, and the decision is a denial anyway.
		if norm, hash, err := engine.NormalizeArguments(req.Arguments); err == nil {
			out.NormalizedArguments, out.Action.NormalizedArgumentsHash = norm, hash
		}
	}
	inv := newInvocation{id: newID(), runID: run.ID, tenantID: run.TenantID, req: req, out: out, now: now}
	if pastDeadline(run, now) {
		// The run is over: no decision the engine reached may start
		// anything now.
		return s.denyPastDeadline(ctx, tx, after, run, inv)
	}
	if ok && !unreadable {
		var err error
		if out, inv.advisory, err = s.applyAdvisory(rs, out, adv); err != nil {
			return api.ProposeResult{}, err
		}
		inv.out = out
	}
	res := api.ProposeResult{Decision: out.Decision.Decision, InvocationID: inv.id, RunStatus: run.Status}
	switch out.Decision.Decision {
	case engine.DecisionAllow, engine.DecisionAllowWithModifications:
		// The insert goes in authorize's round trip; the row it will
		// authorize is the one being inserted.
		inv.status = api.InvocationProposed
		b := &pgx.Batch{}
		if err := queueInvocationsInsert(b, inv, nil); err != nil {
			return res, err
		}
		if _, err := s.authorize(ctx, tx, b, inv.row(), lease, now); err != nil {
			return res, err
		}
		res.EffectiveArguments = out.EffectiveArguments
		return res, nil
	case engine.DecisionRequireApproval:
		g, covered, err := s.spendTaskGrant(ctx, tx, run, &inv)
		if err != nil {
			return res, err
		}
		if covered {
			return s.authorizeByGrant(ctx, tx, lease, inv, g)
		}
		c, consented, err := s.matchConsent(ctx, tx, run, rs, &inv)
		if err != nil {
			return res, err
		}
		parked, err := s.park(ctx, tx, after, run, inv, rs)
		if err != nil || !consented {
			return parked, err
		}
		return s.applyConsent(ctx, tx, after, inv, parked, c)
	default:
		return s.deny(ctx, tx, after, run, inv)
	}
}

// unclassifiable denies req without evaluating it; explanation is for the
// audit record only.
func unclassifiable(req engine.ActionRequest, explanation string) engine.GateOutcome {
	return engine.GateOutcome{
		Action: engine.ProposedAction{Kind: req.Kind, ActionID: req.ActionID, Name: req.Name, OriginTrust: req.OriginTrust},
		Decision: engine.PolicyDecision{Decision: engine.DecisionDeny, ReasonCode: engine.ReasonUnclassifiable,
			Layer: engine.LayerValidation, Explanation: explanation},
	}
}

// authorize is the single gate's only transition to AUTHORIZED (gate 3):
// Propose reaches it on allow, Resume after revalidation passes; the
// worker's lease is recorded with it. Outcomes:
// authorized now (the authorized row); ErrConflict when the invocation was in no state an
// authorization may leave (already authorized, denied, cancelled).
//
// The update and action.authorized go to the database in one round trip,
// after whatever the caller queued on b (nil for nothing): the allow path
// queues the invocation's insert there. The event is queued before the
// update's outcome is known; an update the guard refused is ErrConflict,
// which rolls the transaction, event included, back.
func (s *Service) authorize(ctx context.Context, tx pgx.Tx, b *pgx.Batch, inv invocationRow, lease api.Lease, now time.Time) (invocationRow, error) {
	if b == nil {
		b = &pgx.Batch{}
	}
	var row invocationRow
	// The one statement flow code queues itself: gate 3 pins every
	// reference to it here, so it has no table function.
	b.Queue(invocationAuthorize, inv.ID, now, lease.WorkerID, lease.FencingToken).QueryRow(func(r pgx.Row) error {
		var err error
		row, err = scanInvocation(r)
		if errors.Is(err, pgx.ErrNoRows) {
			return fmt.Errorf("authorize %s: %w", inv.Status, ErrConflict)
		}
		if err != nil {
			return fmt.Errorf("authorize: %w", err)
		}
		return nil
	})
	if err := queueEvent(b, inv.TenantID, inv.RunID, now, api.ActionAuthorizedPayload{
		InvocationID: inv.ID, ToolName: inv.ToolName, Decision: inv.Decision.Decision,
		PolicyVersion: inv.PolicyVersion, ApprovalID: inv.ApprovalID, TaskGrantID: inv.TaskGrantID,
	}); err != nil {
		return invocationRow{}, err
	}
	if err := tx.SendBatch(ctx, b).Close(); err != nil {
		return invocationRow{}, err
	}
	if s.onAuthorize != nil {
		s.onAuthorize(row.ID)
	}
	return row, nil
}

// deny records a denied proposal and trips the circuit breaker on the
// third identical one.
func (s *Service) deny(ctx context.Context, tx pgx.Tx, after *afterCommit, run api.Run, inv newInvocation) (api.ProposeResult, error) {
	inv.status = api.InvocationDenied
	row := inv.row()
	reason := inv.out.Decision.ReasonCode
	d := engine.Denial(inv.req.Name, reason, inv.out.MissingScopes)
	res := api.ProposeResult{Decision: engine.DecisionDeny, InvocationID: row.ID, RunStatus: run.Status, Result: &d}
	// The insert, its event and the breaker's count (which sees the
	// insert) in one round trip.
	b := &pgx.Batch{}
	if err := queueInvocationsInsert(b, inv, nil); err != nil {
		return res, err
	}
	if err := queueEvent(b, run.TenantID, run.ID, inv.now, api.ActionDeniedPayload{
		InvocationID: row.ID, ToolName: row.ToolName, ReasonCode: reason,
		PolicyVersion: row.PolicyVersion,
	}); err != nil {
		return res, err
	}
	var denials int
	queueInvocationsCountDenials(b, row, reason, &denials)
	if err := tx.SendBatch(ctx, b).Close(); err != nil {
		return res, err
	}
	after.add(func() { s.metrics.Denied(reason) })
	failed, tripped, err := s.tripBreaker(ctx, tx, after, row, reason, denials, inv.now)
	if tripped {
		res.RunStatus = failed.Status
	}
	return res, err
}

// countDenial is the repeated-denial circuit breaker, applied to every
// denied invocation whatever denied it (the engine, a human, revalidation):
// the third denied proposal in a run with the same (name, normalized
// arguments hash, reason code) fails the run tool_policy_denied. A human's
// denial finds the run parked or re-queued (a run has at most one pending
// approval: parking releases the lease), hence the three states it may
// fail from. tripped reports whether this denial failed the run.
func (s *Service) countDenial(ctx context.Context, tx pgx.Tx, after *afterCommit, inv invocationRow, reason string, now time.Time) (api.Run, bool, error) {
	var n int
	b := &pgx.Batch{}
	queueInvocationsCountDenials(b, inv, reason, &n)
	if err := tx.SendBatch(ctx, b).Close(); err != nil {
		return api.Run{}, false, err
	}
	return s.tripBreaker(ctx, tx, after, inv, reason, n, now)
}

// tripBreaker fails inv's run when n identical denials, this one
// included, reach the threshold.
func (s *Service) tripBreaker(ctx context.Context, tx pgx.Tx, after *afterCommit, inv invocationRow, reason string, n int, now time.Time) (api.Run, bool, error) {
	if n < circuitBreakerThreshold {
		return api.Run{}, false, nil
	}
	failed, ok, err := failRun(ctx, tx, inv.RunID, []string{api.RunRunning, api.RunQueued, api.RunWaitingForApproval}, failureCircuitBreaker, now)
	if err != nil || !ok {
		return failed, false, err
	}
	after.add(s.metrics.CircuitBreakerTripped)
	return failed, true, insertEvent(ctx, tx, inv.TenantID, inv.RunID, now, api.CircuitBreakerPayload{
		ToolName: inv.ToolName, ReasonCode: reason, Denials: n,
	})
}

// approvalFor is the approval a parked invocation asks for: the redacted
// view and digests of its arguments, the scopes its principal holds now,
// and the expiry its risk and the run's deadline give.
func (s *Service) approvalFor(run api.Run, inv newInvocation, row invocationRow, id string, expires time.Time) approvalRow {
	a := inv.out.Action
	view, digests := engine.RedactedView(a.Arguments)
	if view == nil {
		view = map[string]any{}
	}
	if digests == nil {
		digests = map[string]string{}
	}
	scopes := s.currentPrincipal(run.TenantID, run.PrincipalID, run.PrincipalScopes).Scopes
	if scopes == nil {
		scopes = []string{}
	}
	trust := a.ArgumentTrust
	if trust == nil {
		trust = map[string]engine.TrustLevel{}
	}
	toolInvocationID := ""
	if inv.req.Kind == "" || inv.req.Kind.HasToolInvocation() {
		toolInvocationID = row.ID
	}
	return approvalRow{
		Approval: api.Approval{
			ID: id, TenantID: run.TenantID, PrincipalID: run.PrincipalID, RunID: run.ID,
			SessionID: run.SessionID, ActionKind: row.Kind, ActionID: row.ActionID,
			ToolInvocationID: toolInvocationID, ActionSummary: row.Summary, ToolName: row.ToolName,
			SideEffect: a.SideEffect, Arguments: view, ArgumentDigests: digests, Risk: a.Risk,
			PolicyReason: inv.out.Decision.ReasonCode, PolicyVersion: inv.out.Decision.PolicyVersion,
			OriginTrust: a.OriginTrust, ArgumentTrust: trust, PolicyExplanation: inv.out.Decision.Explanation,
			ExpiresAt: expires, CreatedAt: inv.now,
			TaskGrantOffer: s.taskGrantOffer(run.TenantID, inv.out), TaskGrantNotCovered: inv.taskGrantNotCovered,
		},
		NormalizedArgumentsHash: row.NormalizedArgumentsHash,
		RequestedScopes:         scopes,
		AgentVersion:            run.AgentVersion,
	}
}

// Park steps, numbered as the seed numbers them (step 7 here is the NOTIFY
// latency hint).
const (
	stepInvocation = iota + 1
	stepApproval
	stepCheckpoint
	stepWaiting
	stepReleaseLease
	stepEvent
	stepNotify
)

// park runs the seed's steps for REQUIRE_APPROVAL, in its order, in the
// caller's transaction: invocation WAITING_FOR_APPROVAL, approval row,
// checkpoint, guarded RUNNING -> WAITING_FOR_APPROVAL (a run cancelled
// concurrently rolls everything back), lease release last, then the
// approval.requested event and NOTIFY. A failure at any step rolls back to
// a RUNNING run with its lease and no approval, which its lease expiry makes
// reclaimable; after commit the run is correctly parked.
//
// The seven statements go to the database in one round trip, in that
// order; their results are read in order too, so each step is checked (and
// s.step observes it) before the next one's outcome is looked at, and the
// first failure rolls the whole batch back with the transaction.
func (s *Service) park(ctx context.Context, tx pgx.Tx, after *afterCommit, run api.Run, inv newInvocation, rs *engine.LoadedRuleset) (api.ProposeResult, error) {
	now := inv.now
	a := inv.out.Action
	approvalID := newID()
	inv.status, inv.approvalID = api.InvocationWaitingForApproval, approvalID
	row := inv.row()
	b := &pgx.Batch{}
	if err := queueInvocationsInsert(b, inv, nil); err != nil {
		return api.ProposeResult{}, err
	}
	s.queueStep(b, stepInvocation)

	// As stored: timestamptz keeps microseconds, and the event below is
	// written before the database returns the row.
	expires := engine.ApprovalExpiry(a.Risk, now, run.Deadline, rs.Profile().Expiry).Truncate(time.Microsecond)
	var approval approvalRow
	pending := s.approvalFor(run, inv, row, approvalID, expires)
	pending.Quorum = rs.Quorum(a.Risk)
	queueApprovalsInsert(b, pending, &approval)
	s.queueStep(b, stepApproval)

	queueRunsCheckpointPark(b, run.ID, approvalID, row.StepNumber, now)
	s.queueStep(b, stepCheckpoint)

	queueRunsPark(b, run.ID, run.FencingToken, now)
	s.queueStep(b, stepWaiting)

	queueRunsReleaseLease(b, run.ID, now)
	s.queueStep(b, stepReleaseLease)

	if err := queueEvent(b, run.TenantID, run.ID, now, api.ApprovalRequestedPayload{
		ApprovalID: approvalID, InvocationID: row.ID, ToolName: row.ToolName,
		Risk: a.Risk, SideEffect: a.SideEffect, ExpiresAt: expires,
	}); err != nil {
		return api.ProposeResult{}, err
	}
	s.queueStep(b, stepEvent)
	if inv.consentID == "" {
		s.queueNotification(b, after, pending, notify.KindRequested, now)
	}
	queueNotify(b, run.TenantID)
	s.queueStep(b, stepNotify)
	if err := tx.SendBatch(ctx, b).Close(); err != nil {
		return api.ProposeResult{}, err
	}
	after.add(func() { s.metrics.ApprovalRequested(approval.SideEffect, approval.Risk) })
	return api.ProposeResult{
		Decision: engine.DecisionRequireApproval, InvocationID: row.ID, ApprovalID: approval.ID,
		RunStatus: api.RunWaitingForApproval,
	}, nil
}

func (s *Service) step(n int) error {
	if s.failAfterStep == nil {
		return nil
	}
	return s.failAfterStep(n)
}

// queueStep runs s.step(n) when b's results are read up to the statement
// last queued, once that statement has succeeded: the step hooks observe a
// batched park exactly as they observed its statements one by one.
func (s *Service) queueStep(b *pgx.Batch, n int) {
	if s.failAfterStep == nil {
		return
	}
	qq := b.QueuedQueries[len(b.QueuedQueries)-1]
	read := qq.Fn
	qq.Fn = func(br pgx.BatchResults) error {
		if read != nil {
			if err := read(br); err != nil {
				return err
			}
		} else if _, err := br.Exec(); err != nil {
			return err
		}
		return s.step(n)
	}
}

// denyPastDeadline denies an action proposed after the run's deadline,
// whatever the engine decided, writes action.denied and fails the run
// (deadline_exceeded).
func (s *Service) denyPastDeadline(ctx context.Context, tx pgx.Tx, after *afterCommit, run api.Run, inv newInvocation) (api.ProposeResult, error) {
	inv.status = api.InvocationDenied
	d := inv.out.Decision
	inv.out.Decision = engine.PolicyDecision{
		Decision: engine.DecisionDeny, ReasonCode: engine.ReasonApprovalExpired, PolicyVersion: d.PolicyVersion,
		Explanation: "the run's deadline has passed", SideEffect: d.SideEffect, Risk: d.Risk,
	}
	inv.out.EffectiveArguments, inv.out.EffectiveNormalized, inv.out.EffectiveArgumentsHash = nil, nil, ""
	row, err := invocationsInsert(ctx, tx, inv)
	if err != nil {
		return api.ProposeResult{}, err
	}
	if err := insertEvent(ctx, tx, run.TenantID, run.ID, inv.now, api.ActionDeniedPayload{
		InvocationID: row.ID, ToolName: row.ToolName, ReasonCode: engine.ReasonApprovalExpired,
		PolicyVersion: row.PolicyVersion, Cause: engine.VoidDeadlineExceeded,
	}); err != nil {
		return api.ProposeResult{}, err
	}
	failed, _, err := failRun(ctx, tx, run.ID, []string{api.RunRunning}, failureDeadlineExceeded, inv.now)
	if err != nil {
		return api.ProposeResult{}, err
	}
	after.add(func() { s.metrics.Denied(engine.ReasonApprovalExpired) })
	denial := engine.Denial(row.ToolName, engine.ReasonApprovalExpired, nil)
	return api.ProposeResult{Decision: engine.DecisionDeny, InvocationID: row.ID, RunStatus: failed.Status, Result: &denial}, nil
}

package service

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"gatehouse/api"
	"gatehouse/engine"
)

// Browser task grants (ADR-0129): the only authorization wider than one
// action, and only as wide as one site scope of one session for thirty
// minutes and two hundred actions. The operator's site scopes decide which
// approvals carry an offer; a human with browser.grant.write accepts it
// with approve_for_task; the single gate spends it.

// maxSessionListed bounds a session's grant and consent lists: each needs
// a human's act, so a session with more is not one anybody reads.
const maxSessionListed = 100

// taskGrantOffer is the offer a parked invocation's approval carries: only
// for browser.act, only when the engine asked for approval because of the
// class (an escalation is a reason to look at this action, not to hand
// out more), and only for a target in one of the tenant's site scopes.
func (s *Service) taskGrantOffer(tenantID string, out engine.GateOutcome) *api.TaskGrantOffer {
	if out.Action.Name != engine.BrowserActTool || !engine.RequiresApprovalByClass(out.Decision) {
		return nil
	}
	url, _ := out.Action.Arguments["url"].(string)
	sc, ok := s.cfg.GrantSites.Offer(tenantID, url)
	if !ok {
		return nil
	}
	return &api.TaskGrantOffer{
		Origin: sc.Origin, PathPrefix: sc.PathPrefix,
		DurationSeconds: int(engine.TaskGrantDuration / time.Second), ActionBudget: engine.TaskGrantBudget,
	}
}

// spendTaskGrant authorizes inv by one of its session's grants when the
// deterministic decision is REQUIRE_APPROVAL only because of the class
// and the browser.act's target is on a grant's origin under its prefix:
// the grant's use is spent here, under its row lock and guard, and inv
// records the grant. Otherwise inv records why its session's grants did
// not cover it (nothing when the session has none) and ok is false.
func (s *Service) spendTaskGrant(ctx context.Context, tx pgx.Tx, run api.Run, inv *newInvocation) (taskGrantRow, bool, error) {
	if inv.out.Action.Name != engine.BrowserActTool || !engine.RequiresApprovalByClass(inv.out.Decision) {
		return taskGrantRow{}, false, nil
	}
	grants, err := taskGrantsLockSession(ctx, tx, run.TenantID, run.SessionID)
	if err != nil || len(grants) == 0 {
		return taskGrantRow{}, false, err
	}
	origin, path, targeted := engine.BrowserTarget(inv.out.Action.Arguments)
	reason := engine.GrantNotCoveredOrigin
	for _, g := range grants {
		switch {
		case !targeted || g.Scope.Origin != origin:
			continue
		case !engine.PathInPrefix(path, g.Scope.PathPrefix):
			reason = engine.GrantNotCoveredPrefix
			continue
		}
		used, ok, err := taskGrantsUse(ctx, tx, g.ID, inv.now)
		if err != nil {
			return taskGrantRow{}, false, err
		}
		if ok {
			inv.taskGrantID = used.ID
			return used, true, nil
		}
		if reason != engine.GrantNotCoveredExhausted {
			reason = engine.GrantNotCoveredExpired
			if inv.now.Before(g.ExpiresAt) {
				reason = engine.GrantNotCoveredExhausted
			}
		}
	}
	inv.taskGrantNotCovered = reason
	return taskGrantRow{}, false, nil
}

// authorizeByGrant records inv as allowed by grant g and authorizes it
// through the single gate, with browser.grant.used beside
// action.authorized. The stored decision says so: the class's reason
// code, layer task_grant, so the audit record shows both what the engine
// asked for and what answered it.
func (s *Service) authorizeByGrant(ctx context.Context, tx pgx.Tx, lease api.Lease, inv newInvocation, g taskGrantRow) (api.ProposeResult, error) {
	d := inv.out.Decision
	d.Decision = engine.DecisionAllow
	d.Layer = engine.LayerTaskGrant
	d.Explanation = fmt.Sprintf("%s; authorized by browser task grant %s (use %d of %d)", d.Explanation, g.ID, g.Uses, g.Budget)
	inv.out.Decision = d
	inv.status = api.InvocationProposed
	b := &pgx.Batch{}
	if err := queueInvocationsInsert(b, inv, nil); err != nil {
		return api.ProposeResult{}, err
	}
	if err := queueEvent(b, inv.tenantID, inv.runID, inv.now, api.BrowserGrantUsedPayload{
		GrantID: g.ID, InvocationID: inv.id, Uses: g.Uses, Budget: g.Budget,
	}); err != nil {
		return api.ProposeResult{}, err
	}
	if _, err := s.authorize(ctx, tx, b, inv.row(), lease, inv.now); err != nil {
		return api.ProposeResult{}, err
	}
	return api.ProposeResult{Decision: engine.DecisionAllow, InvocationID: inv.id, RunStatus: api.RunRunning, TaskGrantID: g.ID}, nil
}

// ResolveApprovalForTask resolves a browser.act approval with
// approve_for_task (ADR-0129): APPROVED exactly as approve_once, and in
// the same transaction a BrowserTaskGrant for the approval's offer, bound
// to its run's session, for TaskGrantDuration and TaskGrantBudget actions.
// grant repeats the offer's origin and path prefix; seenHash, when not
// empty, binds the resolution to the arguments the resolver saw (as
// ResolveApprovalSeen). Outcomes are ResolveApproval's, and:
//   - ErrForbidden: p lacks browser.grant.write (checked before any read)
//     or approval.resolve;
//   - ErrInvalid: no task_grant, an approval without an offer (another
//     tool, a target outside every site scope), or a task_grant that is
//     not the offer; nothing changes.
//
// The CLI and notification actions call ResolveApproval, which refuses
// approve_for_task: only the API and the console reach this.
func (s *Service) ResolveApprovalForTask(ctx context.Context, p engine.Principal, id, seenHash string, grant *engine.SiteScope, reason string) (ResolveOutcome, error) {
	if err := requireScope(p, scopeGrantWrite); err != nil {
		return ResolveOutcome{}, fmt.Errorf("service: resolve approval for task: %w", err)
	}
	if grant == nil {
		return ResolveOutcome{}, &InvalidError{Msg: "approve_for_task needs task_grant: the offer's origin and path_prefix"}
	}
	return s.resolveApproval(ctx, p, id, seenHash, engine.ResolutionApproveForTask, reason, grant)
}

// checkTaskGrantRequest refuses an approve_for_task whose approval carries
// no offer or another one. The run is locked, so the offer read here is
// the one the guarded update resolves.
func checkTaskGrantRequest(ctx context.Context, tx pgx.Tx, tenantID, id string, grant *engine.SiteScope) error {
	a, err := approvalsGet(ctx, tx, tenantID, id)
	if err != nil {
		return err
	}
	switch {
	case a.TaskGrantOffer == nil:
		return &InvalidError{Msg: "approve_for_task is only for a browser.act approval that carries a task grant offer; this one carries none"}
	case a.TaskGrantOffer.Scope() != *grant:
		return &InvalidError{Msg: "task_grant does not repeat the offer's origin and path_prefix"}
	}
	return nil
}

// createTaskGrant makes the grant an applied approve_for_task resolution
// of a accepts, with browser.grant.created, in the resolving transaction.
func (s *Service) createTaskGrant(ctx context.Context, tx pgx.Tx, a approvalRow, now time.Time) (approvalRow, error) {
	g, err := taskGrantsInsert(ctx, tx, a.TenantID, taskGrantRow{
		ID: newID(), SessionID: a.SessionID, RunID: a.RunID, ApprovalID: a.ID,
		Scope: a.TaskGrantOffer.Scope(), Budget: engine.TaskGrantBudget, CreatedBy: a.ResolvedBy,
		CreatedAt: now, ExpiresAt: now.Add(engine.TaskGrantDuration),
	})
	if err != nil {
		return a, err
	}
	if err := insertEvent(ctx, tx, a.TenantID, a.RunID, now, api.BrowserGrantCreatedPayload{
		GrantID: g.ID, ApprovalID: a.ID, Origin: g.Scope.Origin, PathPrefix: g.Scope.PathPrefix,
		Budget: g.Budget, ExpiresAt: g.ExpiresAt, CreatedBy: g.CreatedBy,
	}); err != nil {
		return a, err
	}
	if s.failAfterTaskGrant != nil {
		if err := s.failAfterTaskGrant(); err != nil {
			return a, err
		}
	}
	a.TaskGrantID = g.ID
	return a, nil
}

// ListTaskGrants lists a session's grants of the principal's tenant, newest
// first, with uses and time left as of now. A session with no run in the
// tenant (another tenant's) is ErrNotFound.
func (s *Service) ListTaskGrants(ctx context.Context, p engine.Principal, sessionID string) ([]api.BrowserTaskGrant, error) {
	return listSession(ctx, s, p, scopeGrantRead, sessionID, taskGrantsListSession, taskGrantRow.view)
}

// listSession lists what list reads of a session of p's tenant (at most
// maxSessionListed, newest first) as view shows it now: scope first, then
// ErrNotFound for a session with no run in the tenant, so another tenant's
// session is not found whether or not it has rows.
func listSession[R, V any](ctx context.Context, s *Service, p engine.Principal, scope, sessionID string,
	list func(ctx context.Context, db DBTX, tenantID, sessionID string, limit int) ([]R, error),
	view func(R, time.Time) V,
) ([]V, error) {
	if err := requireScope(p, scope); err != nil {
		return nil, fmt.Errorf("service: list session: %w", err)
	}
	switch ok, err := runsSessionExists(ctx, s.pool, p.TenantID, sessionID); {
	case err != nil:
		return nil, fmt.Errorf("service: list session: %w", err)
	case !ok:
		return nil, fmt.Errorf("service: list session: %w", ErrNotFound)
	}
	rows, err := list(ctx, s.pool, p.TenantID, sessionID, maxSessionListed)
	if err != nil {
		return nil, fmt.Errorf("service: list session: %w", err)
	}
	now := s.now()
	out := make([]V, 0, len(rows))
	for _, r := range rows {
		out = append(out, view(r, now))
	}
	return out, nil
}

// RevokeTaskGrant ends a grant of the principal's tenant at once: no use
// after this commits. Outcomes: the revoked grant and browser.grant.revoked
// on its run's timeline; already revoked, the stored grant and no second
// event; ErrNotFound for no grant in the tenant; ErrForbidden without
// browser.grant.write.
func (s *Service) RevokeTaskGrant(ctx context.Context, p engine.Principal, id string) (api.BrowserTaskGrant, error) {
	if err := requireScope(p, scopeGrantWrite); err != nil {
		return api.BrowserTaskGrant{}, fmt.Errorf("service: revoke task grant: %w", err)
	}
	now := s.now()
	var g taskGrantRow
	err := s.withTx(ctx, func(tx pgx.Tx, _ *afterCommit) error {
		var revoked bool
		var err error
		g, revoked, err = taskGrantsRevoke(ctx, tx, p.TenantID, id, p.ID, now)
		if err != nil || !revoked {
			return err
		}
		if err := insertEvent(ctx, tx, p.TenantID, g.RunID, now, api.BrowserGrantRevokedPayload{
			GrantID: g.ID, RevokedBy: p.ID, Uses: g.Uses,
		}); err != nil {
			return err
		}
		return signalEvents(ctx, tx, p.TenantID)
	})
	if err != nil {
		return api.BrowserTaskGrant{}, fmt.Errorf("service: revoke task grant: %w", err)
	}
	return g.view(now), nil
}

package service

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"gatehouse/api"
	"gatehouse/engine"
)

// Exact single-action owner consent (ADR-0095 and ADR-0172 in a general
// form). A human who may resolve approvals says yes to one exact action of
// one session before the agent proposes it; the gate consumes the consent
// once, in the proposing transaction, to resolve the approval policy asked
// for. It never touches a deny or a hardline block: those never reach the
// approval branch.

// MaxConsentWindow is how long a consent may last.
const MaxConsentWindow = 30 * time.Minute

// OwnerActionReason is the resolution reason of an approval a consent
// satisfied: the audit record says it was the owner's own action.
const OwnerActionReason = "owner_action"

// RecordConsent records p's consent to the action in (tool, arguments) of
// a session of p's tenant, for in.ExpiresInSeconds (default and at most
// thirty minutes). p needs approval.resolve: consent resolves an approval
// ahead of time. viaConsole is true only for the console's signed-in
// human; through the API, the principal of a run of the session (the
// agent's own token) is refused, so an agent cannot consent to itself.
// Outcomes: the consent and consent.recorded; ErrNotFound for a session
// with no run in the tenant; ErrForbidden; ErrInvalid for an unknown tool,
// arguments that cannot be hashed exactly, or a window out of range.
func (s *Service) RecordConsent(ctx context.Context, p engine.Principal, sessionID string, in api.ConsentInput, viaConsole bool) (api.OwnerConsent, error) {
	if err := requireScope(p, scopeApprovalResolve); err != nil {
		return api.OwnerConsent{}, fmt.Errorf("service: record consent: %w", err)
	}
	window := MaxConsentWindow
	switch secs := in.ExpiresInSeconds; {
	case secs < 0 || time.Duration(secs)*time.Second > MaxConsentWindow:
		return api.OwnerConsent{}, &InvalidError{Msg: "expires_in_seconds must be between 1 and 1800"}
	case secs > 0:
		window = time.Duration(secs) * time.Second
	}
	if _, ok := s.cfg.Policy.Catalog().Lookup(in.ToolName); !ok {
		return api.OwnerConsent{}, &InvalidError{Msg: "tool_name is not a tool of the catalog"}
	}
	args := in.Arguments
	if args == nil {
		args = map[string]any{}
	}
	_, hash, err := engine.NormalizeArguments(args)
	if err != nil {
		return api.OwnerConsent{}, &InvalidError{Msg: "arguments cannot be represented exactly"}
	}
	now := s.now()
	var c consentRow
	err = s.withTx(ctx, func(tx pgx.Tx, _ *afterCommit) error {
		switch ok, err := runsSessionExists(ctx, tx, p.TenantID, sessionID); {
		case err != nil:
			return err
		case !ok:
			return fmt.Errorf("session: %w", ErrNotFound)
		}
		if !viaConsole {
			switch works, err := runsSessionHasPrincipal(ctx, tx, p.TenantID, sessionID, p.ID); {
			case err != nil:
				return err
			case works:
				return fmt.Errorf("the session's own agent cannot consent to its actions: %w", ErrForbidden)
			}
		}
		c, err = consentsInsert(ctx, tx, p.TenantID, consentRow{
			ID: newID(), SessionID: sessionID, ToolName: in.ToolName, ArgumentsHash: hash, CreatedBy: p.ID,
			ViaConsole: viaConsole, CreatedAt: now, ExpiresAt: now.Add(window),
		})
		if err != nil {
			return err
		}
		return insertEvent(ctx, tx, p.TenantID, "", now, api.ConsentRecordedPayload{
			ConsentID: c.ID, SessionID: sessionID, ToolName: c.ToolName, ArgumentsHash: hash,
			CreatedBy: p.ID, ExpiresAt: c.ExpiresAt,
		})
	})
	if err != nil {
		return api.OwnerConsent{}, fmt.Errorf("service: record consent: %w", err)
	}
	return c.view(now), nil
}

// ListConsents lists a session's consents, newest first; a session with no
// run in p's tenant is ErrNotFound.
func (s *Service) ListConsents(ctx context.Context, p engine.Principal, sessionID string) ([]api.OwnerConsent, error) {
	return listSession(ctx, s, p, scopeApprovalRead, sessionID, consentsListSession, consentRow.view)
}

func (c consentRow) view(now time.Time) api.OwnerConsent {
	v := api.OwnerConsent{
		ID: c.ID, SessionID: c.SessionID, ToolName: c.ToolName, ArgumentsHash: c.ArgumentsHash,
		CreatedBy: c.CreatedBy, CreatedAt: c.CreatedAt, ExpiresAt: c.ExpiresAt, ConsumedAt: c.ConsumedAt,
		ApprovalID: c.ApprovalID, Status: api.ConsentLive,
	}
	switch {
	case c.ConsumedAt != nil:
		v.Status = api.ConsentConsumed
	case !now.Before(c.ExpiresAt):
		v.Status = api.ConsentExpired
	}
	return v
}

// matchConsent finds and locks the live consent to exactly inv in its
// run's session, when one may satisfy it: the proposal's own origin must
// be able to authorize (content the agent read cannot cash in the
// owner's consent), the consenting principal must not be the run's own
// principal unless a signed-in human consented in the console, and the
// profile's distinct-resolver rule holds for the consenting human as for
// any resolver. inv records the consent, so its approval is not
// announced as a card.
func (s *Service) matchConsent(ctx context.Context, tx pgx.Tx, run api.Run, rs *engine.LoadedRuleset, inv *newInvocation) (consentRow, bool, error) {
	a := inv.out.Action
	// One owner's consent cannot stand in for a quorum of reviewers.
	if !a.OriginTrust.MayAuthorize() || a.NormalizedArgumentsHash == "" || rs.Quorum(a.Risk) > 1 {
		return consentRow{}, false, nil
	}
	c, ok, err := consentsLockMatch(ctx, tx, run.TenantID, run.SessionID, a.Name, a.NormalizedArgumentsHash, inv.now)
	if err != nil || !ok {
		return consentRow{}, false, err
	}
	if c.CreatedBy == run.PrincipalID && (!c.ViaConsole || rs.RequireDistinctResolver()) {
		return consentRow{}, false, nil
	}
	inv.consentID = c.ID
	return c, true, nil
}

// applyConsent consumes c for the approval park just recorded (res) and
// resolves it approve_once by the consenting human with reason
// owner_action, then settles it as any resolution: the run is re-queued
// and the invocation resumes through revalidation.
func (s *Service) applyConsent(ctx context.Context, tx pgx.Tx, after *afterCommit, inv newInvocation, res api.ProposeResult, c consentRow) (api.ProposeResult, error) {
	if _, err := consentsConsume(ctx, tx, c.ID, res.ApprovalID, inv.now); err != nil {
		return res, err
	}
	if err := insertEvent(ctx, tx, inv.tenantID, inv.runID, inv.now, api.ConsentConsumedPayload{
		ConsentID: c.ID, ApprovalID: res.ApprovalID, InvocationID: inv.id, CreatedBy: c.CreatedBy,
	}); err != nil {
		return res, err
	}
	var resolved approvalResolution
	b := &pgx.Batch{}
	queueApprovalsResolve(b, inv.tenantID, res.ApprovalID, c.CreatedBy, engine.ResolutionApproveOnce, OwnerActionReason, "", false, inv.now, &resolved)
	if err := tx.SendBatch(ctx, b).Close(); err != nil {
		return res, err
	}
	if resolved.result != ResolveApplied {
		return res, fmt.Errorf("consent %s: the approval it satisfies was %s: %w", c.ID, resolved.result, ErrConflict)
	}
	inv.status, inv.approvalID = api.InvocationWaitingForApproval, res.ApprovalID
	if err := s.settle(ctx, tx, after, resolved.row, inv.row(), true, inv.now); err != nil {
		return res, err
	}
	res.RunStatus = api.RunQueued
	return res, nil
}

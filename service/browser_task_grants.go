package service

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"gatehouse/api"
	"gatehouse/engine"
)

// This file is the browser task grant repository (ADR-0129): create in the
// resolving transaction, lock a session's live grants for a use, spend one
// use under the budget/expiry/revocation guard, list, revoke.

const browserTaskGrantColumns = `id::text, session_id::text, run_id::text, approval_id::text, origin, path_prefix,
       budget, uses, created_by, created_at, expires_at, COALESCE(revoked_by, ''), revoked_at`

const browserTaskGrantInsert = `
INSERT INTO browser_task_grants (id, tenant_id, session_id, run_id, approval_id, origin, path_prefix,
       budget, created_by, created_at, expires_at)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)
RETURNING ` + browserTaskGrantColumns

// browserTaskGrantLockSession locks the session's unrevoked grants, oldest
// first: two proposals of one session that could spend the same grant
// take turns, and the second reads the first's count.
const browserTaskGrantLockSession = `
SELECT ` + browserTaskGrantColumns + ` FROM browser_task_grants
 WHERE tenant_id = $1 AND session_id = $2 AND revoked_at IS NULL
 ORDER BY created_at, id
   FOR UPDATE`

// browserTaskGrantUse spends one use of a grant. The guard repeats every
// condition of a live grant, so whatever happened since the caller chose
// it, an exhausted, expired ($2, now, at or past expires_at) or revoked
// grant is never spent.
const browserTaskGrantUse = `
UPDATE browser_task_grants SET uses = uses + 1
 WHERE id = $1 AND uses < budget AND expires_at > $2 AND revoked_at IS NULL
RETURNING ` + browserTaskGrantColumns

const browserTaskGrantListSession = `
SELECT ` + browserTaskGrantColumns + ` FROM browser_task_grants
 WHERE tenant_id = $1 AND session_id = $2
 ORDER BY created_at DESC, id DESC
 LIMIT $3`

const browserTaskGrantGet = `SELECT ` + browserTaskGrantColumns + ` FROM browser_task_grants WHERE id = $1 AND tenant_id = $2`

// browserTaskGrantRevoke ends a grant; zero rows when it is not the
// tenant's or was revoked already.
const browserTaskGrantRevoke = `
UPDATE browser_task_grants SET revoked_at = $3, revoked_by = $4
 WHERE id = $1 AND tenant_id = $2 AND revoked_at IS NULL
RETURNING ` + browserTaskGrantColumns

// taskGrantRow is a grant as stored.
type taskGrantRow struct {
	ID, SessionID, RunID, ApprovalID string
	Scope                            engine.SiteScope
	Budget, Uses                     int
	CreatedBy                        string
	CreatedAt, ExpiresAt             time.Time
	RevokedBy                        string
	RevokedAt                        *time.Time
}

func scanTaskGrant(row pgx.Row) (taskGrantRow, error) {
	var g taskGrantRow
	err := row.Scan(&g.ID, &g.SessionID, &g.RunID, &g.ApprovalID, &g.Scope.Origin, &g.Scope.PathPrefix,
		&g.Budget, &g.Uses, &g.CreatedBy, &g.CreatedAt, &g.ExpiresAt, &g.RevokedBy, &g.RevokedAt)
	return g, err
}

func collectTaskGrants(rows pgx.Rows) ([]taskGrantRow, error) {
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (taskGrantRow, error) { return scanTaskGrant(r) })
}

// view is the grant as the API shows it at now.
func (g taskGrantRow) view(now time.Time) api.BrowserTaskGrant {
	v := api.BrowserTaskGrant{
		ID: g.ID, SessionID: g.SessionID, RunID: g.RunID, ApprovalID: g.ApprovalID,
		Origin: g.Scope.Origin, PathPrefix: g.Scope.PathPrefix, Budget: g.Budget, Uses: g.Uses,
		UsesLeft: g.Budget - g.Uses, CreatedBy: g.CreatedBy, CreatedAt: g.CreatedAt, ExpiresAt: g.ExpiresAt,
		RevokedBy: g.RevokedBy, RevokedAt: g.RevokedAt, Status: api.GrantActive,
	}
	if left := g.ExpiresAt.Sub(now); left > 0 {
		v.SecondsLeft = int(left / time.Second)
	}
	switch {
	case g.RevokedAt != nil:
		v.Status = api.GrantRevoked
	case !now.Before(g.ExpiresAt):
		v.Status = api.GrantExpired
	case g.Uses >= g.Budget:
		v.Status = api.GrantExhausted
	}
	if v.Status != api.GrantActive {
		v.UsesLeft, v.SecondsLeft = 0, 0
	}
	return v
}

func taskGrantsInsert(ctx context.Context, db DBTX, tenantID string, g taskGrantRow) (taskGrantRow, error) {
	stored, err := scanTaskGrant(db.QueryRow(ctx, browserTaskGrantInsert, g.ID, tenantID, g.SessionID, g.RunID,
		g.ApprovalID, g.Scope.Origin, g.Scope.PathPrefix, g.Budget, g.CreatedBy, g.CreatedAt, g.ExpiresAt))
	if err != nil {
		return taskGrantRow{}, fmt.Errorf("create task grant: %w", err)
	}
	return stored, nil
}

func taskGrantsLockSession(ctx context.Context, db DBTX, tenantID, sessionID string) ([]taskGrantRow, error) {
	rows, err := db.Query(ctx, browserTaskGrantLockSession, tenantID, sessionID)
	if err != nil {
		return nil, fmt.Errorf("lock task grants: %w", err)
	}
	out, err := collectTaskGrants(rows)
	if err != nil {
		return nil, fmt.Errorf("lock task grants: %w", err)
	}
	return out, nil
}

// taskGrantsUse spends one use; ok=false when the guard refused it.
func taskGrantsUse(ctx context.Context, db DBTX, id string, now time.Time) (taskGrantRow, bool, error) {
	g, err := scanTaskGrant(db.QueryRow(ctx, browserTaskGrantUse, id, now))
	if errors.Is(err, pgx.ErrNoRows) {
		return taskGrantRow{}, false, nil
	}
	if err != nil {
		return taskGrantRow{}, false, fmt.Errorf("use task grant: %w", err)
	}
	return g, true, nil
}

func taskGrantsListSession(ctx context.Context, db DBTX, tenantID, sessionID string, limit int) ([]taskGrantRow, error) {
	rows, err := db.Query(ctx, browserTaskGrantListSession, tenantID, sessionID, limit)
	if err != nil {
		return nil, fmt.Errorf("list task grants: %w", err)
	}
	out, err := collectTaskGrants(rows)
	if err != nil {
		return nil, fmt.Errorf("list task grants: %w", err)
	}
	return out, nil
}

// taskGrantsRevoke revokes a grant of the tenant. revoked is false when it
// was revoked before (g is the stored grant); another tenant's or no grant
// is ErrNotFound.
func taskGrantsRevoke(ctx context.Context, db DBTX, tenantID, id, by string, now time.Time) (g taskGrantRow, revoked bool, err error) {
	if !engine.ValidUUID(id) {
		return taskGrantRow{}, false, ErrNotFound
	}
	g, err = scanTaskGrant(db.QueryRow(ctx, browserTaskGrantRevoke, id, tenantID, now, by))
	if err == nil {
		return g, true, nil
	}
	if !errors.Is(err, pgx.ErrNoRows) {
		return taskGrantRow{}, false, fmt.Errorf("revoke task grant: %w", err)
	}
	g, err = scanTaskGrant(db.QueryRow(ctx, browserTaskGrantGet, id, tenantID))
	if errors.Is(err, pgx.ErrNoRows) {
		return taskGrantRow{}, false, ErrNotFound
	}
	if err != nil {
		return taskGrantRow{}, false, fmt.Errorf("get task grant: %w", err)
	}
	return g, false, nil
}

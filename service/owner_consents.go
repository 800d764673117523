package service

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// This file is the owner consent repository (issue 12, ADR-0095/0172):
// record, lock the one matching live consent of a proposal, consume it
// under its guard, list a session's.

const ownerConsentColumns = `id::text, session_id::text, tool_name, normalized_arguments_hash, created_by,
       via_console, created_at, expires_at, consumed_at, COALESCE(approval_id::text, '')`

const ownerConsentInsert = `
INSERT INTO owner_consents (id, tenant_id, session_id, tool_name, normalized_arguments_hash, created_by,
       via_console, created_at, expires_at)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)
RETURNING ` + ownerConsentColumns

// ownerConsentLockMatch locks the oldest live consent to exactly this
// action ($3 tool, $4 hash) in the session. A proposal racing for the same
// consent waits here, and once the first commits the row no longer
// matches (consumed_at is set): it gets none.
const ownerConsentLockMatch = `
SELECT ` + ownerConsentColumns + ` FROM owner_consents
 WHERE tenant_id = $1 AND session_id = $2 AND tool_name = $3 AND normalized_arguments_hash = $4
   AND consumed_at IS NULL AND expires_at > $5
 ORDER BY created_at, id
 LIMIT 1
   FOR UPDATE`

// ownerConsentConsume spends a consent once, for the approval it satisfied.
const ownerConsentConsume = `
UPDATE owner_consents SET consumed_at = $2, approval_id = $3
 WHERE id = $1 AND consumed_at IS NULL AND expires_at > $2
RETURNING ` + ownerConsentColumns

const ownerConsentListSession = `
SELECT ` + ownerConsentColumns + ` FROM owner_consents
 WHERE tenant_id = $1 AND session_id = $2
 ORDER BY created_at DESC, id DESC
 LIMIT $3`

// consentRow is a consent as stored.
type consentRow struct {
	ID, SessionID, ToolName, ArgumentsHash, CreatedBy string
	ViaConsole                                        bool
	CreatedAt, ExpiresAt                              time.Time
	ConsumedAt                                        *time.Time
	ApprovalID                                        string
}

func scanConsent(row pgx.Row) (consentRow, error) {
	var c consentRow
	err := row.Scan(&c.ID, &c.SessionID, &c.ToolName, &c.ArgumentsHash, &c.CreatedBy,
		&c.ViaConsole, &c.CreatedAt, &c.ExpiresAt, &c.ConsumedAt, &c.ApprovalID)
	return c, err
}

func consentsInsert(ctx context.Context, db DBTX, tenantID string, c consentRow) (consentRow, error) {
	stored, err := scanConsent(db.QueryRow(ctx, ownerConsentInsert, c.ID, tenantID, c.SessionID, c.ToolName,
		c.ArgumentsHash, c.CreatedBy, c.ViaConsole, c.CreatedAt, c.ExpiresAt))
	if err != nil {
		return consentRow{}, fmt.Errorf("record consent: %w", err)
	}
	return stored, nil
}

// consentsLockMatch is the live consent to exactly this action, locked;
// ok=false when there is none.
func consentsLockMatch(ctx context.Context, db DBTX, tenantID, sessionID, tool, hash string, now time.Time) (consentRow, bool, error) {
	c, err := scanConsent(db.QueryRow(ctx, ownerConsentLockMatch, tenantID, sessionID, tool, hash, now))
	if errors.Is(err, pgx.ErrNoRows) {
		return consentRow{}, false, nil
	}
	if err != nil {
		return consentRow{}, false, fmt.Errorf("match consent: %w", err)
	}
	return c, true, nil
}

// consentsConsume spends a locked consent; ErrConflict if the guard refused
// it, which the lock makes impossible unless it expired meanwhile.
func consentsConsume(ctx context.Context, db DBTX, id, approvalID string, now time.Time) (consentRow, error) {
	c, err := scanConsent(db.QueryRow(ctx, ownerConsentConsume, id, now, approvalID))
	if errors.Is(err, pgx.ErrNoRows) {
		return consentRow{}, fmt.Errorf("consume consent %s: %w", id, ErrConflict)
	}
	if err != nil {
		return consentRow{}, fmt.Errorf("consume consent: %w", err)
	}
	return c, nil
}

func consentsListSession(ctx context.Context, db DBTX, tenantID, sessionID string, limit int) ([]consentRow, error) {
	rows, err := db.Query(ctx, ownerConsentListSession, tenantID, sessionID, limit)
	if err != nil {
		return nil, fmt.Errorf("list consents: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (consentRow, error) { return scanConsent(r) })
	if err != nil {
		return nil, fmt.Errorf("list consents: %w", err)
	}
	return out, nil
}

package service

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// OIDCLoginLifetime bounds the time between the redirect to the identity
// provider and its return: long enough to type a password and answer a
// second factor, short enough that a state found later in a log or a
// browser history is worthless.
const OIDCLoginLifetime = 10 * time.Minute

// All SQL of console_oidc_logins (migrations/00102_console_step_up_oidc.sql).
const (
	oidcLoginInsert = `
INSERT INTO console_oidc_logins (state_hash, nonce, verifier, next_path, step_up, created_at)
VALUES ($1, $2, $3, $4, $5, $6)`

	// oidcLoginTake uses a login once: the row goes in the statement that
	// reads it, so two callbacks with one state cannot both succeed.
	oidcLoginTake = `
DELETE FROM console_oidc_logins
 WHERE state_hash = $1 AND created_at > $2
RETURNING nonce, verifier, next_path, step_up`

	oidcLoginDeleteExpired = `DELETE FROM console_oidc_logins WHERE created_at <= $1`
)

// OIDCLogin is one OpenID Connect sign-in in flight, kept server-side
// under its state: the PKCE verifier and the nonce the ID token must
// carry, where to go afterwards, and whether it is a step-up.
type OIDCLogin struct {
	Nonce    string
	Verifier string
	Next     string
	StepUp   bool
}

func oidcLoginsInsert(ctx context.Context, db DBTX, stateHash string, l OIDCLogin, now time.Time) error {
	_, err := db.Exec(ctx, oidcLoginInsert, stateHash, l.Nonce, l.Verifier, l.Next, l.StepUp, now)
	return err
}

// oidcLoginsTake deletes and returns the live login of stateHash; ok is
// false when there is none (never started, used already, or expired).
func oidcLoginsTake(ctx context.Context, db DBTX, stateHash string, now time.Time) (l OIDCLogin, ok bool, err error) {
	err = db.QueryRow(ctx, oidcLoginTake, stateHash, now.Add(-OIDCLoginLifetime)).
		Scan(&l.Nonce, &l.Verifier, &l.Next, &l.StepUp)
	if errors.Is(err, pgx.ErrNoRows) {
		return OIDCLogin{}, false, nil
	}
	return l, err == nil, err
}

func oidcLoginsDeleteExpired(ctx context.Context, db DBTX, now time.Time) error {
	_, err := db.Exec(ctx, oidcLoginDeleteExpired, now.Add(-OIDCLoginLifetime))
	return err
}

// OIDCLoginStart keeps a sign-in under its state until the identity
// provider sends the browser back, and prunes the abandoned ones. Only the
// state's hash is stored, as for session ids.
func (st *ConsoleSessions) OIDCLoginStart(ctx context.Context, state string, l OIDCLogin, now time.Time) error {
	ctx, cancel := context.WithTimeout(ctx, consoleDBTimeout)
	defer cancel()
	if err := oidcLoginsDeleteExpired(ctx, st.pool, now); err != nil {
		return fmt.Errorf("oidc login: prune: %w", TranslateDBError(err))
	}
	if err := oidcLoginsInsert(ctx, st.pool, hashSessionID(state), l, now); err != nil {
		return fmt.Errorf("oidc login: start: %w", TranslateDBError(err))
	}
	return nil
}

// OIDCLoginTake ends the sign-in of state and returns it: ok is false when
// it was never started, was already used (a replayed callback) or is
// older than OIDCLoginLifetime.
func (st *ConsoleSessions) OIDCLoginTake(ctx context.Context, state string, now time.Time) (OIDCLogin, bool, error) {
	ctx, cancel := context.WithTimeout(ctx, consoleDBTimeout)
	defer cancel()
	l, ok, err := oidcLoginsTake(ctx, st.pool, hashSessionID(state), now)
	if err != nil {
		return OIDCLogin{}, false, fmt.Errorf("oidc login: take: %w", TranslateDBError(err))
	}
	return l, ok, nil
}

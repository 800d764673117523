package service

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// Console session lifetimes (DESIGN §9).
const (
	SessionAbsolute = 12 * time.Hour
	SessionIdle     = 30 * time.Minute
	// sessionTouchEvery bounds last_seen writes to one a minute per session
	// instead of one per page view.
	sessionTouchEvery = time.Minute
)

// All SQL of console_sessions (migrations/00100_console_sessions.sql,
// auth_time from 00102_console_step_up_oidc.sql).
const (
	sessionInsert = `
INSERT INTO console_sessions (id_hash, tenant_id, principal_id, csrf_token, created_at, last_seen, auth_time)
VALUES ($1, $2, $3, $4, $5, $5, $6)`

	sessionGetLive = `
SELECT tenant_id, principal_id, csrf_token, auth_time, last_seen
  FROM console_sessions
 WHERE id_hash = $1 AND created_at > $2 AND last_seen > $3`

	sessionTouch = `
UPDATE console_sessions SET last_seen = $2 WHERE id_hash = $1 AND last_seen < $2`

	// sessionStepUp never moves auth_time back: an older proof arriving
	// late does not undo a newer one.
	sessionStepUp = `
UPDATE console_sessions SET auth_time = $2 WHERE id_hash = $1 AND auth_time < $2`

	sessionDelete = `DELETE FROM console_sessions WHERE id_hash = $1`

	sessionDeletePrincipal = `
DELETE FROM console_sessions WHERE tenant_id = $1 AND principal_id = $2`

	sessionDeleteExpired = `
DELETE FROM console_sessions WHERE created_at <= $1 OR last_seen <= $2`
)

// consoleDBTimeout bounds every session and throttle query: a stuck
// database must not hold a page view forever.
const consoleDBTimeout = 5 * time.Second

// ConsoleSession is a live server-side console session.
type ConsoleSession struct {
	TenantID    string
	PrincipalID string
	CSRF        string
	// AuthTime is when the human last proved who they are: the step-up
	// for critical approvals compares it with the window.
	AuthTime time.Time
}

// ConsoleSessions keeps console sessions and login failures in PostgreSQL
// (console_sessions, console_login_failures). It needs no Service: the
// console signs humans in before any run or approval is touched.
type ConsoleSessions struct {
	pool     *pgxpool.Pool
	throttle LoginThrottle
}

// NewConsoleSessions builds the store over pool. A zero throttle is
// DefaultLoginThrottle; any other must have every budget, window and
// backoff positive. Nothing is queried until a method is called.
func NewConsoleSessions(pool *pgxpool.Pool, throttle LoginThrottle) (*ConsoleSessions, error) {
	if throttle == (LoginThrottle{}) {
		throttle = DefaultLoginThrottle
	}
	if !throttle.valid() {
		return nil, errors.New("service: login throttle needs positive budgets, windows and backoffs")
	}
	return &ConsoleSessions{pool: pool, throttle: throttle}, nil
}

// sessionsInsert stores a new session under its id's hash.
func sessionsInsert(ctx context.Context, db DBTX, idHash, tenantID, principalID, csrf string, now, authTime time.Time) error {
	_, err := db.Exec(ctx, sessionInsert, idHash, tenantID, principalID, csrf, now, authTime)
	return err
}

// sessionsGetLive reads the session of idHash if it is live at now, with
// when it was last seen; ok=false when there is none.
func sessionsGetLive(ctx context.Context, db DBTX, idHash string, now time.Time) (row ConsoleSession, lastSeen time.Time, ok bool, err error) {
	err = db.QueryRow(ctx, sessionGetLive, idHash, now.Add(-SessionAbsolute), now.Add(-SessionIdle)).
		Scan(&row.TenantID, &row.PrincipalID, &row.CSRF, &row.AuthTime, &lastSeen)
	if errors.Is(err, pgx.ErrNoRows) {
		return ConsoleSession{}, time.Time{}, false, nil
	}
	return row, lastSeen, err == nil, err
}

// sessionsTouch marks the session of idHash seen at now.
func sessionsTouch(ctx context.Context, db DBTX, idHash string, now time.Time) error {
	_, err := db.Exec(ctx, sessionTouch, idHash, now)
	return err
}

// sessionsStepUp records a fresh authentication on the session of idHash.
func sessionsStepUp(ctx context.Context, db DBTX, idHash string, authTime time.Time) error {
	_, err := db.Exec(ctx, sessionStepUp, idHash, authTime)
	return err
}

// sessionsDelete ends the session of idHash.
func sessionsDelete(ctx context.Context, db DBTX, idHash string) error {
	_, err := db.Exec(ctx, sessionDelete, idHash)
	return err
}

// sessionsDeletePrincipal ends every session of a principal.
func sessionsDeletePrincipal(ctx context.Context, db DBTX, tenantID, principalID string) error {
	_, err := db.Exec(ctx, sessionDeletePrincipal, tenantID, principalID)
	return err
}

// sessionsDeleteExpired deletes the sessions past either lifetime at now.
func sessionsDeleteExpired(ctx context.Context, db DBTX, now time.Time) error {
	_, err := db.Exec(ctx, sessionDeleteExpired, now.Add(-SessionAbsolute), now.Add(-SessionIdle))
	return err
}

// hashSessionID is the row key of a session id: the table never holds an
// id a stolen backup could replay.
func hashSessionID(id string) string {
	sum := sha256.Sum256([]byte(id))
	return hex.EncodeToString(sum[:])
}

// Create stores a new session and prunes expired ones, so the table stays
// the size of the live sessions without a separate sweeper. authTime is
// when the human proved who they are: now for a password, the identity
// provider's auth_time for single sign-on; never after now.
func (st *ConsoleSessions) Create(ctx context.Context, id, tenantID, principalID, csrf string, now, authTime time.Time) error {
	ctx, cancel := context.WithTimeout(ctx, consoleDBTimeout)
	defer cancel()
	if err := sessionsDeleteExpired(ctx, st.pool, now); err != nil {
		return fmt.Errorf("session: prune: %w", TranslateDBError(err))
	}
	if authTime.After(now) {
		authTime = now
	}
	if err := sessionsInsert(ctx, st.pool, hashSessionID(id), tenantID, principalID, csrf, now, authTime); err != nil {
		return fmt.Errorf("session: create: %w", TranslateDBError(err))
	}
	return nil
}

// Get returns a live session (within both lifetimes); ok is false when
// there is none. With touch, the request counts as activity and refreshes
// the session's idle clock.
func (st *ConsoleSessions) Get(ctx context.Context, id string, now time.Time, touch bool) (row ConsoleSession, ok bool, err error) {
	ctx, cancel := context.WithTimeout(ctx, consoleDBTimeout)
	defer cancel()
	key := hashSessionID(id)
	row, lastSeen, ok, err := sessionsGetLive(ctx, st.pool, key, now)
	if err != nil {
		return ConsoleSession{}, false, fmt.Errorf("session: get: %w", TranslateDBError(err))
	}
	if !ok {
		return ConsoleSession{}, false, nil
	}
	if touch && now.Sub(lastSeen) >= sessionTouchEvery {
		if err := sessionsTouch(ctx, st.pool, key, now); err != nil {
			return ConsoleSession{}, false, fmt.Errorf("session: touch: %w", TranslateDBError(err))
		}
	}
	return row, true, nil
}

// SteppedUp records that the human of a session proved who they are again
// at authTime (the step-up for critical approvals). A session that ended
// meanwhile stays ended; an authTime older than the recorded one changes
// nothing.
func (st *ConsoleSessions) SteppedUp(ctx context.Context, id string, authTime time.Time) error {
	ctx, cancel := context.WithTimeout(ctx, consoleDBTimeout)
	defer cancel()
	if err := sessionsStepUp(ctx, st.pool, hashSessionID(id), authTime); err != nil {
		return fmt.Errorf("session: step up: %w", TranslateDBError(err))
	}
	return nil
}

// Delete ends one session.
func (st *ConsoleSessions) Delete(ctx context.Context, id string) error {
	ctx, cancel := context.WithTimeout(ctx, consoleDBTimeout)
	defer cancel()
	if err := sessionsDelete(ctx, st.pool, hashSessionID(id)); err != nil {
		return fmt.Errorf("session: delete: %w", TranslateDBError(err))
	}
	return nil
}

// DeletePrincipal ends every session of a principal ("sign out everywhere").
func (st *ConsoleSessions) DeletePrincipal(ctx context.Context, tenantID, principalID string) error {
	ctx, cancel := context.WithTimeout(ctx, consoleDBTimeout)
	defer cancel()
	if err := sessionsDeletePrincipal(ctx, st.pool, tenantID, principalID); err != nil {
		return fmt.Errorf("session: delete all: %w", TranslateDBError(err))
	}
	return nil
}

package handlers

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
	sessionAbsolute = 12 * time.Hour
	sessionIdle     = 30 * time.Minute
	// sessionTouchEvery bounds last_seen writes to one a minute per session
	// instead of one per page view.
	sessionTouchEvery = time.Minute
)

// All SQL of console_sessions and console_login_failures
// (migrations/00100_console_sessions.sql, 00101_console_login_address.sql).
const (
	sessionInsert = `
INSERT INTO console_sessions (id_hash, tenant_id, principal_id, csrf_token, created_at, last_seen)
VALUES ($1, $2, $3, $4, $5, $5)`

	sessionGetLive = `
SELECT tenant_id, principal_id, csrf_token, last_seen
  FROM console_sessions
 WHERE id_hash = $1 AND created_at > $2 AND last_seen > $3`

	sessionTouch = `
UPDATE console_sessions SET last_seen = $2 WHERE id_hash = $1 AND last_seen < $2`

	sessionDelete = `DELETE FROM console_sessions WHERE id_hash = $1`

	sessionDeletePrincipal = `
DELETE FROM console_sessions WHERE tenant_id = $1 AND principal_id = $2`

	sessionDeleteExpired = `
DELETE FROM console_sessions WHERE created_at <= $1 OR last_seen <= $2`

	// loginAttemptLock serializes the attempts on one key: namespace 1 is
	// accounts, 2 client addresses (two-key advisory locks never overlap the
	// one-key lock of the migrations).
	loginAttemptLock = `SELECT pg_advisory_xact_lock($1::int4, hashtext($2))`

	// loginFailureCounts: the pair's failures and the last of them within
	// the window ($3), the address's within the window, the account's within
	// the ceiling's window ($4).
	loginFailureCounts = `
SELECT p.n, p.last,
       (SELECT count(*) FROM console_login_failures WHERE client_ip = $2 AND failed_at > $3),
       (SELECT count(*) FROM console_login_failures WHERE account = $1 AND failed_at > $4)
  FROM (SELECT count(*) AS n, max(failed_at) AS last FROM console_login_failures
         WHERE account = $1 AND client_ip = $2 AND failed_at > $3) AS p`

	loginFailureInsert = `
INSERT INTO console_login_failures (account, client_ip, failed_at) VALUES ($1, $2, $3)`

	loginFailureClear = `DELETE FROM console_login_failures WHERE account = $1 AND client_ip = $2`

	// loginAttemptRelease takes back one recorded attempt whose password was
	// never checked.
	loginAttemptRelease = `
DELETE FROM console_login_failures
 WHERE ctid = (SELECT ctid FROM console_login_failures
                WHERE account = $1 AND client_ip = $2 AND failed_at = $3 LIMIT 1)`

	loginFailurePrune = `DELETE FROM console_login_failures WHERE failed_at <= $1`
)

// dbTimeout bounds every session query: a stuck database must not hold a
// page view forever.
const dbTimeout = 5 * time.Second

// sessionRow is a live server-side session.
type sessionRow struct {
	TenantID    string
	PrincipalID string
	CSRF        string
}

// sessionStore keeps console sessions and login failures in PostgreSQL.
type sessionStore struct {
	pool     *pgxpool.Pool
	throttle LoginThrottle
}

// hashSessionID is the row key of a session id.
func hashSessionID(id string) string {
	sum := sha256.Sum256([]byte(id))
	return hex.EncodeToString(sum[:])
}

// create stores a new session and prunes expired ones, so the table stays
// the size of the live sessions without a separate sweeper.
func (st *sessionStore) create(ctx context.Context, id, tenantID, principalID, csrf string, now time.Time) error {
	ctx, cancel := context.WithTimeout(ctx, dbTimeout)
	defer cancel()
	if _, err := st.pool.Exec(ctx, sessionDeleteExpired, now.Add(-sessionAbsolute), now.Add(-sessionIdle)); err != nil {
		return fmt.Errorf("session: prune: %w", err)
	}
	if _, err := st.pool.Exec(ctx, sessionInsert, hashSessionID(id), tenantID, principalID, csrf, now); err != nil {
		return fmt.Errorf("session: create: %w", err)
	}
	return nil
}

// get returns a live session (within both lifetimes); ok is false when
// there is none. With touch, the request counts as activity and refreshes
// the session's idle clock.
func (st *sessionStore) get(ctx context.Context, id string, now time.Time, touch bool) (row sessionRow, ok bool, err error) {
	ctx, cancel := context.WithTimeout(ctx, dbTimeout)
	defer cancel()
	key := hashSessionID(id)
	var lastSeen time.Time
	err = st.pool.QueryRow(ctx, sessionGetLive, key, now.Add(-sessionAbsolute), now.Add(-sessionIdle)).
		Scan(&row.TenantID, &row.PrincipalID, &row.CSRF, &lastSeen)
	if errors.Is(err, pgx.ErrNoRows) {
		return sessionRow{}, false, nil
	}
	if err != nil {
		return sessionRow{}, false, fmt.Errorf("session: get: %w", err)
	}
	if touch && now.Sub(lastSeen) >= sessionTouchEvery {
		if _, err := st.pool.Exec(ctx, sessionTouch, key, now); err != nil {
			return sessionRow{}, false, fmt.Errorf("session: touch: %w", err)
		}
	}
	return row, true, nil
}

// delete ends one session.
func (st *sessionStore) delete(ctx context.Context, id string) error {
	ctx, cancel := context.WithTimeout(ctx, dbTimeout)
	defer cancel()
	if _, err := st.pool.Exec(ctx, sessionDelete, hashSessionID(id)); err != nil {
		return fmt.Errorf("session: delete: %w", err)
	}
	return nil
}

// deletePrincipal ends every session of a principal ("sign out everywhere").
func (st *sessionStore) deletePrincipal(ctx context.Context, tenantID, principalID string) error {
	ctx, cancel := context.WithTimeout(ctx, dbTimeout)
	defer cancel()
	if _, err := st.pool.Exec(ctx, sessionDeletePrincipal, tenantID, principalID); err != nil {
		return fmt.Errorf("session: delete all: %w", err)
	}
	return nil
}

// loginVerdict says whether a sign-in attempt may check a password.
type loginVerdict int

const (
	loginAllowed loginVerdict = iota
	loginPairThrottled
	loginAddressThrottled
	loginBackoff
)

// Lock namespaces of loginAttemptLock.
const (
	lockNSAccount int32 = 1
	lockNSAddress int32 = 2
)

// loginCounts are the failures a verdict is taken on.
type loginCounts struct {
	pair     int
	pairLast time.Time // the pair's last failure; zero when pair is 0
	address  int
	account  int // within AccountWindow
}

// decide is the throttle's verdict on an attempt at now, and how long to
// wait when it is a backoff.
func (t LoginThrottle) decide(c loginCounts, now time.Time) (loginVerdict, time.Duration) {
	switch {
	case c.pair >= t.PerPair:
		return loginPairThrottled, 0
	case c.address >= t.PerAddress:
		return loginAddressThrottled, 0
	case c.pair == 0:
		return loginAllowed, 0
	}
	// One typo costs nothing; the backoff starts at the second failure,
	// or at the first once the account is past its ceiling.
	base, doublings := t.Backoff, c.pair-2
	if c.account >= t.AccountCeiling {
		base, doublings = t.AccountBackoff, c.pair-1
	}
	if doublings < 0 {
		return loginAllowed, 0
	}
	// Doubling stops at the window: past it the pair budget refuses anyway,
	// and the cap keeps a large configured budget from overflowing.
	delay := base
	for range doublings {
		if delay >= t.Window {
			break
		}
		delay *= 2
	}
	delay = min(delay, t.Window)
	if wait := c.pairLast.Add(delay).Sub(now); wait > 0 {
		return loginBackoff, wait
	}
	return loginAllowed, 0
}

// loginAttempt decides whether account may try a password from addr, and
// when it may, records the attempt as a failure before the password is
// checked (loginSucceeded clears it). Counting and recording happen in one
// transaction under advisory locks on the account and the address, taken
// in that order by every caller: parallel guesses queue on the locks, each
// sees the ones before it, and at most the budget get through. wait is set
// for a backoff.
func (st *sessionStore) loginAttempt(ctx context.Context, account, addr string, now time.Time) (verdict loginVerdict, wait time.Duration, err error) {
	ctx, cancel := context.WithTimeout(ctx, dbTimeout)
	defer cancel()
	t := st.throttle
	err = pgx.BeginFunc(ctx, st.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, loginAttemptLock, lockNSAccount, account); err != nil {
			return fmt.Errorf("lock account: %w", err)
		}
		if _, err := tx.Exec(ctx, loginAttemptLock, lockNSAddress, addr); err != nil {
			return fmt.Errorf("lock address: %w", err)
		}
		var c loginCounts
		var last *time.Time
		if err := tx.QueryRow(ctx, loginFailureCounts, account, addr, now.Add(-t.Window), now.Add(-t.AccountWindow)).
			Scan(&c.pair, &last, &c.address, &c.account); err != nil {
			return fmt.Errorf("count: %w", err)
		}
		if last != nil {
			c.pairLast = *last
		}
		if verdict, wait = t.decide(c, now); verdict != loginAllowed {
			return nil
		}
		if _, err := tx.Exec(ctx, loginFailurePrune, now.Add(-max(t.Window, t.AccountWindow))); err != nil {
			return fmt.Errorf("prune: %w", err)
		}
		if _, err := tx.Exec(ctx, loginFailureInsert, account, addr, now); err != nil {
			return fmt.Errorf("record: %w", err)
		}
		return nil
	})
	if err != nil {
		return loginAllowed, 0, fmt.Errorf("login throttle: %w", err)
	}
	return verdict, wait, nil
}

// loginReleased takes back an attempt recorded by loginAttempt at now
// whose password was never checked (the server was too busy), so it does
// not count against the budgets.
func (st *sessionStore) loginReleased(ctx context.Context, account, addr string, now time.Time) error {
	ctx, cancel := context.WithTimeout(ctx, dbTimeout)
	defer cancel()
	if _, err := st.pool.Exec(ctx, loginAttemptRelease, account, addr, now); err != nil {
		return fmt.Errorf("login throttle: release: %w", err)
	}
	return nil
}

// loginSucceeded forgets the failures of the account from this address
// only: failures from other addresses (a guesser's) still count against
// them and against the account's ceiling.
func (st *sessionStore) loginSucceeded(ctx context.Context, account, addr string) error {
	ctx, cancel := context.WithTimeout(ctx, dbTimeout)
	defer cancel()
	if _, err := st.pool.Exec(ctx, loginFailureClear, account, addr); err != nil {
		return fmt.Errorf("login throttle: clear: %w", err)
	}
	return nil
}

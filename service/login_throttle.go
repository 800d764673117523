package service

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// LoginThrottle bounds failed console sign-ins before any password is
// checked (429). Failures are keyed on the pair (account, client address),
// so a hostile address spends its own budget and never the approver's:
//
//   - PerPair failures of one account from one address within Window
//     refuse that pair until they leave the window;
//   - PerAddress failures from one address within Window, across accounts,
//     refuse the address;
//   - after a pair's n-th failure (n ≥ 2: one typo costs nothing) its next
//     attempt waits Backoff·2^(n-2);
//   - past AccountCeiling failures of one account within AccountWindow,
//     from all addresses, that wait is AccountBackoff·2^(n-1) from the
//     first failure instead. The
//     ceiling only slows addresses that have already failed: an address
//     with no failure for the account is never held back by it.
//
// A successful sign-in clears its pair. The tradeoff is in README
// (Security).
type LoginThrottle struct {
	PerPair        int
	PerAddress     int
	Window         time.Duration
	Backoff        time.Duration
	AccountCeiling int
	AccountWindow  time.Duration
	AccountBackoff time.Duration
}

// DefaultLoginThrottle allows a human a few typos and a shared office
// address several people's, while a guesser gets a handful of slowing
// tries per address per quarter hour, and many addresses guessing one
// account are slowed to minutes per try.
var DefaultLoginThrottle = LoginThrottle{
	PerPair: 5, PerAddress: 30, Window: 15 * time.Minute, Backoff: time.Second,
	AccountCeiling: 100, AccountWindow: time.Hour, AccountBackoff: 30 * time.Second,
}

// valid reports whether every budget and duration is positive.
func (t LoginThrottle) valid() bool {
	return t.PerPair > 0 && t.PerAddress > 0 && t.Window > 0 && t.Backoff > 0 &&
		t.AccountCeiling > 0 && t.AccountWindow > 0 && t.AccountBackoff > 0
}

// All SQL of console_login_failures (migrations/00101_console_login_address.sql).
const (
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

// LoginVerdict says whether a sign-in attempt may check a password.
type LoginVerdict int

const (
	LoginAllowed LoginVerdict = iota
	LoginPairThrottled
	LoginAddressThrottled
	LoginBackoff
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

// loginAttemptsLock takes the transaction's advisory lock on key in the
// namespace ns.
func loginAttemptsLock(ctx context.Context, db DBTX, ns int32, key string) error {
	_, err := db.Exec(ctx, loginAttemptLock, ns, key)
	return err
}

// loginFailuresCount counts the failures of the pair since pairSince (with
// its last), of the address since pairSince, and of the account since
// accountSince.
func loginFailuresCount(ctx context.Context, db DBTX, account, addr string, pairSince, accountSince time.Time) (loginCounts, error) {
	var c loginCounts
	var last *time.Time
	if err := db.QueryRow(ctx, loginFailureCounts, account, addr, pairSince, accountSince).
		Scan(&c.pair, &last, &c.address, &c.account); err != nil {
		return loginCounts{}, err
	}
	if last != nil {
		c.pairLast = *last
	}
	return c, nil
}

// loginFailuresInsert records a failure of the pair at now.
func loginFailuresInsert(ctx context.Context, db DBTX, account, addr string, now time.Time) error {
	_, err := db.Exec(ctx, loginFailureInsert, account, addr, now)
	return err
}

// loginFailuresPrune deletes failures at or before cutoff.
func loginFailuresPrune(ctx context.Context, db DBTX, cutoff time.Time) error {
	_, err := db.Exec(ctx, loginFailurePrune, cutoff)
	return err
}

// loginFailuresRelease deletes one failure of the pair recorded at at.
func loginFailuresRelease(ctx context.Context, db DBTX, account, addr string, at time.Time) error {
	_, err := db.Exec(ctx, loginAttemptRelease, account, addr, at)
	return err
}

// loginFailuresClear deletes every failure of the pair.
func loginFailuresClear(ctx context.Context, db DBTX, account, addr string) error {
	_, err := db.Exec(ctx, loginFailureClear, account, addr)
	return err
}

// decide is the throttle's verdict on an attempt at now, and how long to
// wait when it is a backoff.
func (t LoginThrottle) decide(c loginCounts, now time.Time) (LoginVerdict, time.Duration) {
	switch {
	case c.pair >= t.PerPair:
		return LoginPairThrottled, 0
	case c.address >= t.PerAddress:
		return LoginAddressThrottled, 0
	case c.pair == 0:
		return LoginAllowed, 0
	}
	// One typo costs nothing; the backoff starts at the second failure,
	// or at the first once the account is past its ceiling.
	base, doublings := t.Backoff, c.pair-2
	if c.account >= t.AccountCeiling {
		base, doublings = t.AccountBackoff, c.pair-1
	}
	if doublings < 0 {
		return LoginAllowed, 0
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
		return LoginBackoff, wait
	}
	return LoginAllowed, 0
}

// ThrottleWindow is how long a refused pair or address waits (the
// sign-in page says so).
func (st *ConsoleSessions) ThrottleWindow() time.Duration { return st.throttle.Window }

// LoginAttempt decides whether account may try a password from addr, and
// when it may, records the attempt as a failure before the password is
// checked (LoginSucceeded clears it). Counting and recording happen in one
// transaction under advisory locks on the account and the address, taken
// in that order by every caller: parallel guesses queue on the locks, each
// sees the ones before it, and at most the budget get through. wait is set
// for a backoff.
func (st *ConsoleSessions) LoginAttempt(ctx context.Context, account, addr string, now time.Time) (verdict LoginVerdict, wait time.Duration, err error) {
	ctx, cancel := context.WithTimeout(ctx, consoleDBTimeout)
	defer cancel()
	t := st.throttle
	err = pgx.BeginFunc(ctx, st.pool, func(tx pgx.Tx) error {
		if err := loginAttemptsLock(ctx, tx, lockNSAccount, account); err != nil {
			return fmt.Errorf("lock account: %w", err)
		}
		if err := loginAttemptsLock(ctx, tx, lockNSAddress, addr); err != nil {
			return fmt.Errorf("lock address: %w", err)
		}
		c, err := loginFailuresCount(ctx, tx, account, addr, now.Add(-t.Window), now.Add(-t.AccountWindow))
		if err != nil {
			return fmt.Errorf("count: %w", err)
		}
		if verdict, wait = t.decide(c, now); verdict != LoginAllowed {
			return nil
		}
		if err := loginFailuresPrune(ctx, tx, now.Add(-max(t.Window, t.AccountWindow))); err != nil {
			return fmt.Errorf("prune: %w", err)
		}
		if err := loginFailuresInsert(ctx, tx, account, addr, now); err != nil {
			return fmt.Errorf("record: %w", err)
		}
		return nil
	})
	if err != nil {
		return LoginAllowed, 0, fmt.Errorf("login throttle: %w", TranslateDBError(err))
	}
	return verdict, wait, nil
}

// LoginReleased takes back an attempt recorded by LoginAttempt at now
// whose password was never checked (the server was too busy), so it does
// not count against the budgets.
func (st *ConsoleSessions) LoginReleased(ctx context.Context, account, addr string, now time.Time) error {
	ctx, cancel := context.WithTimeout(ctx, consoleDBTimeout)
	defer cancel()
	if err := loginFailuresRelease(ctx, st.pool, account, addr, now); err != nil {
		return fmt.Errorf("login throttle: release: %w", TranslateDBError(err))
	}
	return nil
}

// LoginSucceeded forgets the failures of the account from this address
// only: failures from other addresses (a guesser's) still count against
// them and against the account's ceiling.
func (st *ConsoleSessions) LoginSucceeded(ctx context.Context, account, addr string) error {
	ctx, cancel := context.WithTimeout(ctx, consoleDBTimeout)
	defer cancel()
	if err := loginFailuresClear(ctx, st.pool, account, addr); err != nil {
		return fmt.Errorf("login throttle: clear: %w", TranslateDBError(err))
	}
	return nil
}

// Package service is Gatehouse's application layer: runs and their leases,
// the single gate, approvals, resume with revalidation, the expiry reaper and
// the event log, on PostgreSQL through pgx. Every surface (API, console, CLI)
// calls these methods; SQL lives in one repository file per table.
package service

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"strings"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"gatehouse/engine"
	"gatehouse/rules"
)

// SystemTenant is the tenant of events that belong to no tenant, such as
// policy.profile.loaded: the empty string, which no principal can hold.
const SystemTenant = ""

// Config wires a Service.
type Config struct {
	Pool       *pgxpool.Pool
	Policy     *rules.Set // rulesets by profile, default profile, catalog
	Principals PrincipalDirectory
	Now        func() time.Time // nil: time.Now (the only clock read)
	Logger     *slog.Logger
	Metrics    Metrics
	// ReplicaID names this process in leases and policy_profiles.loaded_by.
	ReplicaID string
	// SkipProfileAudit leaves policy_profiles and policy.profile.loaded
	// alone: set by one-shot commands (the approval CLI), so only servers
	// record the policy they load.
	SkipProfileAudit bool
	// Notify routes approval changes to people; nil: no notifications.
	Notify *Notifications
	// Advisor is the advisory layer's advisor; nil: the layer is off
	// whatever the profiles and AdvisoryObserve say (New warns once when
	// they ask for it).
	Advisor engine.PolicyAdvisor
	// AdvisoryObserve asks the advisor on runs whose profile does not
	// enforce the layer and records its verdict, changing no decision
	// (AGENT_POLICY_ADVISORY_OBSERVE_ENABLED).
	AdvisoryObserve bool
	// GrantSites are the operator's site scopes for browser task grants
	// (CONSOLE_BROWSER_GRANT_SITES); nil: no approval carries an offer.
	GrantSites *engine.GrantSites
}

// Service is the application layer every surface calls: API, console, CLI.
type Service struct {
	cfg     Config
	pool    *pgxpool.Pool
	now     func() time.Time
	log     *slog.Logger
	metrics Metrics

	// wakeups wakes long-polls when RunListener hears their tenant.
	wakeups wakeups
	// eventsFallback is how long a long-poll waits for a wakeup before it
	// queries anyway (eventsFallbackPoll; tests change it).
	eventsFallback time.Duration
	// listenerIdle is how long the listener waits for a notification before
	// it pings its connection (listenerPingEvery; tests change it).
	listenerIdle time.Duration

	// failAfterStep injects a crash after a numbered step of parking a run
	// (1..7 inside the transaction, 8 after commit). Set only in tests.
	failAfterStep func(step int) error
	// onAuthorize observes every authorization. Set only in tests.
	onAuthorize func(invocationID string)
	// failAfterTaskGrant injects a failure after an approve_for_task
	// resolution created its grant, inside the transaction. Set only in
	// tests.
	failAfterTaskGrant func() error
	// onListening observes each LISTEN that took, with the backend's pid.
	// Set only in tests.
	onListening func(pid uint32)

	// notifierWake wakes RunNotifier when this replica wrote a
	// notification.
	notifierWake chan struct{}
}

// New builds a Service and, unless cfg.SkipProfileAudit, records
// policy.profile.loaded for each ruleset, as system-tenant events
// (SystemTenant) beside policy_profiles rows, in one transaction.
func New(ctx context.Context, cfg Config) (*Service, error) {
	if cfg.Pool == nil {
		return nil, errors.New("service: config needs a pool")
	}
	if cfg.Policy == nil {
		return nil, errors.New("service: config needs the loaded policy")
	}
	s := &Service{cfg: cfg, pool: cfg.Pool, now: cfg.Now, log: cfg.Logger, metrics: cfg.Metrics, eventsFallback: eventsFallbackPoll, listenerIdle: listenerPingEvery, notifierWake: make(chan struct{}, 1)}
	if s.now == nil {
		s.now = time.Now
	}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	if s.metrics == nil {
		s.metrics = noMetrics{}
	}
	if s.cfg.ReplicaID == "" {
		s.cfg.ReplicaID = "gatehouse"
	}
	s.warnAdvisoryWithoutAdvisor()
	if err := s.recordProfiles(ctx); err != nil {
		return nil, err
	}
	return s, nil
}

// Ping reports whether the database answers (readiness).
func (s *Service) Ping(ctx context.Context) error {
	if err := s.pool.Ping(ctx); err != nil {
		return fmt.Errorf("service: ping: %w", err)
	}
	return nil
}

// DBTX is what repository functions run on: the pool or a transaction.
type DBTX interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

const txAttempts = 5

// withTx runs fn in a transaction, retrying a bounded number of times when
// PostgreSQL reports a serialization failure or a deadlock (fn must be safe
// to re-run: it only touches the transaction). after runs once, after the
// commit that succeeded, for side effects such as metrics.
func (s *Service) withTx(ctx context.Context, fn func(tx pgx.Tx, after *afterCommit) error) error {
	var err error
	for attempt := range txAttempts {
		var after afterCommit
		err = pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error { return fn(tx, &after) })
		if err == nil {
			after.run()
			return nil
		}
		if !retryable(err) || ctx.Err() != nil {
			if ctx.Err() == nil && IsUnavailable(err) {
				return fmt.Errorf("%w: %w", ErrUnavailable, err)
			}
			return err
		}
		s.log.Debug("service: retrying transaction", "attempt", attempt+1)
	}
	return err
}

// afterCommit collects side effects that must happen only once the
// transaction committed.
type afterCommit struct{ fns []func() }

func (a *afterCommit) add(fn func()) { a.fns = append(a.fns, fn) }
func (a *afterCommit) run() {
	for _, fn := range a.fns {
		fn()
	}
}

func retryable(err error) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && (pgErr.Code == "40001" || pgErr.Code == "40P01")
}

// ErrUnavailable is an outage, not a fault of the request or the service:
// the database could not be reached, or went away mid-request. Surfaces
// answer it as "retry later" (HTTP 503).
var ErrUnavailable = errors.New("database unavailable")

// IsUnavailable reports whether err is an outage of the database: a
// failed connect, a connection lost mid-statement, the server shutting
// down or refusing connections, or a wait for a connection that ran out.
// Any method's error may be passed, wrapped or not; a cancelled caller is
// not an outage.
func IsUnavailable(err error) bool {
	if err == nil || errors.Is(err, context.Canceled) {
		return false
	}
	var ce *pgconn.ConnectError
	var pe *pgconn.PgError
	var ne net.Error
	switch {
	case errors.Is(err, ErrUnavailable), errors.Is(err, context.DeadlineExceeded), errors.As(err, &ce):
		return true
	case errors.As(err, &pe):
		// Class 08 is connection exception; 57P01-03 the server shutting
		// down, crashing or starting; 53300 too many connections.
		return strings.HasPrefix(pe.Code, "08") || pe.Code == "57P01" || pe.Code == "57P02" || pe.Code == "57P03" || pe.Code == "53300"
	case errors.As(err, &ne):
		return true
	}
	return errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, net.ErrClosed) ||
		errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE) ||
		pgconn.SafeToRetry(err)
}

func isUniqueViolation(err error) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && pgErr.Code == "23505"
}

func (s *Service) ruleset(profile string) (*engine.LoadedRuleset, bool) {
	return s.cfg.Policy.Ruleset(profile)
}

// currentPrincipal is the principal behind a run now. A principal that no
// longer exists holds no scopes; without a directory (the CLI), the stamp
// stands in.
func (s *Service) currentPrincipal(tenantID, id string, stamp []string) engine.Principal {
	if s.cfg.Principals == nil {
		return engine.Principal{ID: id, TenantID: tenantID, Scopes: stamp}
	}
	if p, ok := s.cfg.Principals.Principal(tenantID, id); ok {
		return p
	}
	return engine.Principal{ID: id, TenantID: tenantID, Scopes: []string{}}
}

// Scopes the service itself requires, matching the API routes, so that no
// surface (API, console, CLI) can reach these methods without them.
const (
	scopeApprovalRead    = engine.ScopeApprovalRead
	scopeApprovalResolve = engine.ScopeApprovalResolve
	scopeRunCancel       = engine.ScopeRunCancel
	scopeGrantRead       = engine.ScopeGrantRead
	scopeGrantWrite      = engine.ScopeGrantWrite
)

// requireScope is ErrForbidden unless p holds scope. It runs before any
// lookup, so a refusal says nothing about whether a row exists.
func requireScope(p engine.Principal, scope string) error {
	if len(engine.MissingScopes([]string{scope}, p.Scopes)) > 0 {
		return fmt.Errorf("principal lacks %s: %w", scope, ErrForbidden)
	}
	return nil
}

type noMetrics struct{}

func (noMetrics) ApprovalRequested(engine.SideEffectClass, engine.RiskLevel) {}
func (noMetrics) ApprovalResolved(engine.ApprovalStatus, time.Duration)      {}
func (noMetrics) ApprovalExpired(engine.RiskLevel)                           {}
func (noMetrics) Denied(string)                                              {}
func (noMetrics) CircuitBreakerTripped()                                     {}
func (noMetrics) RevalidationVoided(string)                                  {}
func (noMetrics) NotificationDelivered(string, string, time.Duration)        {}
func (noMetrics) NotificationBacklog(int)                                    {}
func (noMetrics) AdvisoryConsulted(string, bool, time.Duration)              {}
func (noMetrics) AdvisoryAbstained(string)                                   {}

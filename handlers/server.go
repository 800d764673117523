// Package handlers serves the JSON API (/v1) and the console pages over the
// same service methods.
package handlers

import (
	"errors"
	"log/slog"
	"net/http"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/labstack/echo/v4"

	"gatehouse/auth"
	"gatehouse/internal/metrics"
	"gatehouse/rules"
)

// Config wires a Server. Service, Directory, Policy and Metrics are
// required.
type Config struct {
	Service   Service
	Directory *auth.Directory
	Policy    *rules.Set
	Logger    *slog.Logger     // nil: discard
	Metrics   *metrics.Metrics // its registry is what /metrics serves
	// BaseURL is the absolute origin of the console (links, same-origin
	// checks); its host is one the server answers for. Required.
	BaseURL string
	// ListenAddr is the address the server listens on; when it names a host
	// that host is answered for too, and in dev mode its port with the
	// loopback names (127.0.0.1, localhost, [::1]).
	ListenAddr string
	// AllowedHosts are further Host values to answer for (CONSOLE_ALLOWED_HOSTS):
	// the names agents and proxies reach the server by, beyond the base URL's.
	AllowedHosts []string
	// DevMode is AUTH_MODE=dev: the console logs the dev principal in.
	DevMode bool
	// SessionKeys sign and verify console cookies: the first signs, all
	// verify (rotation).
	SessionKeys [][]byte
	Now         func() time.Time // nil: time.Now
	// Pool holds the console's server-side sessions and login throttling
	// (console_sessions, console_login_failures).
	Pool *pgxpool.Pool
	// RateLimit bounds each principal's API request rate; zero: the default.
	RateLimit RateLimit
	// IPExtractor decides the client address; nil: the direct peer address,
	// never a forwarded header.
	IPExtractor echo.IPExtractor
	// LoginThrottle bounds failed console sign-ins; zero: the default.
	LoginThrottle LoginThrottle
}

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

// RateLimit is a token bucket per principal.
type RateLimit struct {
	PerSecond float64
	Burst     int
}

// DefaultRateLimit is generous: it stops a runaway loop, not a busy agent.
var DefaultRateLimit = RateLimit{PerSecond: 50, Burst: 100}

// Server holds what every handler needs.
type Server struct {
	cfg     Config
	log     *slog.Logger
	now     func() time.Time
	limiter *limiter
	hosts   hostAllowlist
	echo    *echo.Echo
}

// New builds the server and its routes.
func New(cfg Config) (*Server, error) {
	switch {
	case cfg.Service == nil:
		return nil, errors.New("handlers: Config.Service is required")
	case cfg.Directory == nil:
		return nil, errors.New("handlers: Config.Directory is required")
	case cfg.Policy == nil:
		return nil, errors.New("handlers: Config.Policy is required")
	case cfg.Metrics == nil:
		return nil, errors.New("handlers: Config.Metrics is required")
	case cfg.Pool == nil:
		return nil, errors.New("handlers: Config.Pool is required (console sessions)")
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.RateLimit == (RateLimit{}) {
		cfg.RateLimit = DefaultRateLimit
	}
	if cfg.RateLimit.PerSecond <= 0 || cfg.RateLimit.Burst < 1 {
		return nil, errors.New("handlers: rate limit needs a positive rate and a burst of at least 1")
	}
	if cfg.LoginThrottle == (LoginThrottle{}) {
		cfg.LoginThrottle = DefaultLoginThrottle
	}
	if !cfg.LoginThrottle.valid() {
		return nil, errors.New("handlers: login throttle needs positive budgets, windows and backoffs")
	}
	if cfg.IPExtractor == nil {
		cfg.IPExtractor = echo.ExtractIPDirect()
	}
	hosts, err := newHostAllowlist(cfg.BaseURL, cfg.ListenAddr, cfg.AllowedHosts, cfg.DevMode)
	if err != nil {
		return nil, err
	}
	s := &Server{
		cfg:     cfg,
		log:     cfg.Logger,
		now:     cfg.Now,
		limiter: newLimiter(cfg.RateLimit, cfg.Now),
		hosts:   hosts,
	}
	e := echo.New()
	e.HideBanner = true
	e.HidePort = true
	e.IPExtractor = cfg.IPExtractor
	e.HTTPErrorHandler = s.handleError
	s.routes(e)
	s.echo = e
	return s, nil
}

// Handler is the HTTP handler of the whole server.
func (s *Server) Handler() http.Handler { return s.echo }

// Echo exposes the router (route listing in tests).
func (s *Server) Echo() *echo.Echo { return s.echo }

// Package handlers is the HTTP server: its Config, the route table that
// lists the JSON API (handlers/api) and the console pages
// (handlers/console) with their scopes, and what every request goes
// through (request ids, logging, panics, the Host check, the one error
// handler).
package handlers

import (
	"errors"
	"log/slog"
	"net/http"
	"time"

	"github.com/labstack/echo/v4"

	"gatehouse/auth"
	"gatehouse/handlers/api"
	"gatehouse/handlers/console"
	"gatehouse/handlers/internal/httpx"
	"gatehouse/internal/metrics"
	"gatehouse/mcpgw"
	"gatehouse/rules"
)

// Config wires a Server. Service, Directory, Policy, Metrics and Sessions
// are required.
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
	// RequestLogLevel is the level of the one line per request (a 5xx is
	// always an error): info by default; dev mode logs them at debug, so a
	// newcomer's terminal is not flooded by the demo agent's long-polls.
	RequestLogLevel slog.Level
	// SessionKeys sign and verify console cookies: the first signs, all
	// verify (rotation).
	SessionKeys [][]byte
	Now         func() time.Time // nil: time.Now
	// Sessions holds the console's server-side sessions and login
	// throttling (service.NewConsoleSessions). Required.
	Sessions Sessions
	// RateLimit bounds each principal's API request rate; zero: the default.
	RateLimit RateLimit
	// IPExtractor decides the client address; nil: the direct peer address,
	// never a forwarded header.
	IPExtractor echo.IPExtractor
	// VAPIDPublicKey is the Web Push public key (base64url) browsers
	// subscribe with; "" leaves the console without push subscriptions.
	VAPIDPublicKey string
	// OIDC is the console's single sign-on (console.NewOIDC); nil:
	// passwords only.
	OIDC *console.OIDC
	// StepUpWindow is how recent an authentication approving a critical
	// action needs: zero is console.DefaultStepUpWindow, negative turns
	// the step-up off.
	StepUpWindow time.Duration
	// MCP is the MCP gateway (mcpgw), mounted at /mcp, whose upstreams'
	// tools the policy page lists; nil: none (CONSOLE_MCP unset).
	MCP MCPGateway
}

// MCPGateway is what the server uses of the MCP gateway; *mcpgw.Gateway
// satisfies it.
type MCPGateway interface {
	Handler() http.Handler
	Hints() []mcpgw.Hint
}

// RateLimit is a token bucket per principal (api.RateLimit).
type RateLimit = api.RateLimit

// Service is what the API and the console call; *service.Service
// satisfies it.
type Service = httpx.Service

// Sessions is the console's server-side sessions and sign-in throttle;
// *service.ConsoleSessions satisfies it.
type Sessions = console.Sessions

// Server is the router with the API and the console mounted on it.
type Server struct {
	cfg   Config
	log   *slog.Logger
	now   func() time.Time
	hosts hostAllowlist
	echo  *echo.Echo
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
	case cfg.Sessions == nil:
		return nil, errors.New("handlers: Config.Sessions is required (console sessions)")
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.RateLimit == (RateLimit{}) {
		cfg.RateLimit = api.DefaultRateLimit
	}
	if cfg.RateLimit.PerSecond <= 0 || cfg.RateLimit.Burst < 1 {
		return nil, errors.New("handlers: rate limit needs a positive rate and a burst of at least 1")
	}
	if cfg.IPExtractor == nil {
		cfg.IPExtractor = echo.ExtractIPDirect()
	}
	hosts, err := newHostAllowlist(cfg.BaseURL, cfg.ListenAddr, cfg.AllowedHosts, cfg.DevMode)
	if err != nil {
		return nil, err
	}
	s := &Server{
		cfg:   cfg,
		log:   cfg.Logger,
		now:   cfg.Now,
		hosts: hosts,
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

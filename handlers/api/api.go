// Package api serves the JSON API (/v1): bearer authentication, the
// per-principal rate limit, scope checks and the handlers behind the
// routes that handlers.routes lists.
package api

import (
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"gatehouse/auth"
	"gatehouse/engine"
	"gatehouse/handlers/internal/httpx"
	"gatehouse/rules"
)

// Config wires the API's handlers; handlers.New fills it from its own
// Config after checking it.
type Config struct {
	Service   httpx.Service
	Directory *auth.Directory
	Policy    *rules.Set
	RateLimit RateLimit
	Now       func() time.Time
}

// Handlers holds what every API handler needs; its methods are the /v1
// handlers and middleware.
type Handlers struct {
	svc     httpx.Service
	dir     *auth.Directory
	policy  *rules.Set
	limiter *httpx.Limiter
}

// New builds the API's handlers.
func New(cfg Config) *Handlers {
	return &Handlers{
		svc:     cfg.Service,
		dir:     cfg.Directory,
		policy:  cfg.Policy,
		limiter: httpx.NewLimiter(cfg.RateLimit, cfg.Now),
	}
}

// principal is the authenticated principal; the auth middleware guarantees
// one on every /v1 route that calls this.
func principal(c echo.Context) engine.Principal {
	p, _ := httpx.PrincipalOf(c)
	return p
}

// AuthenticateBearer admits API requests carrying a known bearer token.
// Cookies are ignored: a browser's ambient credentials must never drive
// the JSON API.
func (h *Handlers) AuthenticateBearer(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		authz := c.Request().Header.Get(echo.HeaderAuthorization)
		scheme, token, found := strings.Cut(authz, " ")
		if !found || !strings.EqualFold(scheme, "Bearer") || token == "" {
			c.Response().Header().Set(echo.HeaderWWWAuthenticate, `Bearer realm="gatehouse"`)
			return httpx.NewError(http.StatusUnauthorized, httpx.CodeUnauthenticated, "a bearer token is required")
		}
		p, ok := h.dir.ByToken(strings.TrimSpace(token))
		if !ok {
			c.Response().Header().Set(echo.HeaderWWWAuthenticate, `Bearer realm="gatehouse", error="invalid_token"`)
			return httpx.NewError(http.StatusUnauthorized, httpx.CodeUnauthenticated, "the bearer token is not valid")
		}
		httpx.SetPrincipal(c, p)
		return next(c)
	}
}

// AuthenticateBearerOrDev is AuthenticateBearer, except that under
// AUTH_MODE=dev (loopback only) a request with no Authorization header is
// the dev principal, as the console logs it in: what lets a newcomer point
// an MCP client at `make run` without minting a token.
func (h *Handlers) AuthenticateBearerOrDev(next echo.HandlerFunc) echo.HandlerFunc {
	bearer := h.AuthenticateBearer(next)
	return func(c echo.Context) error {
		if c.Request().Header.Get(echo.HeaderAuthorization) == "" {
			if p, ok := h.dir.ByID(auth.DevPrincipalID); ok {
				httpx.SetPrincipal(c, p)
				return next(c)
			}
		}
		return bearer(c)
	}
}

// RateLimit is a token bucket per principal.
type RateLimit = httpx.RateLimit

// DefaultRateLimit is generous: it stops a runaway loop, not a busy agent.
var DefaultRateLimit = RateLimit{PerSecond: 50, Burst: 100}

// LimitRate applies the principal's token bucket; it runs after
// authentication so one agent's burst cannot starve another.
func (h *Handlers) LimitRate(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		p, _ := httpx.PrincipalOf(c)
		if wait, ok := h.limiter.Allow(p.TenantID + "/" + p.ID); !ok {
			secs := int(wait.Round(time.Second) / time.Second)
			c.Response().Header().Set("Retry-After", strconv.Itoa(max(secs, 1)))
			return httpx.NewError(http.StatusTooManyRequests, httpx.CodeRateLimited, "rate limit exceeded; retry later")
		}
		return next(c)
	}
}

// RequireScope refuses principals lacking the route's scope, naming it.
func RequireScope(scope string) echo.MiddlewareFunc {
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			p, ok := httpx.PrincipalOf(c)
			if !ok {
				return httpx.NewError(http.StatusUnauthorized, httpx.CodeUnauthenticated, "authentication required")
			}
			if missing := engine.MissingScopes([]string{scope}, p.Scopes); len(missing) > 0 {
				return httpx.NewError(http.StatusForbidden, httpx.CodeMissingScope, "missing scope: "+scope)
			}
			return next(c)
		}
	}
}

package handlers

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"runtime/debug"
	"strconv"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"gatehouse/engine"
)

const (
	ctxRequestID = "gatehouse.request_id"
	ctxPrincipal = "gatehouse.principal"
)

// requestID returns the request's id (set by withRequestID).
func requestID(c echo.Context) string {
	id, _ := c.Get(ctxRequestID).(string)
	return id
}

// setPrincipal records the authenticated principal of a request (bearer
// token for the API, session for the console).
func setPrincipal(c echo.Context, p engine.Principal) { c.Set(ctxPrincipal, p) }

// principalOf returns the request's authenticated principal.
func principalOf(c echo.Context) (engine.Principal, bool) {
	p, ok := c.Get(ctxPrincipal).(engine.Principal)
	return p, ok
}

// withRequestID gives every request an id, echoed in X-Request-Id and carried
// by every log line about the request. A caller's id is not trusted: it
// would let a client forge log correlation.
func withRequestID(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		var b [12]byte
		_, _ = rand.Read(b[:]) // crypto/rand.Read never fails on supported platforms
		id := hex.EncodeToString(b[:])
		c.Set(ctxRequestID, id)
		c.Response().Header().Set(echo.HeaderXRequestID, id)
		return next(c)
	}
}

// observe logs one line per request and records its duration by route
// template and status. It logs the template (/v1/approvals/:id), never the
// URL, so ids, query values and tokens stay out of logs.
func (s *Server) observe(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		start := s.now()
		err := next(c)
		if err != nil {
			// Render now so the status below is the one the client got.
			c.Error(err)
		}
		route := c.Path()
		if route == "" {
			route = "unmatched"
		}
		status := c.Response().Status
		elapsed := s.now().Sub(start)
		s.cfg.Metrics.ObserveHTTP(c.Request().Method, route, status, elapsed)
		attrs := []slog.Attr{
			slog.String("request_id", requestID(c)),
			slog.String("method", c.Request().Method),
			slog.String("route", route),
			slog.Int("status", status),
			slog.Duration("duration", elapsed),
			slog.String("remote_ip", c.RealIP()),
		}
		if p, ok := principalOf(c); ok {
			attrs = append(attrs, slog.String("principal", p.ID), slog.String("tenant", p.TenantID))
		}
		level := slog.LevelInfo
		if status >= 500 {
			level = slog.LevelError
		}
		s.log.LogAttrs(c.Request().Context(), level, "request", attrs...)
		return nil
	}
}

// authenticateBearer admits API requests carrying a known bearer token.
// Cookies are ignored: a browser's ambient credentials must never drive
// the JSON API.
func (s *Server) authenticateBearer(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		h := c.Request().Header.Get(echo.HeaderAuthorization)
		scheme, token, found := strings.Cut(h, " ")
		if !found || !strings.EqualFold(scheme, "Bearer") || token == "" {
			c.Response().Header().Set(echo.HeaderWWWAuthenticate, `Bearer realm="gatehouse"`)
			return newError(http.StatusUnauthorized, codeUnauthenticated, "a bearer token is required")
		}
		p, ok := s.cfg.Directory.ByToken(strings.TrimSpace(token))
		if !ok {
			c.Response().Header().Set(echo.HeaderWWWAuthenticate, `Bearer realm="gatehouse", error="invalid_token"`)
			return newError(http.StatusUnauthorized, codeUnauthenticated, "the bearer token is not valid")
		}
		setPrincipal(c, p)
		return next(c)
	}
}

// rateLimit applies the principal's token bucket; it runs after
// authentication so one agent's burst cannot starve another.
func (s *Server) rateLimit(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		p, _ := principalOf(c)
		if wait, ok := s.limiter.allow(p.TenantID + "/" + p.ID); !ok {
			secs := int(wait.Round(time.Second) / time.Second)
			c.Response().Header().Set("Retry-After", strconv.Itoa(max(secs, 1)))
			return newError(http.StatusTooManyRequests, codeRateLimited, "rate limit exceeded; retry later")
		}
		return next(c)
	}
}

// requireScope refuses principals lacking the route's scope, naming it.
func requireScope(scope string) echo.MiddlewareFunc {
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			p, ok := principalOf(c)
			if !ok {
				return newError(http.StatusUnauthorized, codeUnauthenticated, "authentication required")
			}
			if missing := engine.MissingScopes([]string{scope}, p.Scopes); len(missing) > 0 {
				return newError(http.StatusForbidden, codeMissingScope, "missing scope: "+scope)
			}
			return next(c)
		}
	}
}

// recoverPanic turns a handler panic into a logged 500, so one bad request
// cannot take the process down.
func (s *Server) recoverPanic(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) (err error) {
		defer func() {
			if r := recover(); r != nil {
				if e, ok := r.(error); ok && errors.Is(e, http.ErrAbortHandler) {
					panic(r)
				}
				err = fmt.Errorf("handler panic: %v\n%s", r, debug.Stack())
			}
		}()
		return next(c)
	}
}

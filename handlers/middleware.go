package handlers

import (
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"runtime/debug"

	"github.com/labstack/echo/v4"

	"gatehouse/handlers/internal/httpx"
)

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
			slog.String("request_id", httpx.RequestID(c)),
			slog.String("method", c.Request().Method),
			slog.String("route", route),
			slog.Int("status", status),
			slog.Duration("duration", elapsed),
			slog.String("remote_ip", c.RealIP()),
		}
		if p, ok := httpx.PrincipalOf(c); ok {
			attrs = append(attrs, slog.String("principal", p.ID), slog.String("tenant", p.TenantID))
		}
		level := s.cfg.RequestLogLevel
		if status >= 500 {
			level = slog.LevelError
		}
		s.log.LogAttrs(c.Request().Context(), level, "request", attrs...)
		return nil
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

package handlers

import (
	"context"
	"errors"
	"net/http"
	"strings"

	"github.com/labstack/echo/v4"

	"gatehouse/api"
	"gatehouse/handlers/console"
	"gatehouse/handlers/internal/httpx"
)

// isAPIPath reports whether a path is the API's or an operational
// endpoint's.
func isAPIPath(path string) bool {
	switch path {
	case "/healthz", "/readyz", "/metrics", "/v1", "/mcp":
		return true
	}
	return strings.HasPrefix(path, "/v1/")
}

// answersJSON reports whether errors on a path are answered in JSON rather
// than with a console page: the API's paths, and the console endpoints its
// scripts call, which read the error's message.
func answersJSON(path string) bool {
	return isAPIPath(path) || path == pushSubscriptionsPath
}

// handleError is the one echo HTTPErrorHandler: JSON for the API and the
// operational endpoints, a console page for everything else.
func (s *Server) handleError(err error, c echo.Context) {
	if c.Response().Committed {
		return
	}
	if errors.Is(err, context.Canceled) && c.Request().Context().Err() != nil {
		// The client went away: nobody reads an answer, and nothing failed
		// here. The request line records it as 499, as proxies do.
		c.Response().WriteHeader(httpx.StatusClientClosed)
		return
	}
	ae, internal := httpx.ToError(err)
	if ae.Status == http.StatusServiceUnavailable && c.Response().Header().Get("Retry-After") == "" {
		c.Response().Header().Set("Retry-After", httpx.RetryAfterOutage)
	}
	if internal {
		// The route template, never the URL: ids and query values stay out of logs.
		s.log.ErrorContext(c.Request().Context(), "request failed",
			"request_id", httpx.RequestID(c), "route", c.Path(), "error", err)
	}
	if !answersJSON(c.Request().URL.Path) {
		if werr := console.RenderError(c, ae.Status, ae.Message); werr != nil {
			s.log.WarnContext(c.Request().Context(), "writing error page", "request_id", httpx.RequestID(c), "error", werr)
		}
		return
	}
	body := api.ErrorBody{Error: api.ErrorDetail{Code: ae.Code, Message: ae.Message}, Approval: ae.Approval}
	var werr error
	if c.Request().Method == http.MethodHead {
		werr = c.NoContent(ae.Status)
	} else {
		werr = c.JSON(ae.Status, body)
	}
	if werr != nil {
		s.log.WarnContext(c.Request().Context(), "writing error response", "request_id", httpx.RequestID(c), "error", werr)
	}
}

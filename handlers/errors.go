package handlers

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/labstack/echo/v4"

	"gatehouse/api"
	"gatehouse/service"
)

// Error codes of the JSON error body.
const (
	codeInvalid          = "invalid_request"
	codeUnauthenticated  = "unauthenticated"
	codeMissingScope     = "missing_scope"
	codeForbidden        = "forbidden"
	codeProfileForbidden = "profile_not_permitted"
	codeNotFound         = "not_found"
	codeMisdirected      = "misdirected_request"
	codeMethod           = "method_not_allowed"
	codeConflict         = "conflict"
	codeTooLarge         = "too_large"
	codeUnsupportedMedia = "unsupported_media_type"
	codeRateLimited      = "rate_limited"
	codeUnavailable      = "unavailable"
	codeInternal         = "internal"
)

// statusClientClosed is nginx's status for a request its client abandoned.
const statusClientClosed = 499

// retryAfterOutage is the Retry-After of a 503 for an outage, in seconds: a
// database restart or failover takes about that long to be answered again.
const retryAfterOutage = "2"

// apiError is an error with the status and body a client should see.
type apiError struct {
	Status  int
	Code    string
	Message string
	// Approval is the stored approval on a resolve conflict.
	Approval *api.Approval
}

func (e *apiError) Error() string { return e.Code + ": " + e.Message }

func newError(status int, code, msg string) *apiError {
	return &apiError{Status: status, Code: code, Message: msg}
}

func invalid(msg string) *apiError { return newError(http.StatusBadRequest, codeInvalid, msg) }

// toAPIError translates any error into what the client sees. Service errors
// (database errors translated by the service first) are mapped here and
// nowhere else; anything unrecognized is a 500 whose
// message says nothing about the cause.
func toAPIError(err error) (ae *apiError, internal bool) {
	err = service.TranslateDBError(err)
	var he *echo.HTTPError
	var ie *service.InvalidError
	var pnp *service.ProfileNotPermittedError
	switch {
	case errors.As(err, &ae):
		return ae, false
	case service.IsUnavailable(err):
		return newError(http.StatusServiceUnavailable, codeUnavailable, "the database is unavailable; retry shortly"), false
	case errors.As(err, &he):
		return fromEcho(he), he.Code >= 500
	case errors.Is(err, service.ErrNotFound):
		return newError(http.StatusNotFound, codeNotFound, "not found"), false
	case errors.Is(err, service.ErrStaleLease):
		return newError(http.StatusConflict, codeConflict, "stale lease: the run is held by another worker or fencing token"), false
	case errors.Is(err, service.ErrConflict):
		return newError(http.StatusConflict, codeConflict, "the request conflicts with the current state"), false
	case errors.As(err, &ie):
		return invalid(ie.Msg), false
	case errors.Is(err, service.ErrInvalid):
		return invalid("invalid request"), false
	case errors.As(err, &pnp):
		return newError(http.StatusForbidden, codeProfileForbidden,
			fmt.Sprintf("policy profile %q is not permitted for this principal: runs use the server default unless the principal's entry in principals.yaml lists the profile under policy_profiles", pnp.Profile)), false
	case errors.Is(err, service.ErrForbidden):
		return newError(http.StatusForbidden, codeForbidden, "forbidden"), false
	}
	return newError(http.StatusInternalServerError, codeInternal, "internal error"), true
}

// fromEcho maps the router's own errors (unknown route, wrong method).
func fromEcho(he *echo.HTTPError) *apiError {
	switch he.Code {
	case http.StatusNotFound:
		return newError(he.Code, codeNotFound, "not found")
	case http.StatusMethodNotAllowed:
		return newError(he.Code, codeMethod, "method not allowed")
	case http.StatusRequestEntityTooLarge:
		return newError(he.Code, codeTooLarge, "request body too large")
	case http.StatusUnauthorized:
		return newError(he.Code, codeUnauthenticated, "authentication required")
	case http.StatusServiceUnavailable:
		return newError(he.Code, codeUnavailable, "unavailable")
	}
	if he.Code >= 400 && he.Code < 500 {
		return newError(he.Code, codeInvalid, http.StatusText(he.Code))
	}
	return newError(http.StatusInternalServerError, codeInternal, "internal error")
}

// isAPIPath reports whether a path is answered in JSON rather than with a
// console page.
func isAPIPath(path string) bool {
	switch path {
	case "/healthz", "/readyz", "/metrics", "/v1":
		return true
	}
	return strings.HasPrefix(path, "/v1/")
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
		c.Response().WriteHeader(statusClientClosed)
		return
	}
	ae, internal := toAPIError(err)
	if ae.Status == http.StatusServiceUnavailable && c.Response().Header().Get("Retry-After") == "" {
		c.Response().Header().Set("Retry-After", retryAfterOutage)
	}
	if internal {
		// The route template, never the URL: ids and query values stay out of logs.
		s.log.ErrorContext(c.Request().Context(), "request failed",
			"request_id", requestID(c), "route", c.Path(), "error", err)
	}
	if !isAPIPath(c.Request().URL.Path) {
		s.renderConsoleError(c, ae.Status, ae.Message)
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
		s.log.WarnContext(c.Request().Context(), "writing error response", "request_id", requestID(c), "error", werr)
	}
}

// Package httpx is what the JSON API and the console share: the error
// every handler returns and its mapping from service errors, strict
// request decoding, and the request's id and principal.
package httpx

import (
	"errors"
	"fmt"
	"net/http"

	"github.com/labstack/echo/v4"

	"gatehouse/api"
	"gatehouse/service"
)

// Error codes of the JSON error body.
const (
	CodeInvalid          = "invalid_request"
	CodeUnauthenticated  = "unauthenticated"
	CodeMissingScope     = "missing_scope"
	CodeForbidden        = "forbidden"
	CodeProfileForbidden = "profile_not_permitted"
	CodeNotFound         = "not_found"
	CodeMisdirected      = "misdirected_request"
	CodeMethod           = "method_not_allowed"
	CodeConflict         = "conflict"
	CodeTooLarge         = "too_large"
	CodeUnsupportedMedia = "unsupported_media_type"
	CodeRateLimited      = "rate_limited"
	CodeUnavailable      = "unavailable"
	CodeInternal         = "internal"
)

// StatusClientClosed is nginx's status for a request its client abandoned.
const StatusClientClosed = 499

// RetryAfterOutage is the Retry-After of a 503 for an outage, in seconds: a
// database restart or failover takes about that long to be answered again.
const RetryAfterOutage = "2"

// Error is an error with the status and body a client should see: the
// API answers it as JSON, the console as a page.
type Error struct {
	Status  int
	Code    string
	Message string
	// Approval is the stored approval on a resolve conflict.
	Approval *api.Approval
}

func (e *Error) Error() string { return e.Code + ": " + e.Message }

func NewError(status int, code, msg string) *Error {
	return &Error{Status: status, Code: code, Message: msg}
}

func Invalid(msg string) *Error { return NewError(http.StatusBadRequest, CodeInvalid, msg) }

// ToError translates any error into what the client sees. Service errors
// (database errors translated by the service first) are mapped here and
// nowhere else; anything unrecognized is a 500 whose
// message says nothing about the cause.
func ToError(err error) (ae *Error, internal bool) {
	err = service.TranslateDBError(err)
	var he *echo.HTTPError
	var ie *service.InvalidError
	var pnp *service.ProfileNotPermittedError
	switch {
	case errors.As(err, &ae):
		return ae, false
	case service.IsUnavailable(err):
		return NewError(http.StatusServiceUnavailable, CodeUnavailable, "the database is unavailable; retry shortly"), false
	case errors.As(err, &he):
		return fromEcho(he), he.Code >= 500
	case errors.Is(err, service.ErrNotFound):
		return NewError(http.StatusNotFound, CodeNotFound, "not found"), false
	case errors.Is(err, service.ErrStaleLease):
		return NewError(http.StatusConflict, CodeConflict, "stale lease: the run is held by another worker or fencing token"), false
	case errors.Is(err, service.ErrConflict):
		return NewError(http.StatusConflict, CodeConflict, "the request conflicts with the current state"), false
	case errors.As(err, &ie):
		return Invalid(ie.Msg), false
	case errors.Is(err, service.ErrInvalid):
		return Invalid("invalid request"), false
	case errors.As(err, &pnp):
		return NewError(http.StatusForbidden, CodeProfileForbidden,
			fmt.Sprintf("policy profile %q is not permitted for this principal: runs use the server default unless the principal's entry in principals.yaml lists the profile under policy_profiles", pnp.Profile)), false
	case errors.Is(err, service.ErrForbidden):
		return NewError(http.StatusForbidden, CodeForbidden, "forbidden"), false
	}
	return NewError(http.StatusInternalServerError, CodeInternal, "internal error"), true
}

// fromEcho maps the router's own errors (unknown route, wrong method).
func fromEcho(he *echo.HTTPError) *Error {
	switch he.Code {
	case http.StatusNotFound:
		return NewError(he.Code, CodeNotFound, "not found")
	case http.StatusMethodNotAllowed:
		return NewError(he.Code, CodeMethod, "method not allowed")
	case http.StatusRequestEntityTooLarge:
		return NewError(he.Code, CodeTooLarge, "request body too large")
	case http.StatusUnauthorized:
		return NewError(he.Code, CodeUnauthenticated, "authentication required")
	case http.StatusServiceUnavailable:
		return NewError(he.Code, CodeUnavailable, "unavailable")
	}
	if he.Code >= 400 && he.Code < 500 {
		return NewError(he.Code, CodeInvalid, http.StatusText(he.Code))
	}
	return NewError(http.StatusInternalServerError, CodeInternal, "internal error")
}

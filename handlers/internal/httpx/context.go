package httpx

import (
	"crypto/rand"
	"encoding/hex"

	"github.com/labstack/echo/v4"

	"gatehouse/engine"
)

const (
	ctxRequestID = "gatehouse.request_id"
	ctxPrincipal = "gatehouse.principal"
)

// RequestID returns the request's id (set by WithRequestID).
func RequestID(c echo.Context) string {
	id, _ := c.Get(ctxRequestID).(string)
	return id
}

// SetPrincipal records the authenticated principal of a request (bearer
// token for the API, session for the console).
func SetPrincipal(c echo.Context, p engine.Principal) { c.Set(ctxPrincipal, p) }

// PrincipalOf returns the request's authenticated principal.
func PrincipalOf(c echo.Context) (engine.Principal, bool) {
	p, ok := c.Get(ctxPrincipal).(engine.Principal)
	return p, ok
}

// WithRequestID gives every request an id, echoed in X-Request-Id and carried
// by every log line about the request. A caller's id is not trusted: it
// would let a client forge log correlation.
func WithRequestID(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		var b [12]byte
		_, _ = rand.Read(b[:]) // crypto/rand.Read never fails on supported platforms
		id := hex.EncodeToString(b[:])
		c.Set(ctxRequestID, id)
		c.Response().Header().Set(echo.HeaderXRequestID, id)
		return next(c)
	}
}

package handlers

import (
	"net/http"
	"time"

	"github.com/labstack/echo/v4"

	"gatehouse/handlers/internal/httpx"
	"gatehouse/mcpgw"
)

// withMCPPrincipal hands the principal bearer authentication found to the
// gateway, which binds the MCP session to it. It also lifts the server's
// write timeout for the request: a call can wait hours for a human, and
// the session's event stream lives as long as the session.
func withMCPPrincipal(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		p, ok := httpx.PrincipalOf(c)
		if !ok {
			return httpx.NewError(http.StatusUnauthorized, httpx.CodeUnauthenticated, "authentication required")
		}
		_ = http.NewResponseController(c.Response()).SetWriteDeadline(time.Time{}) // unsupported writers (tests) have none
		c.SetRequest(c.Request().WithContext(mcpgw.WithPrincipal(c.Request().Context(), p)))
		return next(c)
	}
}

// mcpCrossOrigin refuses browser requests from other origins: MCP clients
// are programs that send no Sec-Fetch-Site or Origin, and in dev mode a
// request without a token is the dev principal, which a web page must not
// be able to borrow.
var mcpCrossOrigin = http.NewCrossOriginProtection()

func refuseCrossOrigin(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		if err := mcpCrossOrigin.Check(c.Request()); err != nil {
			return httpx.NewError(http.StatusForbidden, httpx.CodeForbidden, "cross-origin requests are refused")
		}
		return next(c)
	}
}

package handlers

import (
	"net/http"
	"strings"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"gatehouse/handlers/internal/httpx"
	"gatehouse/mcpgw"
	"gatehouse/web/templates"
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

// mcpTools lists the gateway's upstream tools for the policy page.
func (s *Server) mcpTools() func() []templates.MCPToolRow {
	if s.cfg.MCP == nil {
		return nil
	}
	return func() []templates.MCPToolRow {
		var rows []templates.MCPToolRow
		for _, h := range s.cfg.MCP.Hints() {
			row := templates.MCPToolRow{Upstream: h.Upstream, Tool: h.Tool, CatalogName: h.CatalogName, Hints: annotationHints(h.Annotations)}
			switch {
			case !h.Classified:
				row.Status = "unclassified (hidden)"
			case !h.Listed:
				row.Status = "classified, not listed by the upstream"
			default:
				row.Status = "classified"
			}
			if h.Disconnected {
				row.Status += "; upstream disconnected"
			}
			rows = append(rows, row)
		}
		return rows
	}
}

// annotationHints spells out the hints an upstream set, true ones only.
func annotationHints(a *mcp.ToolAnnotations) string {
	if a == nil {
		return ""
	}
	var hints []string
	for _, h := range []struct {
		name string
		set  bool
	}{
		{"readOnly", a.ReadOnlyHint},
		{"destructive", a.DestructiveHint != nil && *a.DestructiveHint},
		{"idempotent", a.IdempotentHint},
		{"openWorld", a.OpenWorldHint != nil && *a.OpenWorldHint},
	} {
		if h.set {
			hints = append(hints, h.name)
		}
	}
	return strings.Join(hints, ", ")
}

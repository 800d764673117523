package handlers

import (
	"github.com/labstack/echo/v4"
)

// renderConsoleError answers a console route's error. Placeholder until the
// console work renders an error page.
func (s *Server) renderConsoleError(c echo.Context, status int, msg string) {
	if err := c.String(status, msg); err != nil {
		s.log.WarnContext(c.Request().Context(), "writing error page", "error", err)
	}
}

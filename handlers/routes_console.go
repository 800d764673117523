package handlers

import "github.com/labstack/echo/v4"

// registerConsoleRoutes mounts the console pages. Placeholder: filled in by
// the console work.
func (s *Server) registerConsoleRoutes(e *echo.Echo) {}

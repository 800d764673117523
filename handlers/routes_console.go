package handlers

import (
	"io/fs"
	"net/http"

	"github.com/labstack/echo/v4"

	"gatehouse/web"
)

// registerConsoleRoutes mounts the console. Every group's middleware is
// attached when the group is created, before its first route.
func (s *Server) registerConsoleRoutes(e *echo.Echo) {
	cn := newConsole(s)

	e.Match([]string{http.MethodGet, http.MethodHead}, "/static/*", staticFiles(web.Static()), withSecurityHeaders, cacheStatic)

	login := e.Group("", withSecurityHeaders, cn.refuseCrossOrigin, readForm, cn.loginToken, requireFormToken)
	login.GET("/login", cn.loginShow)
	login.POST("/login", cn.loginSubmit)

	pages := e.Group("", withSecurityHeaders, cn.refuseCrossOrigin, readForm, cn.requireSession, requireFormToken)
	// Each page asks for the scope the API asks for the same data.
	pages.GET("/", cn.queue, requireConsoleScope(scopeApprovalRead))
	pages.GET("/approvals/:id", cn.approvalShow, requireConsoleScope(scopeApprovalRead))
	pages.POST("/approvals/:id/resolve", cn.approvalResolve, requireConsoleScope(scopeApprovalResolve))
	pages.GET("/history", cn.history, requireConsoleScope(scopeApprovalRead))
	pages.GET("/runs/:id", cn.runShow, requireConsoleScope(scopeRunRead))
	pages.GET("/policy", cn.policyShow, requireConsoleScope(scopeRunRead))
	pages.GET("/overview", cn.overview, requireConsoleScope(scopeApprovalRead))
	pages.POST("/logout", cn.logout)
	pages.POST("/logout-everywhere", cn.logoutEverywhere)

	// The queue's poll does not count as activity (idle timeout).
	poll := e.Group("", withSecurityHeaders, cn.refuseCrossOrigin, cn.requireQuietSession)
	poll.GET("/queue/updates", cn.queueUpdates, requireConsoleScope(scopeApprovalRead))
}

// staticFiles serves the files of fsys for GET and HEAD (with ranges and
// conditional requests); a directory or a missing file is 404, never a
// listing.
func staticFiles(fsys fs.FS) echo.HandlerFunc {
	return func(c echo.Context) error {
		name := c.Param("*")
		if !fs.ValidPath(name) || name == "." {
			return echo.ErrNotFound
		}
		if fi, err := fs.Stat(fsys, name); err != nil || fi.IsDir() {
			return echo.ErrNotFound
		}
		http.ServeFileFS(c.Response(), c.Request(), fsys, name)
		return nil
	}
}

// cacheStatic lets browsers keep the static files for an hour; they change
// only with a new binary.
func cacheStatic(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		c.Response().Header().Set("Cache-Control", "public, max-age=3600")
		return next(c)
	}
}

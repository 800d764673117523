package handlers

import (
	"net/http"

	"github.com/labstack/echo/v4"

	"gatehouse/web"
)

// registerConsoleRoutes mounts the console. Every group's middleware is
// attached when the group is created, before its first route.
func (s *Server) registerConsoleRoutes(e *echo.Echo) {
	cn := newConsole(s)

	static := http.StripPrefix("/static/", http.FileServerFS(web.Static()))
	e.GET("/static/*", echo.WrapHandler(static), withSecurityHeaders, cacheStatic)

	login := e.Group("", withSecurityHeaders, cn.refuseCrossOrigin, readForm, cn.loginToken, requireFormToken)
	login.GET("/login", cn.loginShow)
	login.POST("/login", cn.loginSubmit)

	pages := e.Group("", withSecurityHeaders, cn.refuseCrossOrigin, readForm, cn.requireSession, requireFormToken)
	pages.GET("/", cn.queue)
	pages.GET("/approvals/:id", cn.approvalShow)
	pages.POST("/approvals/:id/resolve", cn.approvalResolve)
	pages.GET("/history", cn.history)
	pages.GET("/runs/:id", cn.runShow)
	pages.GET("/policy", cn.policyShow)
	pages.GET("/overview", cn.overview)
	pages.POST("/logout", cn.logout)
	pages.POST("/logout-everywhere", cn.logoutEverywhere)

	// The queue's poll does not count as activity (idle timeout).
	poll := e.Group("", withSecurityHeaders, cn.refuseCrossOrigin, cn.requireQuietSession)
	poll.GET("/queue/updates", cn.queueUpdates)
}

// cacheStatic lets browsers keep the static files for an hour; they change
// only with a new binary.
func cacheStatic(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		c.Response().Header().Set("Cache-Control", "public, max-age=3600")
		return next(c)
	}
}

package handlers

import (
	"net/http"

	"github.com/labstack/echo/v4"

	"gatehouse/engine"
	"gatehouse/handlers/api"
	"gatehouse/handlers/console"
	"gatehouse/handlers/internal/httpx"
	"gatehouse/web"
)

// Route scopes (DESIGN §6).
const (
	scopeRunRead         = engine.ScopeRunRead
	scopeRunWrite        = engine.ScopeRunWrite
	scopeRunCancel       = engine.ScopeRunCancel
	scopeApprovalRead    = engine.ScopeApprovalRead
	scopeApprovalResolve = engine.ScopeApprovalResolve
	scopeGrantRead       = engine.ScopeGrantRead
	scopeGrantWrite      = engine.ScopeGrantWrite
)

// pushSubscriptionsPath is where the console's script adds (POST) and
// removes (DELETE) this browser's Web Push subscription.
const pushSubscriptionsPath = "/push/subscriptions"

// routes is the table of contents of the server: every route of the API
// and the console with the scope it asks for. Middleware is attached
// before any route of its group is added (echo issues #1657, #2464:
// routes added before Use run without it).
func (s *Server) routes(e *echo.Echo) {
	e.Use(s.recoverPanic, httpx.WithRequestID, s.observe, s.checkHost)

	e.GET("/healthz", s.healthz)
	e.GET("/readyz", s.readyz)
	e.GET("/metrics", echo.WrapHandler(s.cfg.Metrics.Handler()))

	a := api.New(api.Config{
		Service: s.cfg.Service, Directory: s.cfg.Directory, Policy: s.cfg.Policy,
		RateLimit: s.cfg.RateLimit, Now: s.now,
	})
	e.GET("/v1/openapi.json", a.OpenAPI)

	v1 := e.Group("/v1", a.AuthenticateBearer, a.LimitRate)
	v1.GET("/policy", a.PolicyGet)
	v1.GET("/tools", a.ToolsList, api.RequireScope(scopeRunRead))

	v1.POST("/runs", a.RunSubmit, api.RequireScope(scopeRunWrite))
	v1.POST("/runs/claim", a.RunClaim, api.RequireScope(scopeRunWrite))
	v1.GET("/runs/:id", a.RunGet, api.RequireScope(scopeRunRead))
	v1.POST("/runs/:id/heartbeat", a.RunHeartbeat, api.RequireScope(scopeRunWrite))
	v1.POST("/runs/:id/actions", a.ActionPropose, api.RequireScope(scopeRunWrite))
	v1.POST("/runs/:id/invocations/:inv/resume", a.InvocationResume, api.RequireScope(scopeRunWrite))
	v1.POST("/runs/:id/invocations/:inv/result", a.InvocationResult, api.RequireScope(scopeRunWrite))
	v1.POST("/runs/:id/complete", a.RunComplete, api.RequireScope(scopeRunWrite))
	v1.POST("/runs/:id/cancel", a.RunCancel, api.RequireScope(scopeRunCancel))

	v1.GET("/approvals", a.ApprovalList, api.RequireScope(scopeApprovalRead))
	v1.GET("/approvals/:id", a.ApprovalGet, api.RequireScope(scopeApprovalRead))
	v1.POST("/approvals/:id/resolve", a.ApprovalResolve, api.RequireScope(scopeApprovalResolve))

	v1.GET("/sessions/:id/browser-grants", a.TaskGrantList, api.RequireScope(scopeGrantRead))
	v1.POST("/browser-grants/:id/revoke", a.TaskGrantRevoke, api.RequireScope(scopeGrantWrite))
	v1.POST("/sessions/:id/consents", a.ConsentRecord, api.RequireScope(scopeApprovalResolve))
	v1.GET("/sessions/:id/consents", a.ConsentList, api.RequireScope(scopeApprovalRead))

	v1.GET("/events", a.EventList, api.RequireScope(scopeRunRead))

	s.mcpRoutes(e, a)
	s.consoleRoutes(e)
}

// mcpRoutes mounts the MCP gateway when one is configured: bearer tokens
// as for /v1 (the dev principal without one in dev mode), the same rate
// limit, and run.write, the scope of submitting and proposing, which the
// gateway does on the client's behalf.
func (s *Server) mcpRoutes(e *echo.Echo, a *api.Handlers) {
	if s.cfg.MCP == nil {
		return
	}
	authn := a.AuthenticateBearer
	if s.cfg.DevMode {
		authn = a.AuthenticateBearerOrDev
	}
	m := e.Group("/mcp", refuseCrossOrigin, authn, a.LimitRate, api.RequireScope(scopeRunWrite), withMCPPrincipal)
	m.Any("", echo.WrapHandler(s.cfg.MCP.Handler()))
}

// consoleRoutes mounts the console. Every group's middleware is attached
// when the group is created, before its first route.
func (s *Server) consoleRoutes(e *echo.Echo) {
	cn := console.New(console.Config{
		Service: s.cfg.Service, Sessions: s.cfg.Sessions, Directory: s.cfg.Directory, Policy: s.cfg.Policy,
		BaseURL: s.cfg.BaseURL, DevMode: s.cfg.DevMode, SessionKeys: s.cfg.SessionKeys, Now: s.now, Logger: s.log,
		VAPIDPublicKey: s.cfg.VAPIDPublicKey, OIDC: s.cfg.OIDC, StepUpWindow: s.cfg.StepUpWindow,
		MCPTools: s.mcpTools(),
	})

	getHead := []string{http.MethodGet, http.MethodHead}
	e.Match(getHead, "/static/*", console.StaticFiles(web.Static()), console.WithSecurityHeaders, console.CacheStatic)
	e.Match(getHead, console.ManifestPath, console.Manifest(web.Static()), console.WithSecurityHeaders)
	e.Match(getHead, console.WorkerPath, console.Worker(web.Static()), console.WithSecurityHeaders)

	login := e.Group("", console.WithSecurityHeaders, cn.RefuseCrossOrigin, console.ReadForm, cn.LoginToken, console.RequireFormToken)
	login.GET("/login", cn.LoginShow)
	login.POST("/login", cn.LoginSubmit)
	// Single sign-on: GET both ways, a link out and the provider's
	// redirect back (a top-level navigation, so the Lax cookie comes along).
	login.GET("/login/oidc", cn.OIDCStart)
	login.GET(console.OIDCCallbackPath, cn.OIDCCallback)

	pages := e.Group("", console.WithSecurityHeaders, cn.RefuseCrossOrigin, console.ReadForm, cn.RequireSession, console.RequireFormToken)
	// Each page asks for the scope the API asks for the same data.
	pages.GET("/", cn.Queue, console.RequireScope(scopeApprovalRead))
	pages.GET("/approvals/:id", cn.ApprovalShow, console.RequireScope(scopeApprovalRead))
	pages.POST("/approvals/:id/resolve", cn.ApprovalResolve, console.RequireScope(scopeApprovalResolve))
	pages.POST("/approvals/batch", cn.ApprovalBatch, console.RequireScope(scopeApprovalResolve))
	pages.GET("/history", cn.History, console.RequireScope(scopeApprovalRead))
	pages.GET("/history/export.csv", cn.HistoryExportCSV, console.RequireScope(scopeApprovalRead))
	pages.GET("/history/export.json", cn.HistoryExportJSON, console.RequireScope(scopeApprovalRead))
	pages.GET("/runs/:id", cn.RunShow, console.RequireScope(scopeRunRead))
	pages.POST("/runs/:id/cancel", cn.RunCancel, console.RequireScope(scopeRunCancel))
	pages.POST("/browser-grants/:id/revoke", cn.GrantRevoke, console.RequireScope(scopeGrantWrite))
	pages.POST("/sessions/:id/consents", cn.ConsentRecord, console.RequireScope(scopeApprovalResolve))
	pages.GET("/policy", cn.PolicyShow, console.RequireScope(scopeRunRead))
	pages.GET("/overview", cn.Overview, console.RequireScope(scopeApprovalRead))
	pages.GET("/notifications", cn.Notifications, console.RequireScope(scopeApprovalRead))
	pages.POST("/notifications/test", cn.NotificationTest, console.RequireScope(scopeApprovalResolve))
	pages.GET("/settings/notifications", cn.PushSettings)
	// The step-up before a critical approval: the password again, or a
	// link to a fresh single sign-on.
	pages.GET("/reauth", cn.StepUpShow)
	pages.POST("/reauth", cn.StepUpSubmit)
	pages.POST("/logout", cn.Logout)
	pages.POST("/logout-everywhere", cn.LogoutEverywhere)

	// The Web Push switch's JSON calls (push.js): errors answer in JSON.
	// Switching a device off needs no scope, so losing approval.resolve
	// never strands a subscription.
	push := e.Group("", console.WithSecurityHeaders, cn.RefuseCrossOrigin, cn.RequireSession, console.RequireJSONToken)
	push.POST(pushSubscriptionsPath, cn.PushSubscribe, console.RequireScope(scopeApprovalResolve))
	push.DELETE(pushSubscriptionsPath, cn.PushUnsubscribe)

	// The queue's poll does not count as activity (idle timeout).
	poll := e.Group("", console.WithSecurityHeaders, cn.RefuseCrossOrigin, cn.RequireQuietSession)
	poll.GET("/queue/updates", cn.QueueUpdates, console.RequireScope(scopeApprovalRead))
}

func (s *Server) healthz(c echo.Context) error {
	return c.JSON(http.StatusOK, map[string]string{"status": "ok"})
}

// readyz is ready when the database answers and a policy is loaded.
func (s *Server) readyz(c echo.Context) error {
	if _, ok := s.cfg.Policy.Ruleset(""); !ok {
		return httpx.NewError(http.StatusServiceUnavailable, httpx.CodeUnavailable, "no policy loaded")
	}
	if err := s.cfg.Service.Ping(c.Request().Context()); err != nil {
		s.log.WarnContext(c.Request().Context(), "readiness: database ping failed", "request_id", httpx.RequestID(c), "error", err)
		return httpx.NewError(http.StatusServiceUnavailable, httpx.CodeUnavailable, "database unavailable")
	}
	return c.JSON(http.StatusOK, map[string]string{"status": "ready"})
}

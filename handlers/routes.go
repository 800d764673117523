package handlers

import (
	"net/http"

	"github.com/labstack/echo/v4"

	"gatehouse/engine"
)

// Route scopes (DESIGN §6).
const (
	scopeRunRead         = engine.ScopeRunRead
	scopeRunWrite        = engine.ScopeRunWrite
	scopeRunCancel       = engine.ScopeRunCancel
	scopeApprovalRead    = engine.ScopeApprovalRead
	scopeApprovalResolve = engine.ScopeApprovalResolve
)

// routes is the table of contents of the server. Middleware is attached
// before any route of its group is added (echo issues #1657, #2464: routes
// added before Use run without it).
func (s *Server) routes(e *echo.Echo) {
	e.Use(s.recoverPanic, withRequestID, s.observe, s.checkHost)

	e.GET("/healthz", s.healthz)
	e.GET("/readyz", s.readyz)
	e.GET("/metrics", echo.WrapHandler(s.cfg.Metrics.Handler()))
	e.GET("/v1/openapi.json", s.openAPI)

	v1 := e.Group("/v1", s.authenticateBearer, s.rateLimit)
	v1.GET("/policy", s.policyGet)
	v1.GET("/tools", s.toolsList, requireScope(scopeRunRead))

	v1.POST("/runs", s.runSubmit, requireScope(scopeRunWrite))
	v1.POST("/runs/claim", s.runClaim, requireScope(scopeRunWrite))
	v1.GET("/runs/:id", s.runGet, requireScope(scopeRunRead))
	v1.POST("/runs/:id/heartbeat", s.runHeartbeat, requireScope(scopeRunWrite))
	v1.POST("/runs/:id/actions", s.actionPropose, requireScope(scopeRunWrite))
	v1.POST("/runs/:id/invocations/:inv/resume", s.invocationResume, requireScope(scopeRunWrite))
	v1.POST("/runs/:id/invocations/:inv/result", s.invocationResult, requireScope(scopeRunWrite))
	v1.POST("/runs/:id/complete", s.runComplete, requireScope(scopeRunWrite))
	v1.POST("/runs/:id/cancel", s.runCancel, requireScope(scopeRunCancel))

	v1.GET("/approvals", s.approvalList, requireScope(scopeApprovalRead))
	v1.GET("/approvals/:id", s.approvalGet, requireScope(scopeApprovalRead))
	v1.POST("/approvals/:id/resolve", s.approvalResolve, requireScope(scopeApprovalResolve))

	v1.GET("/events", s.eventList, requireScope(scopeRunRead))

	s.registerConsoleRoutes(e)
}

func (s *Server) healthz(c echo.Context) error {
	return c.JSON(http.StatusOK, map[string]string{"status": "ok"})
}

// readyz is ready when the database answers and a policy is loaded.
func (s *Server) readyz(c echo.Context) error {
	if _, ok := s.cfg.Policy.Ruleset(""); !ok {
		return newError(http.StatusServiceUnavailable, codeUnavailable, "no policy loaded")
	}
	if err := s.cfg.Service.Ping(c.Request().Context()); err != nil {
		s.log.WarnContext(c.Request().Context(), "readiness: database ping failed", "request_id", requestID(c), "error", err)
		return newError(http.StatusServiceUnavailable, codeUnavailable, "database unavailable")
	}
	return c.JSON(http.StatusOK, map[string]string{"status": "ready"})
}

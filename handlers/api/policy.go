package api

import (
	"net/http"

	"github.com/labstack/echo/v4"

	"gatehouse/api"
	"gatehouse/handlers/internal/httpx"
)

// PolicyGet describes the loaded default policy; any principal may read it.
func (h *Handlers) PolicyGet(c echo.Context) error {
	rs, ok := h.policy.Ruleset("")
	if !ok {
		return httpx.NewError(http.StatusServiceUnavailable, httpx.CodeUnavailable, "no policy loaded")
	}
	out := api.Policy{
		PolicyVersion: rs.PolicyVersion(),
		Profile:       rs.ProfileName(),
		RuleCount:     rs.RuleCount(),
		HardlineCount: len(rs.Hardline()),
		Profiles:      h.policy.Profiles(),
	}
	return c.JSON(http.StatusOK, out)
}

func (h *Handlers) ToolsList(c echo.Context) error {
	specs := h.policy.Catalog().Tools()
	out := api.ToolList{Tools: make([]api.Tool, 0, len(specs))}
	for _, t := range specs {
		out.Tools = append(out.Tools, api.Tool{
			Name:           t.Name,
			Version:        t.Version,
			Kind:           t.Kind,
			SideEffect:     t.SideEffect,
			Risk:           t.Risk,
			Idempotency:    t.Idempotency,
			RequiredScopes: nonNil(t.RequiredScopes),
			Target:         t.Target,
			MCPServerID:    t.MCPServerID,
			Arguments:      nonNil(t.Arguments),
		})
	}
	return c.JSON(http.StatusOK, out)
}

// nonNil makes an empty list encode as [] rather than null.
func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

func (h *Handlers) OpenAPI(c echo.Context) error {
	return c.Blob(http.StatusOK, echo.MIMEApplicationJSON, api.OpenAPI)
}

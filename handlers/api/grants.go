package api

import (
	"net/http"

	"github.com/labstack/echo/v4"

	"gatehouse/api"
)

// TaskGrantList lists a session's browser task grants (ADR-0129) in the
// principal's tenant, newest first, with uses and time left.
func (h *Handlers) TaskGrantList(c echo.Context) error {
	grants, err := h.svc.ListTaskGrants(c.Request().Context(), principal(c), c.Param("id"))
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, api.BrowserTaskGrantList{Items: grants})
}

// TaskGrantRevoke ends a grant at once; revoking a revoked grant answers
// the stored grant.
func (h *Handlers) TaskGrantRevoke(c echo.Context) error {
	g, err := h.svc.RevokeTaskGrant(c.Request().Context(), principal(c), c.Param("id"))
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, g)
}

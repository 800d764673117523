package api

import (
	"fmt"
	"net/http"

	"github.com/labstack/echo/v4"

	"gatehouse/api"
	"gatehouse/engine"
	"gatehouse/handlers/internal/httpx"
	"gatehouse/service"
)

// ApprovalList is one page of the tenant's approvals, in queue order for
// pending (risk, then oldest first), newest resolution first otherwise.
// The tenant is the principal's; no parameter can name another.
func (h *Handlers) ApprovalList(c echo.Context) error {
	f := service.ApprovalFilter{
		RunID:     c.QueryParam("run_id"),
		SessionID: c.QueryParam("session_id"),
		Cursor:    c.QueryParam("cursor"),
	}
	switch st := c.QueryParam("status"); {
	case st == "", st == string(service.StatusResolved), engine.ApprovalStatus(st).Valid():
		f.Status = engine.ApprovalStatus(st)
	default:
		return httpx.Invalid(fmt.Sprintf("status must be %q or one of %v", service.StatusResolved, engine.ApprovalStatuses()))
	}
	limit, err := httpx.QueryInt(c, "limit", 1, 200)
	if err != nil {
		return err
	}
	f.Limit = limit
	page, err := h.svc.ListApprovals(c.Request().Context(), principal(c), f)
	if err != nil {
		return err
	}
	if page.Items == nil {
		page.Items = []api.Approval{}
	}
	return c.JSON(http.StatusOK, page)
}

func (h *Handlers) ApprovalGet(c echo.Context) error {
	a, err := h.svc.GetApproval(c.Request().Context(), principal(c), c.Param("id"))
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, a)
}

// ApprovalResolve answers 200 with the approval when this call resolved it
// or it was already resolved the same way, and 409 with the stored approval
// when it was resolved differently (or expired, or was cancelled).
func (h *Handlers) ApprovalResolve(c echo.Context) error {
	var in api.ResolveRequest
	if err := httpx.DecodeJSON(c, &in); err != nil {
		return err
	}
	if !in.Resolution.Valid() {
		return httpx.Invalid(fmt.Sprintf("resolution must be one of %v", engine.ApprovalResolutionTypes()))
	}
	var out service.ResolveOutcome
	var err error
	switch {
	case in.Resolution == engine.ResolutionApproveForTask:
		out, err = h.svc.ResolveApprovalForTask(c.Request().Context(), principal(c), c.Param("id"), "", in.TaskGrant, in.Reason)
	case in.TaskGrant != nil:
		return httpx.Invalid("task_grant is accepted only with approve_for_task")
	default:
		out, err = h.svc.ResolveApproval(c.Request().Context(), principal(c), c.Param("id"), in.Resolution, in.Reason)
	}
	if err != nil {
		return err
	}
	if out.Result == service.ResolveConflict {
		ae := httpx.NewError(http.StatusConflict, httpx.CodeConflict,
			fmt.Sprintf("the approval is already %s", out.Approval.Status))
		ae.Approval = &out.Approval
		return ae
	}
	return c.JSON(http.StatusOK, out.Approval)
}

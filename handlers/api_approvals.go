package handlers

import (
	"fmt"
	"net/http"

	"github.com/labstack/echo/v4"

	"gatehouse/api"
	"gatehouse/engine"
	"gatehouse/service"
)

// approvalList is one page of the tenant's approvals, in queue order for
// pending (risk, then oldest first), newest resolution first otherwise.
// The tenant is the principal's; no parameter can name another.
func (s *Server) approvalList(c echo.Context) error {
	f := service.ApprovalFilter{
		RunID:     c.QueryParam("run_id"),
		SessionID: c.QueryParam("session_id"),
		Cursor:    c.QueryParam("cursor"),
	}
	switch st := c.QueryParam("status"); {
	case st == "", st == string(service.StatusResolved), engine.ApprovalStatus(st).Valid():
		f.Status = engine.ApprovalStatus(st)
	default:
		return invalid(fmt.Sprintf("status must be %q or one of %v", service.StatusResolved, engine.ApprovalStatuses()))
	}
	limit, err := queryInt(c, "limit", 1, 200)
	if err != nil {
		return err
	}
	f.Limit = limit
	page, err := s.cfg.Service.ListApprovals(c.Request().Context(), principal(c), f)
	if err != nil {
		return err
	}
	if page.Items == nil {
		page.Items = []api.Approval{}
	}
	return c.JSON(http.StatusOK, page)
}

func (s *Server) approvalGet(c echo.Context) error {
	a, err := s.cfg.Service.GetApproval(c.Request().Context(), principal(c), c.Param("id"))
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, a)
}

// approvalResolve answers 200 with the approval when this call resolved it
// or it was already resolved the same way, and 409 with the stored approval
// when it was resolved differently (or expired, or was cancelled).
func (s *Server) approvalResolve(c echo.Context) error {
	var in api.ResolveRequest
	if err := decodeJSON(c, &in); err != nil {
		return err
	}
	if !in.Resolution.Valid() {
		return invalid(fmt.Sprintf("resolution must be one of %v", engine.ApprovalResolutionTypes()))
	}
	out, err := s.cfg.Service.ResolveApproval(c.Request().Context(), principal(c), c.Param("id"), in.Resolution, in.Reason)
	if err != nil {
		return err
	}
	if out.Result == service.ResolveConflict {
		ae := newError(http.StatusConflict, codeConflict,
			fmt.Sprintf("the approval is already %s", out.Approval.Status))
		ae.Approval = &out.Approval
		return ae
	}
	return c.JSON(http.StatusOK, out.Approval)
}

package console

import (
	"net/http"
	"time"

	"github.com/labstack/echo/v4"

	"gatehouse/api"
	"gatehouse/engine"
	"gatehouse/handlers/internal/httpx"
	"gatehouse/service"
	"gatehouse/web/templates"
)

// RunShow is one run: its invocations with their decisions, and its events.
func (cn *Console) RunShow(c echo.Context) error {
	p, _ := httpx.PrincipalOf(c)
	ctx := c.Request().Context()
	run, err := cn.svc.GetRun(ctx, p, c.Param("id"))
	if err != nil {
		return err
	}
	invs, err := cn.svc.ListInvocations(ctx, p, run.ID)
	if err != nil {
		return err
	}
	evs, err := cn.svc.ListEvents(ctx, p, service.EventFilter{RunID: run.ID, Limit: timelineLimit})
	if err != nil {
		return err
	}
	grants, showGrants, err := cn.sessionGrants(c, run.SessionID)
	if err != nil {
		return err
	}
	consents, err := cn.sessionConsents(c, run.SessionID)
	if err != nil {
		return err
	}
	page, err := cn.page(c, "", "Run")
	if err != nil {
		return err
	}
	m := templates.RunPage{
		Page:          page,
		ID:            run.ID,
		Status:        run.Status,
		FailureReason: run.FailureReason,
		AgentID:       run.AgentID,
		AgentVersion:  run.AgentVersion,
		SessionID:     run.SessionID,
		Principal:     run.PrincipalID,
		PolicyProfile: run.PolicyProfile,
		CreatedAt:     run.CreatedAt.UTC().Format(time.DateTime),
		Timeline:      timelineView(evs),
		CanCancel:     hasScope(c, engine.ScopeRunCancel) && !runEnded(run.Status),
		Grants:        grants,
		ShowGrants:    showGrants,
		CanRevoke:     hasScope(c, engine.ScopeGrantWrite),
		Consents:      consents,
		CanConsent:    hasScope(c, engine.ScopeApprovalResolve),
	}
	for _, inv := range invs {
		m.Invocations = append(m.Invocations, templates.InvocationRow{
			ID:          inv.ID,
			Step:        inv.StepNumber,
			Tool:        inv.ToolName,
			Summary:     inv.Summary,
			Status:      inv.Status,
			Decision:    string(inv.Decision.Decision),
			ReasonCode:  inv.Decision.ReasonCode,
			Risk:        string(inv.Risk),
			ApprovalID:  inv.ApprovalID,
			TaskGrantID: inv.TaskGrantID,
			At:          inv.CreatedAt.UTC().Format(time.DateTime),
		})
	}
	return cn.render(c, http.StatusOK, templates.Run(m))
}

// runEnded reports whether a run is in a final status: nothing to cancel.
func runEnded(status string) bool {
	return status == api.RunCompleted || status == api.RunFailed || status == api.RunCancelled
}

// RunCancel cancels a run from its page, through the same service method
// as POST /v1/runs/{id}/cancel (run.cancel): its pending approvals end
// cancelled. A run that ended meanwhile is a 409.
func (cn *Console) RunCancel(c echo.Context) error {
	p, _ := httpx.PrincipalOf(c)
	run, err := cn.svc.CancelRun(c.Request().Context(), p, c.Param("id"))
	if err != nil {
		return err
	}
	if err := cn.flash(c, "ok", "Run cancelled; its pending approvals were cancelled."); err != nil {
		return err
	}
	return redirect(c, "/runs/"+run.ID)
}

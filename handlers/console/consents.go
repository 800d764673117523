package console

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"gatehouse/api"
	"gatehouse/engine"
	"gatehouse/handlers/internal/httpx"
	"gatehouse/web/templates"
)

// consentForm is the run page's consent form.
type consentForm struct {
	ToolName  string `form:"tool_name"`
	Arguments string `form:"arguments"`
	Minutes   string `form:"minutes"`
	Next      string `form:"next"`
}

// ConsentRecord records a signed-in human's consent to one exact action
// of a session, through the same service method as POST
// /v1/sessions/{id}/consents, as a console consent: the human may be the
// principal whose agent works the session.
func (cn *Console) ConsentRecord(c echo.Context) error {
	var f consentForm
	if err := bindForm(c, &f); err != nil {
		return err
	}
	minutes, err := strconv.Atoi(strings.TrimSpace(f.Minutes))
	if err != nil || minutes < 1 || minutes > 30 {
		return httpx.Invalid("Consent lasts 1 to 30 minutes.")
	}
	var args map[string]any
	if err := engine.DecodeStrict([]byte(f.Arguments), &args); err != nil || args == nil {
		return httpx.Invalid("The arguments must be one JSON object, exactly as the agent will send them.")
	}
	p, _ := httpx.PrincipalOf(c)
	consent, err := cn.svc.RecordConsent(c.Request().Context(), p, c.Param("id"), api.ConsentInput{
		ToolName: strings.TrimSpace(f.ToolName), Arguments: args, ExpiresInSeconds: minutes * 60,
	}, true)
	if err != nil {
		return err
	}
	msg := fmt.Sprintf("Consent recorded for one %s call until %s.", consent.ToolName, consent.ExpiresAt.UTC().Format(time.TimeOnly))
	if err := cn.flash(c, "ok", templates.VisibleText(msg)); err != nil {
		return err
	}
	return redirect(c, safeNext(f.Next))
}

// sessionConsents is the run page's consent list for a viewer that may
// read approvals.
func (cn *Console) sessionConsents(c echo.Context, sessionID string) ([]templates.ConsentRow, error) {
	if !hasScope(c, engine.ScopeApprovalRead) {
		return nil, nil
	}
	p, _ := httpx.PrincipalOf(c)
	cs, err := cn.svc.ListConsents(c.Request().Context(), p, sessionID)
	if err != nil {
		return nil, err
	}
	out := make([]templates.ConsentRow, 0, len(cs))
	for _, x := range cs {
		out = append(out, templates.ConsentRow{
			Tool: x.ToolName, Hash: x.ArgumentsHash, By: x.CreatedBy, Status: x.Status,
			ExpiresAt: x.ExpiresAt.UTC().Format(time.DateTime), ApprovalID: x.ApprovalID,
		})
	}
	return out, nil
}

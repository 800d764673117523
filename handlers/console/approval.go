package console

import (
	"net/http"

	"github.com/labstack/echo/v4"

	"gatehouse/engine"
	"gatehouse/handlers/internal/httpx"
	"gatehouse/service"
	"gatehouse/web/templates"
)

// ApprovalShow is one approval, its arguments whole (the card shows the
// first 512 characters of each), with, for a viewer holding run.read (what
// GET /v1/events needs), its run's timeline.
func (cn *Console) ApprovalShow(c echo.Context) error {
	p, _ := httpx.PrincipalOf(c)
	ctx := c.Request().Context()
	a, err := cn.svc.GetApproval(ctx, p, c.Param("id"))
	if err != nil {
		return err
	}
	args, digests, err := cn.svc.GetApprovalArguments(ctx, p, a.ID)
	if err != nil {
		return err
	}
	m := templates.DetailPage{PolicyVersion: a.PolicyVersion}
	if hasScope(c, engine.ScopeRunRead) {
		evs, err := cn.svc.ListEvents(ctx, p, service.EventFilter{RunID: a.RunID, Limit: timelineLimit})
		if err != nil {
			return err
		}
		m.ShowTimeline, m.Timeline = true, timelineView(evs)
	}
	if m.Page, err = cn.page(c, "", "Approval"); err != nil {
		return err
	}
	m.Card = detailCardView(a, args, digests, p, cn.now())
	m.Card.CSRF, m.Card.Back = m.CSRF, m.Card.DetailURL()
	return cn.render(c, http.StatusOK, templates.Detail(m))
}

// timelineLimit is the most events a run page shows: a run with more is
// a runaway, and its first events explain it.
const timelineLimit = 500

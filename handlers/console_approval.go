package handlers

import (
	"net/http"

	"github.com/labstack/echo/v4"

	"gatehouse/service"
	"gatehouse/web/templates"
)

// approvalShow is one approval with its run's timeline.
func (cn *console) approvalShow(c echo.Context) error {
	if err := requireConsoleScope(c, scopeApprovalRead); err != nil {
		return err
	}
	p, _ := principalOf(c)
	ctx := c.Request().Context()
	a, err := cn.s.cfg.Service.GetApproval(ctx, p, c.Param("id"))
	if err != nil {
		return err
	}
	evs, err := cn.s.cfg.Service.ListEvents(ctx, p, service.EventFilter{RunID: a.RunID, Limit: timelineLimit})
	if err != nil {
		return err
	}
	page, err := cn.page(c, "", "Approval")
	if err != nil {
		return err
	}
	card := cardView(a, p, cn.s.now(), "")
	card.CSRF, card.Back = page.CSRF, card.DetailURL()
	return cn.render(c, http.StatusOK, templates.Detail(templates.DetailPage{
		Page:          page,
		Card:          card,
		PolicyVersion: a.PolicyVersion,
		Timeline:      timelineView(evs),
	}))
}

// timelineLimit is the most events a run page shows: a run with more is
// a runaway, and its first events explain it.
const timelineLimit = 500

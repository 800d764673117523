package api

import (
	"net/http"
	"time"

	"github.com/labstack/echo/v4"

	"gatehouse/api"
	"gatehouse/handlers/internal/httpx"
	"gatehouse/service"
)

// maxEventWait bounds a long-poll, below common proxy idle timeouts.
const maxEventWait = 30

// EventList returns the tenant's events after a cursor (`after`), waiting up to
// `wait` seconds for the first one when there is none yet.
func (h *Handlers) EventList(c echo.Context) error {
	f := service.EventFilter{RunID: c.QueryParam("run_id"), After: c.QueryParam("after")}
	limit, err := httpx.QueryInt(c, "limit", 1, 500)
	if err != nil {
		return err
	}
	wait, err := httpx.QueryInt(c, "wait", 0, maxEventWait)
	if err != nil {
		return err
	}
	f.Limit = limit
	f.Wait = time.Duration(wait) * time.Second
	events, err := h.svc.ListEvents(c.Request().Context(), principal(c), f)
	if err != nil {
		return err
	}
	page := api.EventPage{Events: events, Watermark: f.After}
	if page.Events == nil {
		page.Events = []api.Event{}
	}
	if n := len(events); n > 0 {
		page.Watermark = events[n-1].Cursor
	}
	if page.Watermark == "" {
		page.Watermark = service.StartCursor
	}
	return c.JSON(http.StatusOK, page)
}

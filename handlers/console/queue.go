package console

import (
	"net/http"
	"strconv"

	"github.com/labstack/echo/v4"

	"gatehouse/api"
	"gatehouse/engine"
	"gatehouse/handlers/internal/httpx"
	"gatehouse/service"
	"gatehouse/web/templates"
)

// Queue is the pending queue: one keyset page in queue order. Under HTMX
// (the "more" link) it answers with the next cards only.
func (cn *Console) Queue(c echo.Context) error {
	p, _ := httpx.PrincipalOf(c)
	ctx := c.Request().Context()
	cursor := c.QueryParam("cursor")
	page, err := cn.page(c, "queue", "")
	if err != nil {
		return err
	}
	m := templates.QueuePage{}
	if !page.Partial {
		// The watermark is read before the list: an approval requested in
		// between arrives twice (console.js drops the copy), never zero times.
		if m.Poll.After, err = cn.svc.EventWatermark(ctx, p); err != nil {
			return err
		}
	}
	list, err := cn.svc.ListApprovals(ctx, p, service.ApprovalFilter{Limit: queuePageSize, Cursor: cursor})
	if err != nil {
		return err
	}
	if cursor == "" {
		page.Pending = pendingText(list)
	}
	m.Page = page
	now := cn.now()
	for _, a := range list.Items {
		card := cardView(a, p, now, "")
		card.CSRF, card.Back = page.CSRF, "/"
		m.Cards = append(m.Cards, card)
	}
	if list.NextCursor != "" {
		m.MoreURL = "/?cursor=" + list.NextCursor
	}
	return cn.render(c, http.StatusOK, templates.Queue(m))
}

// pendingText is the pending count from the first page: exact up to a
// page, "50+" beyond, so counting never costs more than the page itself.
func pendingText(first api.ApprovalPage) string {
	return countText(len(first.Items), first.NextCursor != "")
}

func countText(n int, more bool) string {
	s := strconv.Itoa(n)
	if more {
		s += "+"
	}
	return s
}

// maxUpdateEvents bounds one poll; a longer backlog arrives over the next
// polls.
const maxUpdateEvents = 100

// QueueUpdates answers the queue's poll: approvals requested or resolved
// after the watermark, the count, and a poller with the new watermark.
func (cn *Console) QueueUpdates(c echo.Context) error {
	after := c.QueryParam("after")
	if after == "" {
		return httpx.Invalid("after must be a watermark")
	}
	p, _ := httpx.PrincipalOf(c)
	ch, err := cn.svc.QueueChangesSince(c.Request().Context(), p, after, maxUpdateEvents, queuePageSize)
	if err != nil {
		return err
	}
	u := templates.QueueUpdate{Poll: templates.Poll{After: ch.Cursor}}
	if len(ch.Approvals) > 0 {
		now := cn.now()
		csrf := sessionOf(c).CSRF
		for _, a := range ch.Approvals {
			card := cardView(a, p, now, "")
			card.CSRF, card.Back = csrf, "/"
			if a.Status == engine.ApprovalPending {
				card.New = true
				u.Cards = append(u.Cards, card)
			} else {
				card.OOB = true
				u.Resolved = append(u.Resolved, card)
			}
		}
		u.Pending = countText(ch.Pending, ch.More)
	}
	return cn.render(c, http.StatusOK, templates.QueueUpdates(u))
}

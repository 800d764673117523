package handlers

import (
	"errors"
	"net/http"
	"strconv"

	"github.com/labstack/echo/v4"

	"gatehouse/api"
	"gatehouse/engine"
	"gatehouse/service"
	"gatehouse/web/templates"
)

// queue is the pending queue: one keyset page in queue order. Under HTMX
// (the "more" link) it answers with the next cards only.
func (cn *console) queue(c echo.Context) error {
	p, _ := principalOf(c)
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
		if m.Poll.After, err = cn.s.cfg.Service.EventWatermark(ctx, p); err != nil {
			return err
		}
	}
	list, err := cn.s.cfg.Service.ListApprovals(ctx, p, service.ApprovalFilter{Limit: queuePageSize, Cursor: cursor})
	if err != nil {
		return err
	}
	if cursor == "" {
		page.Pending = pendingText(list)
	}
	m.Page = page
	now := cn.s.now()
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
	n := strconv.Itoa(len(first.Items))
	if first.NextCursor != "" {
		n += "+"
	}
	return n
}

// maxUpdateEvents bounds one poll; a longer backlog arrives over the next
// polls.
const maxUpdateEvents = 100

// queueUpdates answers the queue's poll: approvals requested or resolved
// after the watermark, the count, and a poller with the new watermark.
func (cn *console) queueUpdates(c echo.Context) error {
	after := c.QueryParam("after")
	if after == "" {
		return invalid("after must be a watermark")
	}
	p, _ := principalOf(c)
	ctx := c.Request().Context()
	evs, err := cn.s.cfg.Service.ListEvents(ctx, p, service.EventFilter{After: after, Limit: maxUpdateEvents})
	if err != nil {
		return err
	}
	u := templates.QueueUpdate{Poll: templates.Poll{After: after}}
	if len(evs) > 0 {
		u.Poll.After = evs[len(evs)-1].Cursor
	}
	ids := changedApprovals(evs)
	if len(ids) > 0 {
		now := cn.s.now()
		csrf := sessionOf(c).CSRF
		for _, id := range ids {
			a, err := cn.s.cfg.Service.GetApproval(ctx, p, id)
			if errors.Is(err, service.ErrNotFound) {
				continue
			}
			if err != nil {
				return err
			}
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
		first, err := cn.s.cfg.Service.ListApprovals(ctx, p, service.ApprovalFilter{Limit: queuePageSize})
		if err != nil {
			return err
		}
		u.Pending = pendingText(first)
	}
	return cn.render(c, http.StatusOK, templates.QueueUpdates(u))
}

// changedApprovals lists, once each and in order, the approvals that the
// events requested or resolved.
func changedApprovals(evs []api.Event) []string {
	seen := map[string]bool{}
	var ids []string
	for _, e := range evs {
		var id string
		switch p, _ := e.DecodePayload(); p := p.(type) {
		case api.ApprovalRequestedPayload:
			id = p.ApprovalID
		case api.ApprovalResolvedPayload:
			id = p.ApprovalID
		}
		if id == "" || seen[id] {
			continue
		}
		seen[id] = true
		ids = append(ids, id)
	}
	return ids
}

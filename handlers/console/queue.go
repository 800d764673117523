package console

import (
	"net/http"
	"net/url"
	"strconv"
	"time"

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
	risk := engine.RiskLevel(c.QueryParam("risk"))
	if risk != "" && !risk.Valid() {
		return httpx.Invalid("Unknown risk.")
	}
	view, err := cn.queueView(c)
	if err != nil {
		return err
	}
	page, err := cn.page(c, "queue", "")
	if err != nil {
		return err
	}
	m := templates.QueuePage{View: view, Risk: string(risk), CanResolve: holds(p, engine.ScopeApprovalResolve)}
	m.Poll.View = view
	now := cn.now()
	if !page.Partial {
		// The watermark is read before the list: an approval requested in
		// between arrives twice (console.js drops the copy), never zero times.
		if m.Poll.After, err = cn.svc.EventWatermark(ctx, p); err != nil {
			return err
		}
		soon, err := cn.svc.ExpiringSoon(ctx, p, expiringWindow, expiringLimit)
		if err != nil {
			return err
		}
		for _, a := range soon {
			m.Expiring = append(m.Expiring, cardView(a, p, now, ""))
		}
	}
	list, err := cn.svc.ListApprovals(ctx, p, service.ApprovalFilter{Limit: queuePageSize, Cursor: cursor, Risk: risk})
	if err != nil {
		return err
	}
	if cursor == "" && risk == "" {
		page.Pending = pendingText(list)
	}
	m.Page = page
	su := cn.stepUpView(c)
	for _, a := range list.Items {
		card := queueCard(a, p, now, page.CSRF)
		card.StepUp = su
		m.Cards = append(m.Cards, card)
	}
	if list.NextCursor != "" {
		next := url.Values{"cursor": {list.NextCursor}}
		if risk != "" {
			next.Set("risk", string(risk))
		}
		m.MoreURL = "/?" + next.Encode()
	}
	return cn.render(c, http.StatusOK, templates.Queue(m))
}

// queueCard is a card of the queue: it returns to the queue after a
// resolution without JavaScript, and is offered to the batch form unless
// it is critical.
func queueCard(a api.Approval, p engine.Principal, now time.Time, csrf string) templates.Card {
	card := cardView(a, p, now, "")
	card.CSRF, card.Back = csrf, "/"
	card.Selectable = card.CanResolve && card.Pending() && !card.Critical()
	return card
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
	view := templates.ViewCards
	if c.QueryParam("view") == templates.ViewList {
		view = templates.ViewList
	}
	p, _ := httpx.PrincipalOf(c)
	ch, err := cn.svc.QueueChangesSince(c.Request().Context(), p, after, maxUpdateEvents, queuePageSize)
	if err != nil {
		return err
	}
	u := templates.QueueUpdate{Poll: templates.Poll{After: ch.Cursor, View: view}}
	if len(ch.Approvals) > 0 {
		now := cn.now()
		csrf, su := sessionOf(c).CSRF, cn.stepUpView(c)
		for _, a := range ch.Approvals {
			card := queueCard(a, p, now, csrf)
			card.StepUp = su
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

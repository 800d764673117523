package console

import (
	"net/http"
	"net/url"
	"time"

	"github.com/labstack/echo/v4"

	"gatehouse/engine"
	"gatehouse/handlers/internal/httpx"
	"gatehouse/service"
	"gatehouse/web/templates"
)

const dateLayout = "2006-01-02"

// History lists resolved approvals, newest first, filtered by status,
// resolver, risk and date (a plain GET form; the "older" link is a keyset
// cursor).
func (cn *Console) History(c echo.Context) error {
	q := c.QueryParams()
	fm := templates.HistoryFilter{
		Status:     q.Get("status"),
		ResolvedBy: q.Get("resolver"),
		Risk:       q.Get("risk"),
		Since:      q.Get("since"),
		Until:      q.Get("until"),
	}
	f, err := historyFilter(fm)
	if err != nil {
		return err
	}
	f.Cursor = q.Get("cursor")
	p, _ := httpx.PrincipalOf(c)
	list, err := cn.svc.ListApprovals(c.Request().Context(), p, f)
	if err != nil {
		return err
	}
	page, err := cn.page(c, "history", "History")
	if err != nil {
		return err
	}
	m := templates.HistoryPage{Page: page, Filter: fm}
	now := cn.now()
	for _, a := range list.Items {
		m.Rows = append(m.Rows, cardView(a, p, now, ""))
	}
	if list.NextCursor != "" {
		next := url.Values{}
		for k, v := range map[string]string{"status": fm.Status, "resolver": fm.ResolvedBy, "risk": fm.Risk, "since": fm.Since, "until": fm.Until, "cursor": list.NextCursor} {
			if v != "" {
				next.Set(k, v)
			}
		}
		m.MoreURL = "/history?" + next.Encode()
	}
	return cn.render(c, http.StatusOK, templates.History(m))
}

// historyFilter turns the form into a service filter; an unknown status or
// risk, or a malformed date, is a 400 naming the field.
func historyFilter(fm templates.HistoryFilter) (service.ApprovalFilter, error) {
	f := service.ApprovalFilter{Status: service.StatusResolved, ResolvedBy: fm.ResolvedBy, Limit: queuePageSize}
	if fm.Status != "" {
		st := engine.ApprovalStatus(fm.Status)
		if !st.Valid() || st == engine.ApprovalPending {
			return f, httpx.Invalid("Unknown status.")
		}
		f.Status = st
	}
	if fm.Risk != "" {
		r := engine.RiskLevel(fm.Risk)
		if !r.Valid() {
			return f, httpx.Invalid("Unknown risk.")
		}
		f.Risk = r
	}
	if fm.Since != "" {
		t, err := time.Parse(dateLayout, fm.Since)
		if err != nil {
			return f, httpx.Invalid("The From date must look like 2026-01-31.")
		}
		f.Since = &t
	}
	if fm.Until != "" {
		t, err := time.Parse(dateLayout, fm.Until)
		if err != nil {
			return f, httpx.Invalid("The To date must look like 2026-01-31.")
		}
		// The To day is included: the bound is the next midnight.
		t = t.AddDate(0, 0, 1)
		f.Until = &t
	}
	return f, nil
}

package console

import (
	"net/http"
	"slices"
	"strconv"

	"github.com/labstack/echo/v4"

	"gatehouse/engine"
	"gatehouse/handlers/internal/httpx"
	"gatehouse/service"
	"gatehouse/web/templates"
)

// Overview is the dashboard: pending by risk, resolution latency, and
// expiries, denials and approvals per hour over the last day.
func (cn *Console) Overview(c echo.Context) error {
	p, _ := httpx.PrincipalOf(c)
	o, err := cn.svc.Overview(c.Request().Context(), p)
	if err != nil {
		return err
	}
	page, err := cn.page(c, "overview", "Overview")
	if err != nil {
		return err
	}
	return cn.render(c, http.StatusOK, templates.Overview(overviewView(page, o)))
}

func overviewView(page templates.Page, o service.Overview) templates.OverviewPage {
	m := templates.OverviewPage{
		Page:        page,
		LatencyP50:  durationText(o.LatencyP50),
		LatencyP95:  durationText(o.LatencyP95),
		ResolvedDay: o.ResolvedLastDay,
		Charts: []templates.Chart{
			hourChart("Approvals per hour", "", o.ApprovalsByHour),
			hourChart("Denials per hour", "bad", o.DenialsByHour),
			hourChart("Expiries per hour", "warn", o.ExpiriesByHour),
		},
	}
	m.AdvisoryEscalationRate, m.AdvisoryJudged = percent(o.AdvisoryEscalated, o.AdvisoryJudged), o.AdvisoryJudged
	m.AdvisoryDisagreementRate, m.AdvisoryResolved = percent(o.AdvisoryApproved, o.AdvisoryEscalationsResolved), o.AdvisoryEscalationsResolved
	risks := engine.RiskLevels()
	slices.Reverse(risks)
	for _, r := range risks {
		m.PendingByRisk = append(m.PendingByRisk, templates.Bar{Label: string(r), Value: o.PendingByRisk[r]})
	}
	return m
}

// hourChart labels 24 hourly counts, oldest first, by hours ago.
func hourChart(title, kind string, counts []int) templates.Chart {
	ch := templates.Chart{Title: title, Kind: kind}
	for i, n := range counts {
		ago := len(counts) - i
		ch.Bars = append(ch.Bars, templates.Bar{Label: strconv.Itoa(ago) + " h ago", Value: n})
		ch.Total += n
	}
	return ch
}

// percent is part of whole as a whole percentage, or "—" of nothing.
func percent(part, whole int) string {
	if whole == 0 {
		return "—"
	}
	return strconv.Itoa((part*100+whole/2)/whole) + "%"
}

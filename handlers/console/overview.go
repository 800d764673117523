package console

import (
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"time"

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
			hourChart("Approvals per hour", "", engine.ApprovalApproved, o.ApprovalsByHour, o.At),
			hourChart("Denials per hour", "bad", engine.ApprovalDenied, o.DenialsByHour, o.At),
			hourChart("Expiries per hour", "warn", engine.ApprovalExpired, o.ExpiriesByHour, o.At),
		},
	}
	m.AdvisoryEscalationRate, m.AdvisoryJudged = percent(o.AdvisoryEscalated, o.AdvisoryJudged), o.AdvisoryJudged
	m.AdvisoryDisagreementRate, m.AdvisoryResolved = percent(o.AdvisoryApproved, o.AdvisoryEscalationsResolved), o.AdvisoryEscalationsResolved
	risks := engine.RiskLevels()
	slices.Reverse(risks)
	for _, r := range risks {
		m.PendingByRisk = append(m.PendingByRisk, templates.Bar{Label: string(r), Value: o.PendingByRisk[r], Href: "/?risk=" + string(r)})
	}
	return m
}

// axisEvery is the spacing of a chart's hour labels, in bars.
const axisEvery = 6

// hourChart labels 24 hourly counts, oldest first, ending at end: each bar
// by its hour (UTC) and the axis every six hours; the chart links to the
// history of that status since the first hour's day.
func hourChart(title, kind string, status engine.ApprovalStatus, counts []int, end time.Time) templates.Chart {
	ch := templates.Chart{Title: title, Kind: kind}
	start := end.UTC().Add(-time.Duration(len(counts)) * time.Hour)
	for i, n := range counts {
		from := start.Add(time.Duration(i) * time.Hour)
		label := from.Format("15:04") + "–" + from.Add(time.Hour).Format("15:04") + " UTC"
		ch.Bars = append(ch.Bars, templates.Bar{Label: label, Value: n})
		ch.Total += n
		if i%axisEvery == 0 {
			ch.Axis = append(ch.Axis, from.Format("15:04"))
		}
	}
	ch.Axis = append(ch.Axis, "now")
	ch.Href = "/history?" + url.Values{"status": {string(status)}, "since": {start.Format(dateLayout)}}.Encode()
	return ch
}

// percent is part of whole as a whole percentage, or "—" of nothing.
func percent(part, whole int) string {
	if whole == 0 {
		return "—"
	}
	return strconv.Itoa((part*100+whole/2)/whole) + "%"
}

package console

import (
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"gatehouse/api"
	"gatehouse/engine"
	"gatehouse/handlers/internal/httpx"
	"gatehouse/service"
	"gatehouse/web/templates"
)

// ApprovalShow is one approval, its arguments whole (the card shows the
// first 512 characters of each), its context (who asks, the same call
// pending elsewhere) with, for a viewer holding run.read (what GET
// /v1/events needs), its run's earlier steps and timeline.
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
	rc, err := cn.svc.GetApprovalContext(ctx, p, a.ID)
	if err != nil {
		return err
	}
	m := templates.DetailPage{PolicyVersion: a.PolicyVersion, Context: contextView(a, rc, cn.now())}
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
	m.Card.StepUp = cn.stepUpView(c)
	m.Card.Identical = m.Context.IdenticalText
	return cn.render(c, http.StatusOK, templates.Detail(m))
}

// timelineLimit is the most events a run page shows: a run with more is
// a runaway, and its first events explain it.
const timelineLimit = 500

// contextView is the detail page's context of approval a, read at now.
func contextView(a api.Approval, rc service.ApprovalContext, now time.Time) templates.DetailContext {
	m := templates.DetailContext{
		AgentID: rc.AgentID, AgentVersion: rc.AgentVersion, Principal: rc.PrincipalID, Step: rc.StepNumber,
		RunShown: rc.RunShown, MoreSteps: rc.MoreSteps,
	}
	for _, s := range rc.StepsBefore {
		m.Steps = append(m.Steps, stepView(s))
	}
	for _, s := range rc.DenialsBefore {
		m.Denials = append(m.Denials, stepView(s))
	}
	if len(rc.IdenticalPending) == 0 {
		return m
	}
	oldest := now
	for _, o := range rc.IdenticalPending {
		m.Identical = append(m.Identical, templates.IdenticalRow{ID: o.ID, RunID: o.RunID, When: relativeTo(o.CreatedAt, a.CreatedAt)})
		oldest = minTime(oldest, o.CreatedAt)
	}
	n := strconv.Itoa(len(rc.IdenticalPending))
	if rc.MoreIdentical {
		n += "+"
	}
	noun := "requests"
	if n == "1" {
		noun = "request"
	}
	m.IdenticalText = n + " identical " + a.ToolName + " " + noun + " pending from other runs in the last " + span(now.Sub(oldest))
	return m
}

// stepView is one earlier step: what became of it and why, in words.
func stepView(s service.Step) templates.StepRow {
	r := templates.StepRow{
		Step: s.StepNumber, Tool: s.ToolName, Summary: s.Summary, ApprovalID: s.ApprovalID,
		At: s.CreatedAt.UTC().Format("15:04:05"), ReasonCode: s.Decision.ReasonCode,
	}
	r.Outcome, r.OutcomeKind = stepOutcome(s.Status)
	r.Reason = reasonText(s.Decision.ReasonCode, s.Decision.Decision)
	if s.Status == api.InvocationDenied && s.ReasonCode != "" {
		r.ReasonCode, r.Reason = s.ReasonCode, reasonText(s.ReasonCode, engine.DecisionDeny)
	}
	return r
}

// stepOutcome is an invocation status in words, and its colour.
func stepOutcome(status string) (text, kind string) {
	switch status {
	case api.InvocationSucceeded:
		return "succeeded", "ok"
	case api.InvocationAuthorized:
		return "authorized", "ok"
	case api.InvocationDenied:
		return "denied", "bad"
	case api.InvocationFailed:
		return "failed", "bad"
	case api.InvocationWaitingForApproval:
		return "waiting for approval", "warn"
	case api.InvocationUncertain:
		return "outcome uncertain", "warn"
	case api.InvocationCancelled:
		return "cancelled", "warn"
	}
	return strings.ToLower(status), "warn"
}

// relativeTo says when t was against ref: "3 minutes before this one".
func relativeTo(t, ref time.Time) string {
	d := t.Sub(ref)
	switch {
	case d.Abs() <= time.Minute:
		return "within a minute of this one"
	case d < 0:
		return span(-d) + " before this one"
	}
	return span(d) + " after this one"
}

// span is a duration as a reader counts it, rounded up: "minute", "3
// minutes", "2 hours", "4 days".
func span(d time.Duration) string {
	unit := func(n int, one string) string {
		if n <= 1 {
			return one
		}
		return strconv.Itoa(n) + " " + one + "s"
	}
	ceil := func(u time.Duration) int { return int((d + u - 1) / u) }
	switch {
	case d <= time.Minute:
		return "minute"
	case d <= time.Hour:
		return unit(ceil(time.Minute), "minute")
	case d <= 24*time.Hour:
		return unit(ceil(time.Hour), "hour")
	}
	return unit(ceil(24*time.Hour), "day")
}

func minTime(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}

package console

import (
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"gatehouse/api"
	"gatehouse/engine"
	"gatehouse/service"
	"gatehouse/web/templates"
)

// View-model builders: plain functions from service values to what the
// templates render. They hold every formatting decision so the templates
// stay declarative and the tests can build the same models.

// Arguments longer than this as shown (markers counted, not the
// characters they stand for), or spanning more lines, start collapsed.
// Summaries longer than summaryClampChars are clamped on a card.
const (
	argCollapseChars  = 200
	argCollapseLines  = 4
	argPreviewChars   = 80
	summaryClampChars = 160
	summaryClampLines = 3
)

// cardView builds an approval card for viewer at now. result says how the
// viewer's own resolution went, when this render answers one.
func cardView(a api.Approval, viewer engine.Principal, now time.Time, result service.ResolveResult) templates.Card {
	c := templates.Card{
		ID:           a.ID,
		Summary:      a.ActionSummary,
		SummaryChars: longSummaryChars(a.ActionSummary),
		Tool:         a.ToolName,
		Risk:         string(a.Risk),
		RiskRank:     a.Risk.Rank(),
		SideEffect:   string(a.SideEffect),
		RunID:        a.RunID,
		SessionID:    a.SessionID,
		Status:       string(a.Status),
		CreatedAt:    a.CreatedAt.UTC().Format(time.RFC3339),
		ExpiresAt:    a.ExpiresAt.UTC().Format(time.RFC3339),
		PolicyReason: a.PolicyReason,
		Arguments:    argsView(a.Arguments, a.ArgumentTrust),
		Digests:      digestsView(a.ArgumentDigests),
		ResolvedBy:   a.ResolvedBy,
		Reason:       a.ResolutionReason,
	}
	c.CardContent = cardContent(a, c.Arguments)
	c.TaskGrantCard = taskGrantCard(a, viewer)
	if a.ResolvedAt != nil {
		c.ResolvedAt = dateTime(*a.ResolvedAt)
	}
	triageCard(&c, a, viewer, now)
	c.Quorum = quorumText(a)
	if a.Status == engine.ApprovalPending {
		c.ExpiresIn = expiresIn(a.ExpiresAt, now)
		c.Outcome, c.OutcomeKind = voteOutcome(a, viewer, result)
		return c
	}
	c.Outcome, c.OutcomeKind = outcome(a, viewer, result)
	return c
}

// detailCardView is the card of the approval's detail page: everything
// unclamped, and the arguments whole (args from GetApprovalArguments)
// rather than the approval's view cut at 512 characters.
func detailCardView(a api.Approval, args map[string]any, digests map[string]string, viewer engine.Principal, now time.Time) templates.Card {
	c := cardView(a, viewer, now, "")
	c.Whole = true
	c.Arguments, c.Digests = argsView(args, a.ArgumentTrust), digestsView(digests)
	c.CardContent = cardContent(a, c.Arguments)
	return c
}

// cardContent is why the approval was asked for, in words, and where the
// request came from. Every approval was a require_approval decision.
func cardContent(a api.Approval, args []templates.Arg) templates.CardContent {
	c := templates.CardContent{
		ReasonSentence: reasonText(a.PolicyReason, engine.DecisionRequireApproval),
		Explanation:    a.PolicyExplanation,
		Banner:         originBanner(a.OriginTrust),
		OriginTrust:    string(a.OriginTrust),
	}
	for _, id := range engine.EscalationSignals(a.PolicyReason, a.PolicyExplanation) {
		c.Signals = append(c.Signals, templates.Signal{ID: id, Text: signalText(id)})
	}
	for _, arg := range args {
		if arg.Untrusted {
			c.UntrustedArgs++
		}
	}
	return c
}

// longSummaryChars is a summary's length when a card must clamp it, else 0.
func longSummaryChars(s string) int {
	n := utf8.RuneCountInString(s)
	if n > summaryClampChars || strings.Count(s, "\n") >= summaryClampLines {
		return n
	}
	return 0
}

// outcome tells the viewer plainly what happened to an approval: their own
// decision, or who decided first and how.
func outcome(a api.Approval, viewer engine.Principal, result service.ResolveResult) (text, kind string) {
	kind = "warn"
	switch a.Status {
	case engine.ApprovalApproved:
		kind = "ok"
	case engine.ApprovalDenied:
		kind = "bad"
	}
	verb := map[engine.ApprovalStatus]string{
		engine.ApprovalApproved:  "approved",
		engine.ApprovalDenied:    "denied",
		engine.ApprovalExpired:   "expired",
		engine.ApprovalCancelled: "cancelled",
	}[a.Status]
	if verb == "" {
		verb = string(a.Status)
	}
	at := ""
	if a.ResolvedAt != nil {
		at = " at " + clock(*a.ResolvedAt)
	}
	by := ""
	switch {
	case a.ResolvedBy == "":
	case a.ResolvedBy == viewer.ID && result != service.ResolveConflict:
		return upperFirst(verb) + " by you", kind
	default:
		by = " by " + a.ResolvedBy
	}
	text = verb + by + at
	if result == service.ResolveConflict {
		return "Already " + text, kind
	}
	return upperFirst(text), kind
}

// quorumText counts the approve votes of an approval that needs several
// approvers: "1 of 2 approvals, by alice"; "" when one approval suffices.
func quorumText(a api.Approval) string {
	if a.Quorum <= 1 {
		return ""
	}
	var by []string
	for _, v := range a.Votes {
		if v.Resolution.Status() == engine.ApprovalApproved {
			by = append(by, v.PrincipalID)
		}
	}
	if len(by) == 0 {
		return fmt.Sprintf("Needs %d approvals from different people", a.Quorum)
	}
	return fmt.Sprintf("%d of %d approvals, by %s", len(by), a.Quorum, strings.Join(by, ", "))
}

// voteOutcome tells the voter what became of a vote that left the
// approval pending: counted (once, however often it is cast), or refused
// because they voted otherwise before.
func voteOutcome(a api.Approval, viewer engine.Principal, result service.ResolveResult) (text, kind string) {
	switch result {
	case service.ResolveVoted, service.ResolveSame:
		return "Your approval is counted; it waits for more approvers", "ok"
	case service.ResolveConflict:
		for _, v := range a.Votes {
			if v.PrincipalID == viewer.ID {
				return "Not counted: you already voted " + strings.ReplaceAll(string(v.Resolution), "_", " "), "warn"
			}
		}
	}
	return "", ""
}

// clock is a resolution time as a human reads it in a card.
func clock(t time.Time) string { return t.UTC().Format("15:04 UTC") }

// dateTime is a moment further back than today, to the minute.
func dateTime(t time.Time) string { return t.UTC().Format("2006-01-02 15:04 UTC") }

func upperFirst(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}

// expiresIn is the time left, coarse enough to read at a glance; within
// the last hour it counts seconds, as console.js's ticking clock does.
func expiresIn(at, now time.Time) string {
	d := at.Sub(now)
	switch {
	case d <= 0:
		return "expiring now"
	case d < time.Minute:
		return fmt.Sprintf("in %ds", int(d.Seconds()))
	case d < time.Hour:
		return fmt.Sprintf("in %dm %02ds", int(d.Minutes()), int(d.Seconds())%60)
	default:
		return fmt.Sprintf("in %dh %dm", int(d.Hours()), int(d.Minutes())%60)
	}
}

// argsView renders the redacted arguments in name order. Strings are shown
// as they are (the template makes invisible characters visible and escapes
// them), a truncated one without the view's marker but with the count of
// hidden characters; other values as indented JSON. Each carries its trust
// label and a human reading of its value (display).
func argsView(args map[string]any, trust map[string]engine.TrustLevel) []templates.Arg {
	names := make([]string, 0, len(args))
	for k := range args {
		names = append(names, k)
	}
	slices.Sort(names)
	out := make([]templates.Arg, 0, len(names))
	for _, name := range names {
		v := argText(args[name])
		a := templates.Arg{Name: name, Value: v}
		if _, ok := args[name].(string); ok {
			a.Value, a.Hidden, _ = engine.SplitTruncated(v)
		}
		// Length as shown: 600 padding spaces are one short marker.
		shown := templates.VisibleText(a.Value)
		if utf8.RuneCountInString(shown) > argCollapseChars || strings.Count(shown, "\n") >= argCollapseLines {
			a.Long = true
			a.Short = preview(a.Value)
		}
		a.ArgDisplay = display(name, args[name], a, args, trust[name])
		out = append(out, a)
	}
	return out
}

func argText(v any) string {
	if s, ok := v.(string); ok {
		return s
	}
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}

// preview is the first line of v, cut to a summary's length on a rune
// boundary.
func preview(v string) string {
	line, _, _ := strings.Cut(v, "\n")
	if utf8.RuneCountInString(line) <= argPreviewChars {
		return line
	}
	r := []rune(line)
	return string(r[:argPreviewChars])
}

func digestsView(d map[string]string) []templates.Digest {
	out := make([]templates.Digest, 0, len(d))
	for name, sum := range d {
		out = append(out, templates.Digest{Name: name, SHA256: sum})
	}
	slices.SortFunc(out, func(a, b templates.Digest) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// timelineView renders events as timeline lines.
func timelineView(evs []api.Event) []templates.Event {
	out := make([]templates.Event, 0, len(evs))
	for _, e := range evs {
		p, _ := e.DecodePayload() // a payload that does not decode shows no details
		out = append(out, templates.Event{
			ID:   e.ID,
			At:   e.CreatedAt.UTC().Format("2006-01-02 15:04:05"),
			Type: e.Type,
			Text: timelineText(p),
		})
	}
	return out
}

// timelineText is the fields of a payload a timeline line shows, in one
// order whatever the type: tool name, decision, reason code, resolution,
// status, resolved by, cause, failure reason; empty ones left out.
func timelineText(p api.EventPayload) string {
	var parts []string
	add := func(label, v string) {
		if v != "" {
			parts = append(parts, label+" "+v)
		}
	}
	switch p := p.(type) {
	case api.ActionAuthorizedPayload:
		add("tool name", p.ToolName)
		add("decision", string(p.Decision))
	case api.ActionDeniedPayload:
		add("tool name", p.ToolName)
		add("reason code", p.ReasonCode)
		add("cause", p.Cause)
	case api.ActionResultPayload:
		add("tool name", p.ToolName)
		add("status", p.Status)
	case api.ApprovalRequestedPayload:
		add("tool name", p.ToolName)
	case api.ApprovalResolvedPayload:
		add("tool name", p.ToolName)
		add("resolution", p.Resolution)
		add("status", string(p.Status))
		add("resolved by", p.ResolvedBy)
	case api.ApprovalInvalidatedPayload:
		add("cause", p.Cause)
	case api.CircuitBreakerPayload:
		add("tool name", p.ToolName)
		add("reason code", p.ReasonCode)
	case api.RunCompletedPayload:
		add("failure reason", p.FailureReason)
	case api.RunFailedPayload:
		add("failure reason", p.FailureReason)
	case api.BrowserGrantCreatedPayload:
		add("site", p.Origin+p.PathPrefix)
		add("budget", strconv.Itoa(p.Budget))
		add("created by", p.CreatedBy)
	case api.BrowserGrantUsedPayload:
		add("grant", p.GrantID)
		add("uses", strconv.Itoa(p.Uses)+" of "+strconv.Itoa(p.Budget))
	case api.BrowserGrantRevokedPayload:
		add("grant", p.GrantID)
		add("revoked by", p.RevokedBy)
	}
	return strings.Join(parts, " · ")
}

// durationText is a latency as a human reads it.
func durationText(d time.Duration) string {
	switch {
	case d <= 0:
		return "–"
	case d < time.Minute:
		return d.Round(100 * time.Millisecond).String()
	default:
		return d.Round(time.Second).String()
	}
}

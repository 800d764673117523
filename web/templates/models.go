// Package templates holds the console's templ components. Each component
// takes a view model from this file, built by plain functions in handlers;
// components never call services, and a page and its HTMX fragment are the
// same component.
package templates

import (
	"net/url"
	"strconv"
)

// Page is the chrome every full page shares.
type Page struct {
	Title   string // the page's own name; "" for the queue
	Pending string // pending count ("3", "50+"); "" where not counted
	User    string // display name; "" when signed out
	CSRF    string // form token for POST forms
	Nav     string // active navigation item: queue, history, overview, policy
	Flash   Flash
	// Partial renders only the page's content, for an HTMX request that
	// swaps part of a page already shown.
	Partial bool
}

// DocumentTitle is the <title> text: the pending count first, so a
// background tab shows it.
func (p Page) DocumentTitle() string {
	t := "Gatehouse"
	if p.Title != "" {
		t = p.Title + " · Gatehouse"
	}
	if p.Pending != "" && p.Pending != "0" {
		t = "(" + p.Pending + ") " + t
	}
	return t
}

// Flash is a one-time message after a redirect (resolve without JavaScript,
// sign-in).
type Flash struct {
	Kind string // ok, warn, error
	Text string
}

// Arg is one redacted argument as a card shows it.
type Arg struct {
	Name  string
	Value string // redacted, rendered by visible (never as HTML)
	Long  bool   // collapsed in a <details> with Short as its summary
	Short string // first characters of Value for the collapsed summary
	// Hidden counts the characters cut from Value for length: the card
	// says so and links to the detail page, which shows them.
	Hidden int
}

// HiddenText says how much of the value is not shown.
func (a Arg) HiddenText() string {
	if a.Hidden == 1 {
		return "1 more character not shown"
	}
	return strconv.Itoa(a.Hidden) + " more characters not shown"
}

// Digest is the SHA-256 of an argument that was truncated in the view.
type Digest struct {
	Name   string
	SHA256 string
}

// Card is one approval in the queue, the history or the detail page.
type Card struct {
	ID      string
	Summary string
	// SummaryChars is set when the summary is long: the card clamps it to
	// a few lines and offers it whole in a <details>.
	SummaryChars int
	// Whole shows everything unclamped: the detail page.
	Whole        bool
	Tool         string
	Risk         string
	RiskRank     int
	SideEffect   string
	RunID        string
	SessionID    string
	Status       string // pending, approved, denied, expired, cancelled
	CreatedAt    string // RFC 3339, orders live-inserted cards
	ExpiresAt    string // RFC 3339
	ExpiresIn    string // "in 3h 59m"; "" once resolved
	PolicyReason string
	Arguments    []Arg
	Digests      []Digest
	// Outcome tells the viewer plainly what happened: "Approved by you",
	// "Already denied by bob at 14:02", "Expired at 09:10".
	Outcome     string
	OutcomeKind string // ok, bad, warn
	ResolvedBy  string
	ResolvedAt  string
	Reason      string // the resolver's reason
	CSRF        string
	Back        string // where a resolve without JavaScript returns to
	New         bool   // arrived by live update; placed in queue order by console.js
	OOB         bool   // replaces the card of the same id out of band (resolved elsewhere)
}

// LongSummary reports whether the card clamps the summary.
func (c Card) LongSummary() bool { return c.SummaryChars > 0 && !c.Whole }

// SummaryMoreText labels the control that shows a clamped summary whole.
func (c Card) SummaryMoreText() string {
	return "Show the whole summary (" + strconv.Itoa(c.SummaryChars) + " characters)"
}

// DialogSummary is the summary as the confirm dialog's plain text: markers
// inline, since a dialog takes no markup, and short.
func (c Card) DialogSummary() string {
	s := []rune(VisibleText(c.Summary))
	if len(s) > dialogSummaryChars {
		return string(s[:dialogSummaryChars]) + "…"
	}
	return string(s)
}

const dialogSummaryChars = 120

// DetailURL is the approval's own page.
func (c Card) DetailURL() string { return "/approvals/" + c.ID }

// WholeValuesURL is the detail page's arguments, shown whole.
func (c Card) WholeValuesURL() string { return c.DetailURL() + "#arguments" }

// ResolveURL is where the approve/deny form posts.
func (c Card) ResolveURL() string { return "/approvals/" + c.ID + "/resolve" }

// RunURL is the page of the approval's run.
func (c Card) RunURL() string { return "/runs/" + c.RunID }

// DOMID is the card element's id, the target of in-place swaps.
func (c Card) DOMID() string { return "card-" + c.ID }

// Pending reports whether the card still awaits a decision.
func (c Card) Pending() bool { return c.Status == "pending" }

// QueuePage is the pending queue.
type QueuePage struct {
	Page
	Cards   []Card
	MoreURL string // keyset link to the next page; "" on the last page
	Poll    Poll
}

// Poll is the live-update poller: it asks for events after the watermark.
type Poll struct {
	After string // an event cursor
}

// URL is the poller's request path.
func (p Poll) URL() string { return "/queue/updates?after=" + url.QueryEscape(p.After) }

// QueueUpdate is the poll answer: new cards and the new count, swapped out
// of band, plus a fresh poller carrying the new watermark.
type QueueUpdate struct {
	Cards    []Card // new pending cards
	Resolved []Card // cards resolved elsewhere since the watermark
	Pending  string
	Poll     Poll
}

// Event is one line of a run's timeline.
type Event struct {
	ID   int64
	At   string // display time
	Type string
	Text string
}

// DetailPage is one approval with its run's timeline, which is shown
// only to a viewer who may read runs (run.read).
type DetailPage struct {
	Page
	Card          Card
	PolicyVersion string
	ShowTimeline  bool
	Timeline      []Event
}

// HistoryFilter is the history form's current values.
type HistoryFilter struct {
	Status     string
	ResolvedBy string
	Risk       string
	Since      string // yyyy-mm-dd
	Until      string // yyyy-mm-dd
}

// HistoryPage lists resolved approvals.
type HistoryPage struct {
	Page
	Filter  HistoryFilter
	Rows    []Card
	MoreURL string
}

// InvocationRow is one invocation on the run page.
type InvocationRow struct {
	ID         string
	Step       int
	Tool       string
	Summary    string
	Status     string
	Decision   string
	ReasonCode string
	Risk       string
	ApprovalID string
	At         string
}

// ApprovalURL is the page of the invocation's approval, if any.
func (r InvocationRow) ApprovalURL() string { return "/approvals/" + r.ApprovalID }

// RunPage is one run: its invocations, decisions and events.
type RunPage struct {
	Page
	ID            string
	Status        string
	FailureReason string
	AgentID       string
	AgentVersion  string
	SessionID     string
	Principal     string
	PolicyProfile string
	CreatedAt     string
	Invocations   []InvocationRow
	Timeline      []Event
}

// MatrixRow is one row of the active profile.
type MatrixRow struct {
	ID        string
	Subject   string // side effect (and risk) or tool name
	Condition string
	Decision  string
	Otherwise string
}

// ToolRow is one catalog entry with its effective decision.
type ToolRow struct {
	Name       string
	SideEffect string
	Risk       string
	Scopes     string
	Decision   string
	Reason     string
}

// PolicyPage shows what is loaded.
type PolicyPage struct {
	Page
	PolicyVersion string
	Profile       string
	Profiles      []string
	Matrix        []MatrixRow
	Hardline      []string
	Tools         []ToolRow
	MCPTools      []MCPToolRow
}

// MCPToolRow is one tool an MCP upstream lists, or one the operator
// classified: the upstream's own annotations are hints for whoever
// classifies it, never an input of a decision.
type MCPToolRow struct {
	Upstream    string
	Tool        string // the upstream's name
	CatalogName string // "" when unclassified
	Status      string // classified | unclassified (hidden) | classified, not listed
	Hints       string // readOnlyHint, destructiveHint... as the upstream states them
}

// Bar is one bar of a small chart.
type Bar struct {
	Label string
	Value int
}

// Chart is a bar chart drawn as inline SVG.
type Chart struct {
	Title string
	Kind  string // "", bad, warn: the bar colour
	Bars  []Bar
	Total int
}

// OverviewPage is the dashboard.
type OverviewPage struct {
	Page
	PendingByRisk []Bar // critical first
	LatencyP50    string
	LatencyP95    string
	ResolvedDay   int
	Charts        []Chart
}

// LoginPage is the sign-in form.
type LoginPage struct {
	Page
	UserID string
	Error  string
	Next   string
}

// ErrorPage is a console error.
type ErrorPage struct {
	Page
	Status  int
	Message string
}

// Rect is one bar's geometry in a chart's 0 0 240 60 view box.
type Rect struct {
	X, Y, W, H string
	Title      string
}

// Rects scales the bars to the tallest one; an all-zero chart draws
// hairlines so the time axis stays visible.
func (c Chart) Rects() []Rect {
	const width, height = 240.0, 60.0
	if len(c.Bars) == 0 {
		return nil
	}
	maxV := 0
	for _, b := range c.Bars {
		maxV = max(maxV, b.Value)
	}
	step := width / float64(len(c.Bars))
	out := make([]Rect, len(c.Bars))
	for i, b := range c.Bars {
		h := 1.0
		if maxV > 0 && b.Value > 0 {
			h = max(h, height*float64(b.Value)/float64(maxV))
		}
		out[i] = Rect{
			X:     strconv.FormatFloat(float64(i)*step+1, 'f', 1, 64),
			Y:     strconv.FormatFloat(height-h, 'f', 1, 64),
			W:     strconv.FormatFloat(step-2, 'f', 1, 64),
			H:     strconv.FormatFloat(h, 'f', 1, 64),
			Title: b.Label + ": " + strconv.Itoa(b.Value),
		}
	}
	return out
}

// shortID keeps the first block of a UUID: enough to tell runs apart on a
// phone, with the full id in the link.
func shortID(id string) string {
	if len(id) > 8 {
		return id[:8]
	}
	return id
}

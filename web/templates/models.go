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
	Nav     string // active navigation item: queue, history, overview, policy, notifications
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
	ArgDisplay
}

// ArgFormat is how an argument's value is shown to a human.
type ArgFormat string

// Argument formats (issue 10, part A).
const (
	FormatPlain      ArgFormat = ""
	FormatMoney      ArgFormat = "money"      // Money above the raw minor units
	FormatURL        ArgFormat = "url"        // the URL's parts, its host emphasized
	FormatRecipients ArgFormat = "recipients" // one address a line, its domain emphasized
	FormatID         ArgFormat = "id"         // demoted: an identifier to compare, not to read
)

// ArgDisplay is the card-content part of an argument: its format, the
// trust label of its value, and what the formatter made of it.
type ArgDisplay struct {
	Format     ArgFormat
	Money      string // "€12.50"; the raw value stays in Value
	URL        URLParts
	Recipients []Recipient
	// Flag says why a value that should be a URL or an address list is
	// shown raw: it did not parse as one.
	Flag string
	// Trust is the argument's trust label when it is not the user's or
	// the platform's; Untrusted marks content that cannot authorize
	// (memory, knowledge, external).
	Trust     string
	Untrusted bool
}

// FormatName names the format for the element's class.
func (d ArgDisplay) FormatName() string {
	if d.Format == FormatPlain {
		return "plain"
	}
	return string(d.Format)
}

// TrustText says where a labelled value came from.
func (d ArgDisplay) TrustText() string {
	switch d.Trust {
	case "external_untrusted":
		return "from external content"
	case "memory":
		return "from memory"
	case "knowledge":
		return "from retrieved knowledge"
	case "internal_tool":
		return "from a tool's output"
	}
	return "from " + d.Trust
}

// URLParts is a URL split for display: the host is what a reviewer checks.
type URLParts struct {
	Scheme   string // "https://"
	UserInfo string // "user@", which a browser does not treat as the host
	Host     string // host and port
	Rest     string // path, query and fragment
}

// Recipient is one address of an address list.
type Recipient struct {
	Name   string
	Local  string
	Domain string
}

// Before is the address up to its domain: `Ann <ann@` or `ann@`.
func (r Recipient) Before() string {
	if r.Name != "" {
		return r.Name + " <" + r.Local + "@"
	}
	return r.Local + "@"
}

// After closes a named address.
func (r Recipient) After() string {
	if r.Name != "" {
		return ">"
	}
	return ""
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

// Short is the digest's first characters: enough to compare at a
// glance; the whole digest is one click away and in the title.
func (d Digest) Short() string {
	if len(d.SHA256) > 12 {
		return d.SHA256[:12] + "…"
	}
	return d.SHA256
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

	// Triage (issue 10, part B).
	AgentID string
	// ArgumentsHash is the SHA-256 of the normalized arguments: the resolve
	// and batch forms carry it so a resolution binds to what was shown.
	ArgumentsHash string
	CanResolve    bool   // the viewer holds approval.resolve: show the buttons
	CanReadRun    bool   // the viewer holds run.read: link the run
	Urgency       string // "", soon, urgent: how close the expiry is
	ResolvedAtISO string // RFC 3339: console.js shows it in the viewer's zone
	// Selectable offers the card to the queue's batch form: pending,
	// resolvable by the viewer, and not critical.
	Selectable bool
	// StepUp is the step-up a critical approval needs (issue 13).
	StepUp StepUp
	CardContent

	// Quorum counts the approvals of an action that needs several
	// approvers (issue 13): "1 of 2 approvals, by alice"; "" when one
	// suffices.
	Quorum string

	TaskGrantCard
}

// CardContent is what a reviewer decides from beyond the action itself
// (issue 10, part A): why in words, and where the request came from.
type CardContent struct {
	// ReasonSentence is the reason code in words; Explanation is the
	// engine's own sentence, naming the rule (PolicyReason stays the code,
	// demoted, for operators).
	ReasonSentence string
	Explanation    string
	// Banner says the action was shaped by content that cannot authorize
	// it; UntrustedArgs counts the arguments marked so.
	Banner        string
	OriginTrust   string
	UntrustedArgs int
	// Signals are what the advisory layer saw in an action it escalated.
	Signals []Signal
	// Identical is a one-line hint that the same call is pending from
	// other runs; "" when it is not (or not looked up: the queue).
	Identical string
}

// UntrustedNote is the line under a card's banner, or instead of it when
// the origin may authorize but some arguments came from content that
// cannot.
func (c CardContent) UntrustedNote() string {
	switch c.UntrustedArgs {
	case 0:
		return ""
	case 1:
		return "1 argument came from content that cannot authorize anything: it is marked below."
	}
	return strconv.Itoa(c.UntrustedArgs) + " arguments came from content that cannot authorize anything: they are marked below."
}

// Critical reports whether approving the card needs the second,
// deliberate confirmation.
func (c Card) Critical() bool { return c.Risk == "critical" }

// StepUpURL is where this card sends a stale session to re-authenticate.
func (c Card) StepUpURL() string { return StepUpURL(c.ID) }

// NeedsStepUp reports whether the viewer must re-authenticate before
// approving this card.
func (c Card) NeedsStepUp() bool { return c.Critical() && c.StepUp.Stale }

// BatchValue is what the batch form posts for the card: its id and the
// hash of the arguments the reviewer saw.
func (c Card) BatchValue() string { return c.ID + ":" + c.ArgumentsHash }

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

	// Triage (issue 10, part B).
	View       string // ViewCards or ViewList
	Risk       string // the risk filter ("" for every risk)
	Expiring   []Card // pending approvals about to expire, soonest first
	CanResolve bool   // the viewer may resolve: batch selection is offered
}

// Poll is the live-update poller: it asks for events after the watermark.
type Poll struct {
	After string // an event cursor
	View  string // the queue's view: new approvals arrive as cards or rows
}

// URL is the poller's request path.
func (p Poll) URL() string {
	u := "/queue/updates?after=" + url.QueryEscape(p.After)
	if p.View == ViewList {
		u += "&view=" + ViewList
	}
	return u
}

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

	Context DetailContext
}

// DetailContext is what the detail page shows around an approval, not on
// its card (issue 10, part A): who asks, the run so far, the same call
// elsewhere.
type DetailContext struct {
	AgentID      string
	AgentVersion string
	Principal    string // on whose behalf the run acts
	Step         int
	// RunShown: the viewer holds run.read and sees the run's steps.
	RunShown  bool
	Steps     []StepRow // the run's steps before this one, oldest first
	MoreSteps bool      // earlier steps were left out (the run page has them)
	Denials   []StepRow // denials of the same call in this run before this one
	// Identical are the same call's pending approvals from other runs;
	// IdenticalText says it in a sentence.
	Identical     []IdenticalRow
	IdenticalText string
}

// StepRow is one earlier step of the run.
type StepRow struct {
	Step        int
	Tool        string
	Summary     string
	Outcome     string // "allowed", "denied", "waiting for approval", ...
	OutcomeKind string // ok, bad, warn
	Reason      string // the reason in words
	ReasonCode  string
	At          string
	ApprovalID  string
}

// ApprovalURL is the page of the step's approval, if any.
func (r StepRow) ApprovalURL() string { return "/approvals/" + r.ApprovalID }

// IdenticalRow is one identical request pending from another run.
type IdenticalRow struct {
	ID    string
	RunID string
	When  string // "2 minutes before this one"
}

// URL is the identical request's own page.
func (r IdenticalRow) URL() string { return "/approvals/" + r.ID }

// HistoryFilter is the history form's current values.
type HistoryFilter struct {
	Status     string
	ResolvedBy string
	Risk       string
	Since      string // yyyy-mm-dd
	Until      string // yyyy-mm-dd
	Text       string // search in the summary and tool name
	Tool       string
	Agent      string
}

// HistoryPage lists resolved approvals.
type HistoryPage struct {
	Page
	Filter  HistoryFilter
	Rows    []Card
	MoreURL string
	// Query is the filter as a query string ("" for none): the export links
	// carry it, so an export holds what the page shows.
	Query string
}

// ExportURL is the export of the filtered history in format (csv, json).
func (m HistoryPage) ExportURL(format string) string {
	u := "/history/export." + format
	if m.Query != "" {
		u += "?" + m.Query
	}
	return u
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
	// TaskGrantID is the browser task grant that authorized it, if any.
	TaskGrantID string
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
	CanCancel     bool // the viewer holds run.cancel and the run can still end
	// Grants are the session's browser task grants, shown to a viewer
	// holding browser.grant.read; CanRevoke when it holds
	// browser.grant.write.
	Grants     []GrantRow
	ShowGrants bool
	CanRevoke  bool
	// Consents are the session's owner consents; CanConsent shows the
	// form to record one (the viewer holds approval.resolve).
	Consents   []ConsentRow
	CanConsent bool
}

// ConsentURL is where the run page's consent form posts.
func (m RunPage) ConsentURL() string { return "/sessions/" + m.SessionID + "/consents" }

// ConsentRow is one owner consent of a run's session.
type ConsentRow struct {
	Tool       string
	Hash       string
	By         string
	Status     string // live, consumed, expired
	ExpiresAt  string
	ApprovalID string
}

// CancelURL is where the run page's cancel form posts.
func (m RunPage) CancelURL() string { return "/runs/" + m.ID + "/cancel" }

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
	// Advisory is the advisory layer's state for the default profile.
	Advisory AdvisoryView
	Profiles []string
	Matrix   []MatrixRow
	Tools    []ToolRow
	// HardlineRules are the hardline ids with what each blocks.
	HardlineRules []HardlineRow
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

// AdvisoryView is the advisory layer's state: off, observing or enforcing,
// and the composed advisor's version.
type AdvisoryView struct {
	Mode           string // off, observing, enforcing
	AdvisorVersion string
	// Unconfigured: asked for, but no advisor is configured.
	Unconfigured bool
}

// Text says the state in words.
func (a AdvisoryView) Text() string {
	switch {
	case a.Mode == "enforcing":
		return "Enforcing: the advisor can send allowed web reads to a person."
	case a.Mode == "observing":
		return "Observing: the advisor's verdicts are recorded and change no decision."
	case a.Unconfigured:
		return "Off: asked for, but no advisor is configured (AGENT_POLICY_ADVISOR_BASE_URL, AGENT_POLICY_ADVISOR_MODEL)."
	}
	return "Off."
}

// HardlineRow is one hardline rule in words.
type HardlineRow struct {
	ID          string
	Description string
}

// Bar is one bar of a small chart, or one tile of the overview.
type Bar struct {
	Label string
	Value int
	Href  string // the filtered queue or history it counts; "" for none
}

// Chart is a bar chart drawn as inline SVG.
type Chart struct {
	Title string
	Kind  string // "", bad, warn: the bar colour
	Bars  []Bar
	Total int
	// Axis labels the hours under the bars, oldest first, spread evenly.
	Axis []string
	Href string // the history the chart counts
}

// OverviewPage is the dashboard.
type OverviewPage struct {
	Page
	PendingByRisk []Bar // critical first
	LatencyP50    string
	LatencyP95    string
	ResolvedDay   int
	Charts        []Chart
	// The advisory layer's rates over the last day, as "12%" or "—" when
	// there is nothing to divide.
	AdvisoryEscalationRate   string
	AdvisoryJudged           int
	AdvisoryDisagreementRate string
	AdvisoryResolved         int
}

// LoginPage is the sign-in form.
type LoginPage struct {
	Page
	UserID string
	Error  string
	Next   string
	// PasswordLogin shows the password form; SSO the single sign-on
	// button (URL "" when none is configured).
	PasswordLogin bool
	SSO           SSOButton
}

// SSOButton starts a single sign-on at the identity provider.
type SSOButton struct {
	Label string
	URL   string
}

// StepUpPage asks a signed-in human to prove who they are again before
// approving a critical action.
type StepUpPage struct {
	Page
	Next     string
	Window   string // "10 minutes"
	Password bool   // offer the password form
	SSO      SSOButton
	Error    string
}

// StepUp is what a critical card tells its viewer before the click:
// approving needs an authentication within Window ("" when the step-up is
// off), and whether this session's is older (Stale: the card offers the
// re-authentication instead of the approve button).
type StepUp struct {
	Window string
	Stale  bool
}

// StepUpURL is where a stale session re-authenticates before it returns
// to the approval's card.
func StepUpURL(approvalID string) string {
	return "/reauth?" + url.Values{"next": {"/approvals/" + approvalID}}.Encode()
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

// Triage (issue 10, part B): the queue's views, the deny presets, and the
// batch resolution's report.

// The queue's two views: one card per approval, or one dense row.
const (
	ViewCards = "cards"
	ViewList  = "list"
)

// DenyPresets are the reasons the Deny panel offers; the server accepts
// only these as a preset (free text goes in the reason field).
var DenyPresets = []string{
	"Not what I asked for",
	"Wrong recipient or target",
	"Too risky right now",
	"Looks like a prompt injection",
}

// BatchItem is what happened to one approval of a batch resolution.
type BatchItem struct {
	ID      string
	Summary string
	Outcome string // "Approved by you", "Already denied by bob at 14:02", ...
	Kind    string // ok, bad, warn
	Applied bool   // this batch resolved it
}

// DetailURL is the approval's own page.
func (b BatchItem) DetailURL() string { return "/approvals/" + b.ID }

// BatchPage reports a batch resolution item by item.
type BatchPage struct {
	Page
	Items []BatchItem
}

// PushSettingsPage is "Notifications on this device": Web Push for the
// signed-in human.
type PushSettingsPage struct {
	Page
	// CanSubscribe: the human may resolve approvals, so a notification
	// leads somewhere they can act.
	CanSubscribe bool
	// VAPIDKey is the server's public key the browser subscribes with;
	// "" when the server has no Web Push configured.
	VAPIDKey string
	Devices  []PushDevice
}

// PushDevice is one browser the human enabled notifications in.
type PushDevice struct {
	Label string // the browser's User-Agent, shortened; untrusted
	Since string
	Last  string // last accepted push, "" if none yet
}

// Signal is one advisory signal that fired: its identifier and in words.
type Signal struct {
	ID   string
	Text string
}

// TaskGrantOffer is a browser.act card's offer (ADR-0129), as the approve
// for task button words it.
type TaskGrantOffer struct {
	Origin     string
	PathPrefix string
	Minutes    int
	Budget     int
}

// Scope is the site the offer covers, as one string.
func (o TaskGrantOffer) Scope() string { return o.Origin + o.PathPrefix }

// TaskGrantCard is what a browser.act card says about task grants: the
// offer, whether the viewer may accept it, the grant an approval created,
// and why the session's grant did not cover the action.
type TaskGrantCard struct {
	Offer      *TaskGrantOffer
	CanGrant   bool // the viewer holds browser.grant.write
	GrantID    string
	NotCovered string // a sentence; "" when there is nothing to say
}

// GrantRow is one browser task grant of a run's session.
type GrantRow struct {
	ID       string
	Scope    string // origin and path prefix
	Status   string // active, expired, exhausted, revoked
	Uses     int
	Budget   int
	UsesLeft int
	TimeLeft string // "29m 10s"; "" once it no longer applies
}

// RevokeURL is where the run page's revoke form posts.
func (g GrantRow) RevokeURL() string { return "/browser-grants/" + g.ID + "/revoke" }

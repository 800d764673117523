package service

// This file is the service's own contract, what callers see that is not on
// the wire: its errors, the outcome of a resolution, the filters, the
// console's overview and what the service is given (a principal directory,
// metrics). The wire types (runs, invocations, approvals, events) are in
// package api.

import (
	"errors"
	"time"

	"gatehouse/api"
	"gatehouse/engine"
)

// Domain errors. Handlers map them once: ErrNotFound 404 (also for other
// tenants' rows), ErrConflict 409, ErrStaleLease 409, ErrInvalid 400,
// ErrForbidden 403.
var (
	ErrNotFound   = errors.New("not found")
	ErrConflict   = errors.New("conflict")
	ErrStaleLease = errors.New("stale lease")
	ErrInvalid    = errors.New("invalid request")
	ErrForbidden  = errors.New("forbidden")
)

// InvalidError is an ErrInvalid with a message safe to show the caller.
type InvalidError struct{ Msg string }

func (e *InvalidError) Error() string { return e.Msg }
func (e *InvalidError) Is(target error) bool {
	return target == ErrInvalid
}

// ResolveResult distinguishes the three outcomes of a resolution.
type ResolveResult string

const (
	ResolveApplied  ResolveResult = "applied"  // this call changed the row
	ResolveSame     ResolveResult = "same"     // already resolved the same way: 200
	ResolveConflict ResolveResult = "conflict" // resolved differently (or expired/cancelled): 409
	// ResolveStale: still pending, but its arguments are not the ones the
	// resolver saw (ResolveApprovalSeen); nothing changed: 409.
	ResolveStale ResolveResult = "stale"
)

// ResolveOutcome is the result of ResolveApproval: the stored approval and
// which of the three outcomes happened.
type ResolveOutcome struct {
	Result   ResolveResult
	Approval api.Approval
}

// StatusResolved selects every final status of an approval (history).
const StatusResolved engine.ApprovalStatus = "resolved"

// ApprovalFilter selects approvals. Status "" means pending. Lists are in
// queue order (risk rank descending, then oldest first) for pending, and
// newest resolution first for history.
type ApprovalFilter struct {
	Status     engine.ApprovalStatus // "" = pending; StatusResolved is any final status
	RunID      string
	SessionID  string
	ResolvedBy string
	Risk       engine.RiskLevel
	Since      *time.Time
	Until      *time.Time
	Tool       string // exact tool name
	AgentID    string // the run's agent (final approvals only)
	Text       string // case-insensitive substring of summary or tool name (final approvals only)
	Limit      int    // default 50, max 200
	Cursor     string // opaque, from api.ApprovalPage.NextCursor
}

// EventFilter selects events after a watermark.
type EventFilter struct {
	After string // a cursor from api.Event.Cursor or a page's watermark; "" or "0" is the start
	RunID string
	Limit int           // default 100, max 500
	Wait  time.Duration // long-poll up to this long when nothing is there yet
}

// Overview is the console's small dashboard.
type Overview struct {
	PendingByRisk   map[engine.RiskLevel]int
	LatencyP50      time.Duration
	LatencyP95      time.Duration
	ExpiriesByHour  []int // last 24 hours, oldest first
	DenialsByHour   []int // last 24 hours, oldest first
	ApprovalsByHour []int
	ResolvedLastDay int
	At              time.Time // the end of the last hourly bucket
	// The advisory layer over the last 24 hours: actions it judged and
	// those it would escalate (observing or enforcing: the escalation
	// rate), and its escalations a human resolved and those approved (the
	// disagreement rate).
	AdvisoryJudged, AdvisoryEscalated             int
	AdvisoryEscalationsResolved, AdvisoryApproved int
}

// AdvisoryState is the advisory layer's state for runs of one profile.
type AdvisoryState struct {
	// Mode is off, observing or enforcing.
	Mode string
	// AdvisorVersion names the composed advisor's questions and
	// thresholds; "" when none is composed.
	AdvisorVersion string
	// Unconfigured: the profile or the observe flag asks for the layer
	// but no advisor is composed, so decisions are deterministic.
	Unconfigured bool
}

// PrincipalDirectory resolves the current principal behind a run at resume
// (revalidation compares against current scopes, not the stamp).
type PrincipalDirectory interface {
	Principal(tenantID, id string) (engine.Principal, bool)
}

// Metrics receives the counts the seed tracks. A nil Metrics records nothing.
type Metrics interface {
	ApprovalRequested(side engine.SideEffectClass, risk engine.RiskLevel)
	ApprovalResolved(status engine.ApprovalStatus, latency time.Duration)
	ApprovalExpired(risk engine.RiskLevel)
	Denied(reasonCode string)
	CircuitBreakerTripped()
	RevalidationVoided(cause string)
	// NotificationDelivered counts a settled try by channel and outcome
	// (delivered, skipped, retry, failed).
	NotificationDelivered(channel, outcome string, latency time.Duration)
	// NotificationBacklog is how many deliveries are waiting.
	NotificationBacklog(pending int)
	// AdvisoryConsulted counts an advisor's answer by verdict, and whether
	// the layer enforced it or only observed, with the call's latency.
	AdvisoryConsulted(verdict string, enforced bool, latency time.Duration)
	// AdvisoryAbstained counts an advisor that gave no verdict, by cause
	// (engine.Abstain*).
	AdvisoryAbstained(cause string)
}

package api

import (
	"encoding/json"
	"fmt"
	"time"

	"gatehouse/engine"
)

// Event is one row of the event log; ID is the watermark.
type Event struct {
	ID        int64           `json:"id"`
	TenantID  string          `json:"tenant_id"`
	RunID     string          `json:"run_id,omitempty"`
	Type      string          `json:"type"`
	Payload   json.RawMessage `json:"payload"`
	CreatedAt time.Time       `json:"created_at"`
	// Cursor is this event's position, to pass as `after`: opaque, and
	// ordered by commit, not by ID.
	Cursor string `json:"cursor"`
}

// Event types.
const (
	EventRunSubmitted         = "run.submitted"
	EventRunClaimed           = "run.claimed"
	EventRunQueued            = "run.queued"
	EventRunCompleted         = "run.completed"
	EventRunFailed            = "run.failed"
	EventRunCancelled         = "run.cancelled"
	EventActionAuthorized     = "action.authorized"
	EventActionDenied         = "action.denied"
	EventActionResult         = "action.result"
	EventApprovalRequested    = "approval.requested"
	EventApprovalResolved     = "approval.resolved"
	EventApprovalInvalidated  = "approval.invalidated"
	EventApprovalVoted        = "approval.voted"
	EventPolicyProfileLoaded  = "policy.profile.loaded"
	EventCircuitBreakerTipped = "run.circuit_breaker"
)

// EventPayload is the payload of one event type: the writer names the type
// by the payload it passes, so a type cannot be written with another's
// fields. Payloads carry classifications and decisions, never argument
// values.
type EventPayload interface {
	EventType() string
}

// RunSubmittedPayload is run.submitted.
type RunSubmittedPayload struct {
	AgentID       string `json:"agent_id"`
	AgentVersion  string `json:"agent_version"`
	PolicyProfile string `json:"policy_profile"`
}

// RunClaimedPayload is run.claimed.
type RunClaimedPayload struct {
	WorkerID     string `json:"worker_id"`
	FencingToken int64  `json:"fencing_token"`
}

// RunQueuedPayload is run.queued: a parked run with nothing left pending.
type RunQueuedPayload struct{}

// RunCompletedPayload is run.completed. FailureReason is always empty; it
// is there because run.completed and run.failed have always had the same
// shape.
type RunCompletedPayload struct {
	FailureReason string `json:"failure_reason"`
}

// RunFailedPayload is run.failed.
type RunFailedPayload struct {
	FailureReason string `json:"failure_reason"`
}

// RunCancelledPayload is run.cancelled.
type RunCancelledPayload struct {
	CancelledBy        string `json:"cancelled_by"`
	ApprovalsCancelled int    `json:"approvals_cancelled"`
}

// ActionAuthorizedPayload is action.authorized: by the gate, or at resume
// (ApprovalID set).
type ActionAuthorizedPayload struct {
	InvocationID  string                    `json:"invocation_id"`
	ToolName      string                    `json:"tool_name"`
	Decision      engine.PolicyDecisionType `json:"decision"`
	PolicyVersion string                    `json:"policy_version"`
	ApprovalID    string                    `json:"approval_id"`
	TaskGrantID   string                    `json:"task_grant_id,omitempty"`
}

// ActionDeniedPayload is action.denied. PolicyVersion is set when the gate
// denied; Cause when the deadline or a revalidation did.
type ActionDeniedPayload struct {
	InvocationID  string `json:"invocation_id"`
	ToolName      string `json:"tool_name"`
	ReasonCode    string `json:"reason_code"`
	PolicyVersion string `json:"policy_version,omitempty"`
	Cause         string `json:"cause,omitempty"`
}

// ActionResultPayload is action.result: the worker's reported outcome.
type ActionResultPayload struct {
	InvocationID string `json:"invocation_id"`
	ToolName     string `json:"tool_name"`
	Status       string `json:"status"`
}

// ApprovalRequestedPayload is approval.requested.
type ApprovalRequestedPayload struct {
	ApprovalID   string                 `json:"approval_id"`
	InvocationID string                 `json:"invocation_id"`
	ToolName     string                 `json:"tool_name"`
	Risk         engine.RiskLevel       `json:"risk"`
	SideEffect   engine.SideEffectClass `json:"side_effect"`
	ExpiresAt    time.Time              `json:"expires_at"`
}

// ApprovalResolvedPayload is approval.resolved, for every way an approval
// leaves pending. Resolution is the human's (approve_once, deny) or, when
// no human resolved it, the status (expired, cancelled), with no resolver.
type ApprovalResolvedPayload struct {
	ApprovalID   string                `json:"approval_id"`
	InvocationID string                `json:"invocation_id"`
	ToolName     string                `json:"tool_name"`
	Risk         engine.RiskLevel      `json:"risk"`
	Status       engine.ApprovalStatus `json:"status"`
	Resolution   string                `json:"resolution"`
	ResolvedBy   string                `json:"resolved_by"`
}

// ApprovalVotedPayload is approval.voted: an approve vote that left an
// approval with a quorum still pending. The vote that reaches the quorum,
// and any deny, are approval.resolved instead.
type ApprovalVotedPayload struct {
	ApprovalID   string           `json:"approval_id"`
	InvocationID string           `json:"invocation_id"`
	ToolName     string           `json:"tool_name"`
	Risk         engine.RiskLevel `json:"risk"`
	VotedBy      string           `json:"voted_by"`
	Approvals    int              `json:"approvals"`
	Quorum       int              `json:"quorum"`
}

// ApprovalInvalidatedPayload is approval.invalidated: an approval voided
// at resume.
type ApprovalInvalidatedPayload struct {
	ApprovalID   string `json:"approval_id"`
	InvocationID string `json:"invocation_id"`
	Cause        string `json:"cause"`
}

// PolicyProfileLoadedPayload is policy.profile.loaded, written under the
// system tenant by the replica that loaded the profile.
type PolicyProfileLoadedPayload struct {
	PolicyVersion string `json:"policy_version"`
	Profile       string `json:"profile"`
	LoadedBy      string `json:"loaded_by"`
}

// CircuitBreakerPayload is run.circuit_breaker: the denial that tripped it
// and how many identical ones there were.
type CircuitBreakerPayload struct {
	ToolName   string `json:"tool_name"`
	ReasonCode string `json:"reason_code"`
	Denials    int    `json:"denials"`
}

func (RunSubmittedPayload) EventType() string        { return EventRunSubmitted }
func (RunClaimedPayload) EventType() string          { return EventRunClaimed }
func (RunQueuedPayload) EventType() string           { return EventRunQueued }
func (RunCompletedPayload) EventType() string        { return EventRunCompleted }
func (RunFailedPayload) EventType() string           { return EventRunFailed }
func (RunCancelledPayload) EventType() string        { return EventRunCancelled }
func (ActionAuthorizedPayload) EventType() string    { return EventActionAuthorized }
func (ActionDeniedPayload) EventType() string        { return EventActionDenied }
func (ActionResultPayload) EventType() string        { return EventActionResult }
func (ApprovalRequestedPayload) EventType() string   { return EventApprovalRequested }
func (ApprovalResolvedPayload) EventType() string    { return EventApprovalResolved }
func (ApprovalInvalidatedPayload) EventType() string { return EventApprovalInvalidated }
func (ApprovalVotedPayload) EventType() string       { return EventApprovalVoted }
func (PolicyProfileLoadedPayload) EventType() string { return EventPolicyProfileLoaded }
func (CircuitBreakerPayload) EventType() string      { return EventCircuitBreakerTipped }

// payloadDecoders holds one decoder per event type, so a reader never
// re-describes a payload.
var payloadDecoders = map[string]func(json.RawMessage) (EventPayload, error){
	EventRunSubmitted:         decodeAs[RunSubmittedPayload],
	EventRunClaimed:           decodeAs[RunClaimedPayload],
	EventRunQueued:            decodeAs[RunQueuedPayload],
	EventRunCompleted:         decodeAs[RunCompletedPayload],
	EventRunFailed:            decodeAs[RunFailedPayload],
	EventRunCancelled:         decodeAs[RunCancelledPayload],
	EventActionAuthorized:     decodeAs[ActionAuthorizedPayload],
	EventActionDenied:         decodeAs[ActionDeniedPayload],
	EventActionResult:         decodeAs[ActionResultPayload],
	EventApprovalRequested:    decodeAs[ApprovalRequestedPayload],
	EventApprovalResolved:     decodeAs[ApprovalResolvedPayload],
	EventApprovalInvalidated:  decodeAs[ApprovalInvalidatedPayload],
	EventApprovalVoted:        decodeAs[ApprovalVotedPayload],
	EventPolicyProfileLoaded:  decodeAs[PolicyProfileLoadedPayload],
	EventCircuitBreakerTipped: decodeAs[CircuitBreakerPayload],
	EventBrowserGrantCreated:  decodeAs[BrowserGrantCreatedPayload],
	EventBrowserGrantUsed:     decodeAs[BrowserGrantUsedPayload],
	EventBrowserGrantRevoked:  decodeAs[BrowserGrantRevokedPayload],
	EventConsentRecorded:      decodeAs[ConsentRecordedPayload],
	EventConsentConsumed:      decodeAs[ConsentConsumedPayload],
}

func decodeAs[P EventPayload](raw json.RawMessage) (EventPayload, error) {
	var p P
	if err := json.Unmarshal(raw, &p); err != nil {
		return nil, err
	}
	return p, nil
}

// DecodePayload is the event's payload as its type's struct (a value, not
// a pointer): an error for a type this contract does not know or a payload
// that does not decode as its type's.
func (e Event) DecodePayload() (EventPayload, error) {
	decode, ok := payloadDecoders[e.Type]
	if !ok {
		return nil, fmt.Errorf("event %d: unknown type %q", e.ID, e.Type)
	}
	p, err := decode(e.Payload)
	if err != nil {
		return nil, fmt.Errorf("event %d: %s payload: %w", e.ID, e.Type, err)
	}
	return p, nil
}

// ApprovalResolution is how an approval left pending, as its
// approval.resolved event records it: all that a principal without
// approval.read (an agent waiting on its own approval) learns of it.
type ApprovalResolution struct {
	ID               string
	TenantID         string
	RunID            string
	ToolInvocationID string
	ToolName         string
	Risk             engine.RiskLevel
	Status           engine.ApprovalStatus
	// Resolution is the human's: approve_once or deny; empty when the
	// approval expired or was cancelled.
	Resolution engine.ApprovalResolutionType
	ResolvedBy string
	ResolvedAt time.Time // the event's time
}

// Resolution reads e as an approval's resolution; ok is false for any
// other event and for a payload that is not one.
func (e Event) Resolution() (ApprovalResolution, bool) {
	if e.Type != EventApprovalResolved {
		return ApprovalResolution{}, false
	}
	decoded, err := e.DecodePayload()
	if err != nil {
		return ApprovalResolution{}, false
	}
	p := decoded.(ApprovalResolvedPayload)
	if p.ApprovalID == "" || p.Status == "" {
		return ApprovalResolution{}, false
	}
	r := ApprovalResolution{
		ID: p.ApprovalID, TenantID: e.TenantID, RunID: e.RunID, ToolInvocationID: p.InvocationID,
		ToolName: p.ToolName, Risk: p.Risk, Status: p.Status, ResolvedBy: p.ResolvedBy, ResolvedAt: e.CreatedAt,
	}
	if p.Status == engine.ApprovalApproved || p.Status == engine.ApprovalDenied {
		r.Resolution = engine.ApprovalResolutionType(p.Resolution)
	}
	return r, true
}

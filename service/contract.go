package service

// This file fixes the service's public shape so handlers, commands and the
// console can be written against it while the implementation lands. Stub
// bodies live in stubs.go and are replaced file by file.

import (
	"encoding/json"
	"errors"
	"time"

	"gatehouse/engine"
)

// Run statuses.
const (
	RunQueued             = "QUEUED"
	RunRunning            = "RUNNING"
	RunWaitingForApproval = "WAITING_FOR_APPROVAL"
	RunCompleted          = "COMPLETED"
	RunFailed             = "FAILED"
	RunCancelled          = "CANCELLED"
)

// Invocation statuses.
const (
	InvocationProposed           = "PROPOSED"
	InvocationWaitingForApproval = "WAITING_FOR_APPROVAL"
	InvocationAuthorized         = "AUTHORIZED"
	InvocationDenied             = "DENIED"
	InvocationSucceeded          = "SUCCEEDED"
	InvocationFailed             = "FAILED"
	InvocationUncertain          = "UNCERTAIN"
	InvocationCancelled          = "CANCELLED"
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

// Run is a run as callers see it.
type Run struct {
	ID              string     `json:"id"`
	TenantID        string     `json:"tenant_id"`
	PrincipalID     string     `json:"principal_id"`
	SessionID       string     `json:"session_id"`
	AgentID         string     `json:"agent_id"`
	AgentVersion    string     `json:"agent_version"`
	PolicyProfile   string     `json:"policy_profile"`
	PrincipalScopes []string   `json:"principal_scopes"`
	Status          string     `json:"status"`
	FailureReason   string     `json:"failure_reason,omitempty"`
	Checkpoint      Checkpoint `json:"checkpoint"`
	Deadline        *time.Time `json:"deadline,omitempty"`
	WorkerID        string     `json:"worker_id,omitempty"`
	LeaseExpiresAt  *time.Time `json:"lease_expires_at,omitempty"`
	FencingToken    int64      `json:"fencing_token"`
	CreatedAt       time.Time  `json:"created_at"`
	UpdatedAt       time.Time  `json:"updated_at"`
}

// Checkpoint is what a resumed worker needs to know.
type Checkpoint struct {
	PendingApprovalIDs []string `json:"pending_approval_ids"`
	// ResumableInvocationIDs are invocations whose approvals were approved
	// and that await resume (revalidation).
	ResumableInvocationIDs []string `json:"resumable_invocation_ids,omitempty"`
	StepNumber             int      `json:"step_number"`
}

// Lease identifies the worker holding a run. Every worker call carries it.
type Lease struct {
	WorkerID     string `json:"worker_id"`
	FencingToken int64  `json:"fencing_token"`
}

// SubmitRunInput is POST /v1/runs.
type SubmitRunInput struct {
	SessionID     string     `json:"session_id"`
	AgentID       string     `json:"agent_id"`
	AgentVersion  string     `json:"agent_version"`
	Deadline      *time.Time `json:"deadline,omitempty"`
	PolicyProfile string     `json:"policy_profile,omitempty"`
}

// ClaimInput is POST /v1/runs/claim.
type ClaimInput struct {
	WorkerID     string `json:"worker_id"`
	LeaseSeconds int    `json:"lease_seconds"`
	RunID        string `json:"run_id,omitempty"`
}

// Invocation is a tool invocation (or other action) with its decision.
type Invocation struct {
	ID                      string                  `json:"id"`
	RunID                   string                  `json:"run_id"`
	TenantID                string                  `json:"tenant_id"`
	ActionID                string                  `json:"action_id"`
	Kind                    engine.ActionKind       `json:"kind"`
	ToolName                string                  `json:"tool_name"`
	ToolVersion             string                  `json:"tool_version,omitempty"`
	Summary                 string                  `json:"summary"`
	StepNumber              int                     `json:"step_number"`
	Status                  string                  `json:"status"`
	SideEffect              engine.SideEffectClass  `json:"side_effect"`
	Risk                    engine.RiskLevel        `json:"risk"`
	Idempotency             engine.IdempotencyClass `json:"idempotency_class"`
	OriginTrust             engine.TrustLevel       `json:"origin_trust"`
	NormalizedArgumentsHash string                  `json:"normalized_arguments_hash"`
	EffectiveArgumentsHash  string                  `json:"effective_arguments_hash,omitempty"`
	Decision                engine.PolicyDecision   `json:"decision"`
	PolicyVersion           string                  `json:"policy_version"`
	ApprovalID              string                  `json:"approval_id,omitempty"`
	CreatedAt               time.Time               `json:"created_at"`
	UpdatedAt               time.Time               `json:"updated_at"`
}

// WorkerDecision is a decision as the worker's routes show it. The
// explanation and the rule id name the profile and the rule that fired: a
// search gradient for a model reformulating until it gets through, so they
// stay in the audit log and the console (seed: "Denial is a message to the
// model").
type WorkerDecision struct {
	Decision      engine.PolicyDecisionType `json:"decision"`
	ReasonCode    string                    `json:"reason_code"`
	PolicyVersion string                    `json:"policy_version"`
	SideEffect    engine.SideEffectClass    `json:"side_effect"`
	Risk          engine.RiskLevel          `json:"risk"`
}

// WorkerInvocation is an invocation as the worker's routes return it: its
// Decision shadows the full one in JSON.
type WorkerInvocation struct {
	Invocation
	Decision WorkerDecision `json:"decision"`
}

// ForWorker is the invocation without what only the audit log and the
// console may show.
func (i Invocation) ForWorker() WorkerInvocation {
	d := i.Decision
	return WorkerInvocation{Invocation: i, Decision: WorkerDecision{
		Decision: d.Decision, ReasonCode: d.ReasonCode, PolicyVersion: d.PolicyVersion,
		SideEffect: d.SideEffect, Risk: d.Risk,
	}}
}

// ProposeResult is the answer to a proposal. Result is the denial tool
// result on deny; EffectiveArguments are set on allow_with_modifications.
type ProposeResult struct {
	Decision           engine.PolicyDecisionType `json:"decision"`
	InvocationID       string                    `json:"invocation_id"`
	ApprovalID         string                    `json:"approval_id,omitempty"`
	RunStatus          string                    `json:"run_status"`
	Result             *engine.DenialResult      `json:"result,omitempty"`
	EffectiveArguments map[string]any            `json:"effective_arguments,omitempty"`
}

// ResumeInput is what a worker re-presents at resume.
type ResumeInput struct {
	Arguments    map[string]any `json:"arguments"`
	AgentVersion string         `json:"agent_version"`
}

// ResumeResult says whether the invocation may execute now. Authorized is
// true only for the call that authorized it and for an idempotent replay of
// that call under the same lease. Otherwise InvocationStatus and
// IdempotencyClass tell the runtime where the invocation stands, so it
// applies the seed's crash-recovery rule (read_only and idempotent: retry;
// conditionally_idempotent: retry only with the idempotency key;
// non_idempotent: never retry, record uncertain).
type ResumeResult struct {
	Authorized       bool                    `json:"authorized"`
	InvocationID     string                  `json:"invocation_id"`
	RunStatus        string                  `json:"run_status"`
	InvocationStatus string                  `json:"invocation_status"`
	IdempotencyClass engine.IdempotencyClass `json:"idempotency_class"`
	Result           *engine.DenialResult    `json:"result,omitempty"`
}

// Approval is an approval request as every surface shows it: redacted
// arguments, digests of truncated values, never the rule that fired.
type Approval struct {
	ID                       string                        `json:"id"`
	TenantID                 string                        `json:"tenant_id"`
	PrincipalID              string                        `json:"principal_id"`
	RunID                    string                        `json:"run_id"`
	SessionID                string                        `json:"session_id"`
	ActionKind               engine.ActionKind             `json:"action_kind"`
	ActionID                 string                        `json:"action_id"`
	ToolInvocationID         string                        `json:"tool_invocation_id,omitempty"`
	ActionSummary            string                        `json:"action_summary"`
	ToolName                 string                        `json:"tool_name"`
	SideEffect               engine.SideEffectClass        `json:"side_effect"`
	Arguments                map[string]any                `json:"arguments"`
	ArgumentDigests          map[string]string             `json:"argument_digests"`
	Risk                     engine.RiskLevel              `json:"risk"`
	PolicyReason             string                        `json:"policy_reason"`
	PolicyVersion            string                        `json:"policy_version"`
	RevalidatedPolicyVersion string                        `json:"revalidated_policy_version,omitempty"`
	Status                   engine.ApprovalStatus         `json:"status"`
	Resolution               engine.ApprovalResolutionType `json:"resolution,omitempty"`
	ResolvedBy               string                        `json:"resolved_by,omitempty"`
	ResolvedAt               *time.Time                    `json:"resolved_at,omitempty"`
	ResolutionReason         string                        `json:"resolution_reason,omitempty"`
	ExpiresAt                time.Time                     `json:"expires_at"`
	CreatedAt                time.Time                     `json:"created_at"`
}

// ResolveResult distinguishes the three outcomes of a resolution.
type ResolveResult string

const (
	ResolveApplied  ResolveResult = "applied"  // this call changed the row
	ResolveSame     ResolveResult = "same"     // already resolved the same way: 200
	ResolveConflict ResolveResult = "conflict" // resolved differently (or expired/cancelled): 409
)

// ResolveOutcome is the result of ResolveApproval: the stored approval and
// which of the three outcomes happened.
type ResolveOutcome struct {
	Result   ResolveResult
	Approval Approval
}

// ApprovalFilter selects approvals. Status "" means pending. Lists are in
// queue order (risk rank descending, then oldest first) for pending, and
// newest resolution first for history.
type ApprovalFilter struct {
	Status     engine.ApprovalStatus // "" = pending; "resolved" is any final status
	RunID      string
	SessionID  string
	ResolvedBy string
	Risk       engine.RiskLevel
	Since      *time.Time
	Until      *time.Time
	Limit      int    // default 50, max 200
	Cursor     string // opaque, from ApprovalPage.NextCursor
}

// ApprovalPage is one page of approvals.
type ApprovalPage struct {
	Items      []Approval `json:"items"`
	NextCursor string     `json:"next_cursor,omitempty"`
}

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
	EventActionProposed       = "action.proposed"
	EventActionAuthorized     = "action.authorized"
	EventActionDenied         = "action.denied"
	EventActionResult         = "action.result"
	EventApprovalRequested    = "approval.requested"
	EventApprovalResolved     = "approval.resolved"
	EventApprovalInvalidated  = "approval.invalidated"
	EventPolicyProfileLoaded  = "policy.profile.loaded"
	EventCircuitBreakerTipped = "run.circuit_breaker"
)

// EventFilter selects events after a watermark.
type EventFilter struct {
	After string // a cursor from Event.Cursor or a page's watermark; "" or "0" is the start
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
}

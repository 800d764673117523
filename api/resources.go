package api

import (
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
	// TaskGrantID names the browser task grant that authorized it.
	TaskGrantID string `json:"task_grant_id,omitempty"`
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
	// TaskGrantID names the browser task grant that authorized the action
	// (decision allow) in place of an approval.
	TaskGrantID string `json:"task_grant_id,omitempty"`
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
	// AgentID is the agent of the approval's run, for triage.
	AgentID string `json:"agent_id"`
	// ArgumentsHash is the SHA-256 of the action's normalized arguments:
	// a reviewer's resolution can be bound to the arguments they saw.
	ArgumentsHash string `json:"arguments_hash"`

	// OriginTrust and ArgumentTrust are the trust labels the proposal
	// came with: where the request, and each argument's value, came from.
	// The console marks every argument whose content cannot authorize.
	OriginTrust   engine.TrustLevel            `json:"origin_trust,omitempty"`
	ArgumentTrust map[string]engine.TrustLevel `json:"argument_trust,omitempty"`
	// Quorum is how many distinct principals must approve the action (its
	// profile's approvals.quorum for the risk; 1 by default). Votes are
	// those cast so far on an approval whose quorum is above 1, in order;
	// it stays pending until the approve votes reach Quorum, and any deny
	// denies it.
	Quorum int            `json:"quorum"`
	Votes  []ApprovalVote `json:"votes"`

	// PolicyExplanation is the engine's sentence for the decision. It
	// names the profile rule that fired, so it stays off the wire (never
	// the rule that fired) and only the console shows it.
	PolicyExplanation string `json:"-"`

	// The browser task grant fields (ADR-0129), browser.act only: the
	// server's offer, the grant approve_for_task created, and why the
	// session's grants did not cover the action.
	TaskGrantOffer      *TaskGrantOffer `json:"task_grant_offer,omitempty"`
	TaskGrantID         string          `json:"task_grant_id,omitempty"`
	TaskGrantNotCovered string          `json:"task_grant_not_covered,omitempty"`
}

// ApprovalVote is one principal's vote on an approval with a quorum.
type ApprovalVote struct {
	PrincipalID string                        `json:"principal_id"`
	Resolution  engine.ApprovalResolutionType `json:"resolution"`
	Reason      string                        `json:"reason,omitempty"`
	VotedAt     time.Time                     `json:"voted_at"`
}

// ApprovalPage is one page of approvals.
type ApprovalPage struct {
	Items      []Approval `json:"items"`
	NextCursor string     `json:"next_cursor,omitempty"`
}

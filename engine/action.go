package engine

import "time"

// ExecutionTarget is where the runtime will run an action. A device is a
// target, never an authority: "it ran on my laptop" authorizes nothing.
type ExecutionTarget struct {
	Kind           string `json:"kind"` // in_process | sandbox | device | mcp_server | web_provider | browser_provider
	Isolated       bool   `json:"isolated"`
	NetworkEnabled bool   `json:"network_enabled"`
	DeviceID       string `json:"device_id,omitempty"`
	ServerID       string `json:"server_id,omitempty"`
}

// Target kinds the conditions read.
const (
	TargetInProcess       = "in_process"
	TargetSandbox         = "sandbox"
	TargetDevice          = "device"
	TargetMCPServer       = "mcp_server"
	TargetWebProvider     = "web_provider"
	TargetBrowserProvider = "browser_provider"
)

// TargetKinds lists the target kinds a request or catalog entry may name.
func TargetKinds() []string {
	return []string{TargetInProcess, TargetSandbox, TargetDevice, TargetMCPServer, TargetWebProvider, TargetBrowserProvider}
}

// ProposedAction is everything the engine may decide with. The classification
// fields (SideEffect, Risk, Idempotency, RequiredScopes) come from the tool
// catalog, never from the caller.
type ProposedAction struct {
	Kind       ActionKind `json:"kind"`
	ActionID   string     `json:"action_id"`
	TenantID   string     `json:"tenant_id"`
	SessionID  string     `json:"session_id"`
	RunID      string     `json:"run_id"`
	StepNumber int        `json:"step_number"`

	Name    string `json:"name"`
	Version string `json:"version,omitempty"`
	Summary string `json:"summary"`

	SideEffect     SideEffectClass  `json:"side_effect"`
	Risk           RiskLevel        `json:"risk"`
	Idempotency    IdempotencyClass `json:"idempotency"`
	RequiredScopes []string         `json:"required_scopes"`
	Roles          ArgumentRoles    `json:"argument_roles,omitzero"`

	Arguments               map[string]any        `json:"arguments"`
	NormalizedArgumentsHash string                `json:"normalized_arguments_hash"`
	ArgumentTrust           map[string]TrustLevel `json:"argument_trust"`
	OriginTrust             TrustLevel            `json:"origin_trust"`

	Target      ExecutionTarget `json:"target"`
	EvaluatedAt time.Time       `json:"evaluated_at"` // passed in; never read from a clock
}

// Principal is an authenticated caller. Roles are recorded for audit and
// never read as an authorization input.
type Principal struct {
	ID          string   `json:"id"`
	TenantID    string   `json:"tenant_id"`
	DisplayName string   `json:"display_name,omitempty"`
	Roles       []string `json:"roles,omitempty"`
	Scopes      []string `json:"scopes"`
	// PolicyProfiles are the profiles besides the server default that this
	// principal's runs may name (principals.yaml policy_profiles).
	PolicyProfiles []string `json:"policy_profiles,omitempty"`
	// AnyPolicyProfile lets runs name every loaded profile: AUTH_MODE=dev's
	// principal only.
	AnyPolicyProfile bool `json:"-"`
}

// RunSnapshot is what the engine knows of the run an action belongs to.
// PrincipalScopes is the stamp taken at submission, never re-derived.
type RunSnapshot struct {
	ID              string     `json:"id"`
	TenantID        string     `json:"tenant_id"`
	SessionID       string     `json:"session_id"`
	PrincipalID     string     `json:"principal_id"`
	PrincipalScopes []string   `json:"principal_scopes"`
	AgentVersion    string     `json:"agent_version"`
	PolicyProfile   string     `json:"policy_profile"`
	Deadline        *time.Time `json:"deadline,omitempty"`
}

// Layer names which part of the evaluation produced a decision.
type Layer string

const (
	LayerHardline   Layer = "hardline"
	LayerToolRule   Layer = "tool_rule"
	LayerMatrix     Layer = "matrix"
	LayerTrust      Layer = "trust"
	LayerValidation Layer = "validation"
	LayerScope      Layer = "scope"
	LayerAdvisory   Layer = "advisory"
	LayerRevalidate Layer = "revalidation"
	// LayerTaskGrant marks a class approval a browser task grant answered.
	LayerTaskGrant Layer = "task_grant"
)

// PolicyDecision is the engine's answer. Explanation and RuleID go to the
// audit log and the approval UI, never to the model (see DenialResult).
type PolicyDecision struct {
	Decision          PolicyDecisionType `json:"decision"`
	ReasonCode        string             `json:"reason_code"`
	PolicyVersion     string             `json:"policy_version"`
	Layer             Layer              `json:"layer"`
	RuleID            string             `json:"rule_id"`
	Explanation       string             `json:"explanation"`
	SideEffect        SideEffectClass    `json:"side_effect"`
	Risk              RiskLevel          `json:"risk"`
	ModifiedArguments map[string]any     `json:"modified_arguments,omitempty"`
}

// Reason codes are stable strings: the circuit breaker keys on them and the
// model reads them, so they never change meaning.
const (
	ReasonUnclassifiable        = "policy.unclassifiable_action"
	ReasonScopeMissing          = "policy.scope.missing"
	ReasonTrustEscalated        = "policy.trust.escalated"
	ReasonRevalidationEscalated = "policy.revalidation.escalated"
	ReasonAdvisoryEscalated     = "policy.advisory.escalated"
	ReasonApprovalDenied        = "approval.denied"
	ReasonApprovalExpired       = "approval.expired"
	ReasonApprovalInvalidated   = "approval.invalidated"
	ReasonApprovalCancelled     = "approval.cancelled"
)

// MatrixReason is the reason code of a side-effect row.
func MatrixReason(s SideEffectClass) string { return "policy.matrix." + string(s) }

// ToolRuleReason is the reason code of a tool-name-keyed entry.
func ToolRuleReason(tool string) string { return "policy.tool_rule." + tool }

package engine

// This file holds the engine's public types that the loader and the
// service build: profiles, hardline rules, tool specs and requests.

import (
	"context"
	"time"
)

// Conditions a profile row may name.
const (
	CondPathInsideWorkspace       = "path_inside_workspace"
	CondConstructedProviderTarget = "constructed_provider_target"
	CondTargetIsolated            = "target_isolated"
	// CondCommandOpaque holds when a command argument cannot be read
	// statically (see engine/shell.go); rows name it in approval_when.
	CondCommandOpaque = "command_opaque"
)

// ArgumentModification is what an ALLOW_WITH_MODIFICATIONS rule does to the
// arguments: set keys, then remove keys.
type ArgumentModification struct {
	Set    map[string]any `json:"set,omitempty" yaml:"set"`
	Remove []string       `json:"remove,omitempty" yaml:"remove"`
}

// ProfileRule is one row of a profile: a side-effect row, a (side_effect,
// risk) pair row, or a tool-name-keyed entry.
type ProfileRule struct {
	ID                     string             // "matrix.<side_effect>", "matrix.<side_effect>.<risk>" or "tool_rule.<name>"
	SideEffect             SideEffectClass    // empty for tool rules
	Risk                   RiskLevel          // optional; never alone
	Tool                   string             // tool rules only
	Condition              string             // optional
	Decision               PolicyDecisionType // when the condition holds (or there is none)
	Otherwise              PolicyDecisionType // when it does not
	ApprovalWhen           string             // optional condition that raises an allow to require_approval
	HumanConfirmsArguments bool               // tool rules only
	// ArgumentsMustAuthorize (tool rules only) tightens the overlay's
	// argument half as the origin half is: any argument labelled with a
	// level that cannot authorize (memory, knowledge, untrusted) escalates.
	ArgumentsMustAuthorize bool
	Modifications          *ArgumentModification // only with Decision allow_with_modifications
}

// Profile is a named rule set as loaded from {name}.yaml.
type Profile struct {
	Name                    string
	Rules                   []ProfileRule // side-effect and pair rows
	ToolRules               []ProfileRule
	RequireDistinctResolver bool                        // approvals.require_distinct_resolver
	AdvisoryEnabled         bool                        // advisory.enabled
	Expiry                  map[RiskLevel]time.Duration // optional overrides of the risk defaults
	// Quorum is approvals.quorum: how many distinct principals must
	// approve an action of a risk before it is approved (absent: one).
	Quorum map[RiskLevel]int
}

// HardlineExample is an action a hardline rule must block, or must permit.
type HardlineExample struct {
	SideEffect SideEffectClass `yaml:"side_effect"`
	Arguments  map[string]any  `yaml:"arguments"`
	Target     ExecutionTarget `yaml:"target"`
}

// HardlineRule is a never-bypassable pattern. Kind is one of side_effect,
// command, path_pattern, egress_host, credential_egress.
type HardlineRule struct {
	ID          string
	Kind        string
	AppliesTo   []SideEffectClass
	Pattern     string   // path_pattern, egress_host
	Intent      string   // command: what the parsed commands must not do
	Arguments   []string // arguments read; empty: every string value, recursively
	When        string   // optional condition on the target: HardlineWhenNetworkCapable
	MessageCode string   // policy.hardline.<code>
	Blocks      HardlineExample
	NearMiss    HardlineExample
}

// ToolSpec classifies a tool. A proposal never carries its own
// classification: it names a tool and the catalog supplies the rest.
type ToolSpec struct {
	Name           string
	Version        string
	Kind           ActionKind
	SideEffect     SideEffectClass
	Risk           RiskLevel
	Idempotency    IdempotencyClass
	RequiredScopes []string
	Target         string // fixed target kind, or empty: the request says
	MCPServerID    string
	Arguments      []string      // the closed list of argument names a proposal may carry
	Roles          ArgumentRoles // which of Arguments hold commands, paths and URLs
}

// ArgumentRoles names the arguments of a tool that hold commands, paths
// and URLs, so hardline rules and conditions read them whatever they are
// called.
type ArgumentRoles struct {
	Commands []string `json:"commands,omitempty"`
	Paths    []string `json:"paths,omitempty"`
	URLs     []string `json:"urls,omitempty"`
}

// ActionRequest is a proposal as an agent sends it.
type ActionRequest struct {
	ActionID      string                `json:"action_id"`
	Kind          ActionKind            `json:"kind"`
	Name          string                `json:"name"`
	Version       string                `json:"version,omitempty"`
	Summary       string                `json:"summary"`
	StepNumber    int32                 `json:"step_number"` // tool_invocations.step_number is integer
	Arguments     map[string]any        `json:"arguments"`
	ArgumentTrust map[string]TrustLevel `json:"argument_trust"`
	OriginTrust   TrustLevel            `json:"origin_trust"`
	Target        *ExecutionTarget      `json:"target,omitempty"`
}

// GateOutcome is the pure half of the single gate: the classified action,
// the decision, and what the service must persist.
type GateOutcome struct {
	Action                 ProposedAction
	Decision               PolicyDecision
	NormalizedArguments    []byte
	MissingScopes          []string
	EffectiveArguments     map[string]any // set only on allow_with_modifications
	EffectiveNormalized    []byte
	EffectiveArgumentsHash string
}

// AdvisoryVerdictType is what an advisor may say. There is no allow.
type AdvisoryVerdictType string

const (
	AdvisoryAbstain         AdvisoryVerdictType = "abstain"
	AdvisoryRequireApproval AdvisoryVerdictType = "require_approval"
	AdvisoryDeny            AdvisoryVerdictType = "deny"
)

// AdvisoryVerdict carries no content: the verdict, the signal identifiers
// that fired and the advisor's version.
type AdvisoryVerdict struct {
	Verdict        AdvisoryVerdictType
	Signals        []string
	AdvisorVersion string
}

// PolicyEngine is the port the pipeline evaluates through.
type PolicyEngine interface {
	Evaluate(ctx context.Context, a ProposedAction, p Principal, r RunSnapshot) (PolicyDecision, error)
}

// PolicyAdvisor sees the proposed action and nothing else: no ruleset, no
// profile, no deterministic decision.
type PolicyAdvisor interface {
	Advise(ctx context.Context, a ProposedAction) (AdvisoryVerdict, error)
}

// ApprovalSnapshot is what was true when an approval was requested.
type ApprovalSnapshot struct {
	ArgumentsHash   string
	PrincipalScopes []string // the requesting principal's scopes then
	AgentVersion    string
	PolicyVersion   string
	Action          ProposedAction
	Decision        PolicyDecision
}

// ResumeSnapshot is what is true at resume.
type ResumeSnapshot struct {
	ArgumentsHash   string   // of the arguments the worker re-presents
	PrincipalScopes []string // the current principal's scopes
	AgentVersion    string
	Principal       Principal
	Run             RunSnapshot
	Ruleset         *LoadedRuleset
	// Catalog is the operator's current tool catalog; nil skips the
	// reclassification check.
	Catalog *Catalog
	Now     time.Time
}

// Revalidation void causes, also the label of the void metric.
const (
	VoidArgumentsChanged    = "arguments_changed"
	VoidScopesNarrowed      = "scopes_narrowed"
	VoidAgentVersionChanged = "agent_version_changed"
	VoidPolicyEscalated     = "policy_escalated"
	VoidDeadlineExceeded    = "deadline_exceeded"
	VoidToolReclassified    = "tool_reclassified"
)

// RevalidationOutcome says whether a resumed invocation may execute.
type RevalidationOutcome struct {
	Authorized bool
	Cause      string // one of the Void* causes when not authorized
	ReasonCode string // approval.invalidated, policy.revalidation.escalated, ...
	// Invalidated is true for the three causes that void the approval
	// outright and emit approval.invalidated.
	Invalidated bool
	// Decision is the re-evaluation when the policy version changed.
	Decision *PolicyDecision
}

// DenialResult is the only thing the model sees of a denial. Its fields are
// an allowlist; the explanation and the rule never appear in it.
type DenialResult struct {
	Status      string `json:"status"`
	Action      string `json:"action"`
	ReasonCode  string `json:"reason_code"`
	Message     string `json:"message"`
	Retryable   bool   `json:"retryable"`
	Remediation string `json:"remediation"`
}

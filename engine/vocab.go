// Package engine is Gatehouse's pure policy domain: the vocabulary, the
// deterministic evaluator, the hardline check, the trust overlay, scopes, the
// denial result, argument normalization and redaction, revalidation and
// expiry. It imports only the standard library and never reads a clock: every
// instant it needs arrives as an argument, so a decision can be replayed.
package engine

// SideEffectClass is what an action does to the world. Each value is one row
// of the seed's default policy matrix (Section 9.2), in the matrix's order.
type SideEffectClass string

const (
	SideEffectNone             SideEffectClass = "none"              // Pure computation
	SideEffectWorkspaceRead    SideEffectClass = "workspace_read"    // Read isolated workspace
	SideEffectWorkspaceWrite   SideEffectClass = "workspace_write"   // Write isolated workspace
	SideEffectNetworkRead      SideEffectClass = "network_read"      // Read approved resource
	SideEffectCodeExecution    SideEffectClass = "code_execution"    // Execute code
	SideEffectPackageInstall   SideEffectClass = "package_install"   // Install packages
	SideEffectSandboxNetwork   SideEffectClass = "sandbox_network"   // Enable sandbox network
	SideEffectExternalMessage  SideEffectClass = "external_message"  // Send a message
	SideEffectExternalWrite    SideEffectClass = "external_write"    // Modify external data
	SideEffectExternalDelete   SideEffectClass = "external_delete"   // Delete external data
	SideEffectFinancial        SideEffectClass = "financial"         // Spend money
	SideEffectPublication      SideEffectClass = "publication"       // Publish content
	SideEffectCredentialAccess SideEffectClass = "credential_access" //nolint:gosec // Access raw credentials (a class name, not a credential)
	SideEffectHostAccess       SideEffectClass = "host_access"       // Access host filesystem
	SideEffectPrivileged       SideEffectClass = "privileged"        // Privileged container op
)

// SideEffectClasses lists every SideEffectClass in matrix order. Totality is
// checked against this list, so a new class without a profile row cannot load.
func SideEffectClasses() []SideEffectClass {
	return []SideEffectClass{
		SideEffectNone, SideEffectWorkspaceRead, SideEffectWorkspaceWrite,
		SideEffectNetworkRead, SideEffectCodeExecution, SideEffectPackageInstall,
		SideEffectSandboxNetwork, SideEffectExternalMessage, SideEffectExternalWrite,
		SideEffectExternalDelete, SideEffectFinancial, SideEffectPublication,
		SideEffectCredentialAccess, SideEffectHostAccess, SideEffectPrivileged,
	}
}

// Valid reports whether s is one of the fifteen classes.
func (s SideEffectClass) Valid() bool { return s.index() >= 0 }

// index is the class's position in matrix order, or -1. The evaluator keys
// its row tables on it, so lookups are array reads rather than map reads.
func (s SideEffectClass) index() int {
	switch s {
	case SideEffectNone:
		return 0
	case SideEffectWorkspaceRead:
		return 1
	case SideEffectWorkspaceWrite:
		return 2
	case SideEffectNetworkRead:
		return 3
	case SideEffectCodeExecution:
		return 4
	case SideEffectPackageInstall:
		return 5
	case SideEffectSandboxNetwork:
		return 6
	case SideEffectExternalMessage:
		return 7
	case SideEffectExternalWrite:
		return 8
	case SideEffectExternalDelete:
		return 9
	case SideEffectFinancial:
		return 10
	case SideEffectPublication:
		return 11
	case SideEffectCredentialAccess:
		return 12
	case SideEffectHostAccess:
		return 13
	case SideEffectPrivileged:
		return 14
	}
	return -1
}

// numSideEffects sizes the evaluator's row tables.
const numSideEffects = 15

// RiskLevel never selects a decision: it orders the queue, picks the default
// expiry and groups metrics.
type RiskLevel string

const (
	RiskLow      RiskLevel = "low"
	RiskMedium   RiskLevel = "medium"
	RiskHigh     RiskLevel = "high"
	RiskCritical RiskLevel = "critical"
)

// RiskLevels lists the risk levels from least to most consequential.
func RiskLevels() []RiskLevel { return []RiskLevel{RiskLow, RiskMedium, RiskHigh, RiskCritical} }

// Valid reports whether r is one of the four levels.
func (r RiskLevel) Valid() bool { return r.Rank() >= 0 }

// Rank orders risk for the approval queue: critical is 3, low is 0, and an
// unknown level ranks below low so it can never jump the queue.
func (r RiskLevel) Rank() int {
	switch r {
	case RiskLow:
		return 0
	case RiskMedium:
		return 1
	case RiskHigh:
		return 2
	case RiskCritical:
		return 3
	}
	return -1
}

// IdempotencyClass names Section 8.4's four crash-recovery behaviours.
type IdempotencyClass string

const (
	IdempotencyReadOnly                IdempotencyClass = "read_only"                // retry
	IdempotencyIdempotent              IdempotencyClass = "idempotent"               // retry
	IdempotencyConditionallyIdempotent IdempotencyClass = "conditionally_idempotent" // key required
	IdempotencyNonIdempotent           IdempotencyClass = "non_idempotent"           // never retry
)

// IdempotencyClasses lists the four classes.
func IdempotencyClasses() []IdempotencyClass {
	return []IdempotencyClass{IdempotencyReadOnly, IdempotencyIdempotent, IdempotencyConditionallyIdempotent, IdempotencyNonIdempotent}
}

// Valid reports whether c is one of the four classes.
func (c IdempotencyClass) Valid() bool {
	switch c {
	case IdempotencyReadOnly, IdempotencyIdempotent, IdempotencyConditionallyIdempotent, IdempotencyNonIdempotent:
		return true
	}
	return false
}

// ActionKind generalizes approval beyond tool calls.
type ActionKind string

const (
	ActionToolCall       ActionKind = "tool_call"
	ActionMemoryWrite    ActionKind = "memory_write"
	ActionSkillAuthoring ActionKind = "skill_authoring"
	ActionArtifactExport ActionKind = "artifact_export"
)

// ActionKinds lists the four kinds.
func ActionKinds() []ActionKind {
	return []ActionKind{ActionToolCall, ActionMemoryWrite, ActionSkillAuthoring, ActionArtifactExport}
}

// Valid reports whether k is one of the four kinds.
func (k ActionKind) Valid() bool {
	switch k {
	case ActionToolCall, ActionMemoryWrite, ActionSkillAuthoring, ActionArtifactExport:
		return true
	}
	return false
}

// HasToolInvocation reports whether an action of this kind has a tool
// invocation behind it (every tool call and every skill authoring).
func (k ActionKind) HasToolInvocation() bool {
	return k == ActionToolCall || k == ActionSkillAuthoring
}

// ApprovalStatus is the state of an approval request. EXPIRED and CANCELLED
// are reached without a resolution, by the reaper and by cancellation.
type ApprovalStatus string

const (
	ApprovalPending   ApprovalStatus = "pending"
	ApprovalApproved  ApprovalStatus = "approved"
	ApprovalDenied    ApprovalStatus = "denied"
	ApprovalExpired   ApprovalStatus = "expired"
	ApprovalCancelled ApprovalStatus = "cancelled"
)

// ApprovalStatuses lists the five statuses.
func ApprovalStatuses() []ApprovalStatus {
	return []ApprovalStatus{ApprovalPending, ApprovalApproved, ApprovalDenied, ApprovalExpired, ApprovalCancelled}
}

// Valid reports whether s is one of the five statuses.
func (s ApprovalStatus) Valid() bool { return contains(ApprovalStatuses(), s) }

// ApprovalResolutionType is what a human decided.
type ApprovalResolutionType string

const (
	ResolutionApproveOnce    ApprovalResolutionType = "approve_once"
	ResolutionApproveForTask ApprovalResolutionType = "approve_for_task"
	ResolutionDeny           ApprovalResolutionType = "deny"
)

// ApprovalResolutionTypes lists the three resolutions.
func ApprovalResolutionTypes() []ApprovalResolutionType {
	return []ApprovalResolutionType{ResolutionApproveOnce, ResolutionApproveForTask, ResolutionDeny}
}

// Valid reports whether r is one of the three resolutions.
func (r ApprovalResolutionType) Valid() bool { return contains(ApprovalResolutionTypes(), r) }

// Status is the approval status a resolution leads to.
func (r ApprovalResolutionType) Status() ApprovalStatus {
	if r == ResolutionDeny {
		return ApprovalDenied
	}
	return ApprovalApproved
}

// TrustLevel labels where content came from (Section 11.2).
type TrustLevel string

const (
	TrustPlatform             TrustLevel = "platform"
	TrustTrustedConfiguration TrustLevel = "trusted_configuration"
	TrustUser                 TrustLevel = "user"
	TrustInternalTool         TrustLevel = "internal_tool"
	TrustMemory               TrustLevel = "memory"
	TrustKnowledge            TrustLevel = "knowledge"
	TrustExternalUntrusted    TrustLevel = "external_untrusted"
)

// TrustLevels lists the seven labels from most to least trusted.
func TrustLevels() []TrustLevel {
	return []TrustLevel{TrustPlatform, TrustTrustedConfiguration, TrustUser, TrustInternalTool, TrustMemory, TrustKnowledge, TrustExternalUntrusted}
}

// Valid reports whether t is one of the seven labels.
func (t TrustLevel) Valid() bool {
	switch t {
	case TrustPlatform, TrustTrustedConfiguration, TrustUser, TrustInternalTool, TrustMemory, TrustKnowledge, TrustExternalUntrusted:
		return true
	}
	return false
}

// MayAuthorize reports whether content with this label can authorize
// anything: only platform configuration, trusted configuration and the user.
func (t TrustLevel) MayAuthorize() bool {
	return t == TrustPlatform || t == TrustTrustedConfiguration || t == TrustUser
}

// PolicyDecisionType is the engine's verdict, totally ordered by Rank.
type PolicyDecisionType string

const (
	DecisionAllow                  PolicyDecisionType = "allow"
	DecisionAllowWithModifications PolicyDecisionType = "allow_with_modifications"
	DecisionRequireApproval        PolicyDecisionType = "require_approval"
	DecisionDeny                   PolicyDecisionType = "deny"
)

// PolicyDecisionTypes lists the four decisions in rank order.
func PolicyDecisionTypes() []PolicyDecisionType {
	return []PolicyDecisionType{DecisionAllow, DecisionAllowWithModifications, DecisionRequireApproval, DecisionDeny}
}

// Valid reports whether d is one of the four decisions.
func (d PolicyDecisionType) Valid() bool {
	switch d {
	case DecisionAllow, DecisionAllowWithModifications, DecisionRequireApproval, DecisionDeny:
		return true
	}
	return false
}

// Rank is the restrictiveness of d: allow 0, modify 1, approve 2, deny 3. An
// unknown decision ranks as deny, so it can only ever tighten.
func (d PolicyDecisionType) Rank() int {
	switch d {
	case DecisionAllow:
		return 0
	case DecisionAllowWithModifications:
		return 1
	case DecisionRequireApproval:
		return 2
	}
	return 3
}

func contains[T comparable](list []T, v T) bool {
	for _, x := range list {
		if x == v {
			return true
		}
	}
	return false
}

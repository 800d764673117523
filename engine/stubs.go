package engine

// Stub bodies: each is replaced by its real implementation (and this file
// deleted) before anything lands. The signatures are the contract.

import (
	"errors"
	"time"
)

var errStub = errors.New("engine: not implemented")

// LoadedRuleset is an immutable, compiled profile plus hardline set. There
// is no setter and no reload; accessors return copies.
type LoadedRuleset struct {
	policyVersion string
	profileName   string
}

// NewLoadedRuleset validates and compiles a profile and the hardline set and
// freezes them. The bytes are what was read from disk: policy_version hashes
// exactly them.
func NewLoadedRuleset(p Profile, profileBytes []byte, hardline []HardlineRule, hardlineBytes []byte) (*LoadedRuleset, error) {
	return nil, errStub
}

// ComputePolicyVersion is {profile}@{sha256(profile)[:12]}+h{sha256(hardline)[:8]}.
func ComputePolicyVersion(name string, profileBytes, hardlineBytes []byte) string { return "" }

func (rs *LoadedRuleset) PolicyVersion() string         { return rs.policyVersion }
func (rs *LoadedRuleset) ProfileName() string           { return rs.profileName }
func (rs *LoadedRuleset) ProfileSHA256() string         { return "" }
func (rs *LoadedRuleset) HardlineSHA256() string        { return "" }
func (rs *LoadedRuleset) Profile() Profile              { return Profile{} }
func (rs *LoadedRuleset) Hardline() []HardlineRule      { return nil }
func (rs *LoadedRuleset) RuleCount() int                { return 0 }
func (rs *LoadedRuleset) RequireDistinctResolver() bool { return false }

// Catalog is the immutable tool catalog.
type Catalog struct{}

// NewCatalog validates specs (enums, scope grammar, MCP namespace, no
// duplicate names) and freezes them.
func NewCatalog(specs []ToolSpec) (*Catalog, error) { return nil, errStub }

// Lookup finds a tool by its exact, case-sensitive name.
func (c *Catalog) Lookup(name string) (ToolSpec, bool) { return ToolSpec{}, false }

// Tools lists the catalog in name order.
func (c *Catalog) Tools() []ToolSpec { return nil }

// EvaluateDeterministic is the pure evaluator: hardline, then the tool rule
// or side-effect row, then the trust overlay, combined by max.
func EvaluateDeterministic(a ProposedAction, p Principal, r RunSnapshot, rs *LoadedRuleset) PolicyDecision {
	return PolicyDecision{Decision: DecisionDeny, ReasonCode: ReasonUnclassifiable}
}

// Combine is max by rank.
func Combine(decisions ...PolicyDecision) PolicyDecision { return PolicyDecision{} }

// ApplyAdvice combines a deterministic decision with an advisory verdict; it
// can only raise the rank.
func ApplyAdvice(det PolicyDecision, v AdvisoryVerdict) PolicyDecision { return det }

// MissingScopes is required minus held, over exact strings, sorted.
func MissingScopes(required, held []string) []string { return nil }

// ScopeVocabulary is the closed list of 43 scope strings.
func ScopeVocabulary() []string { return nil }

// ValidScopeGrammar reports whether s is two or more [a-z][a-z0-9_]* segments joined by dots.
func ValidScopeGrammar(s string) bool { return false }

// ValidToolScope reports whether a catalog entry may require scope: one of
// the vocabulary, or mcp.{serverID}.* for a tool of that MCP server.
func ValidToolScope(scope, mcpServerID string) error { return errStub }

// NormalizeArguments returns the canonical JSON of args and its SHA-256 hex.
func NormalizeArguments(args map[string]any) ([]byte, string) { return nil, "" }

// RedactedView masks sensitive keys and credential-shaped values and
// truncates long strings; digests holds the SHA-256 of each top-level
// argument truncated for length.
func RedactedView(args map[string]any) (view map[string]any, digests map[string]string) {
	return nil, nil
}

// Gate is the pure half of the single gate: catalog lookup, scope check
// against the run's stamp, then the evaluator.
func Gate(req ActionRequest, cat *Catalog, run RunSnapshot, p Principal, rs *LoadedRuleset, now time.Time) GateOutcome {
	return GateOutcome{}
}

// Denial builds the denial result for a reason code; only
// policy.scope.missing names anything, and only the missing scopes.
func Denial(action, reasonCode string, missing []string) DenialResult { return DenialResult{} }

// Revalidate compares an approval's snapshot with the resume.
func Revalidate(req ApprovalSnapshot, now ResumeSnapshot) RevalidationOutcome {
	return RevalidationOutcome{}
}

// ApprovalExpiry is requestedAt plus the risk's default (or the profile's
// override), capped by the run deadline.
func ApprovalExpiry(risk RiskLevel, requestedAt time.Time, deadline *time.Time, overrides map[RiskLevel]time.Duration) time.Time {
	return requestedAt
}

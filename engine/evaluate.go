package engine

import (
	"context"
	"path"
	"strings"
)

// Explanations of validation failures: constants, so a denial on hostile
// input allocates nothing and echoes none of it.
const (
	explainNoRuleset     = "no ruleset is loaded"
	explainBadKind       = "action failed validation: unknown kind"
	explainBadName       = "action failed validation: empty name"
	explainBadSideEffect = "action failed validation: unknown side_effect"
	explainBadRisk       = "action failed validation: unknown risk"
	explainBadIdem       = "action failed validation: unknown idempotency"
	explainBadOrigin     = "action failed validation: unknown origin_trust"
	explainBadArgTrust   = "action failed validation: unknown argument trust label"
	explainBadHash       = "action failed validation: normalized_arguments_hash missing or malformed"
	explainBadTarget     = "action failed validation: unknown target kind"
	explainNoRow         = "the profile has no rule for this side_effect"
)

// EvaluateDeterministic is the pure evaluator: validation, then the hardline
// rules (a block short-circuits), then the tool rule for the exact name, else
// the (side_effect, risk) pair row, else the side-effect row, then the trust
// overlay, combined by max. It reads no clock and does no I/O; the principal
// and run are part of the signature so a rule could read them, and none does
// today. On the allow path it allocates nothing.
func EvaluateDeterministic(a ProposedAction, p Principal, r RunSnapshot, rs *LoadedRuleset) PolicyDecision {
	if rs == nil {
		return unclassifiable(&a, "", explainNoRuleset)
	}
	if msg := validateAction(&a); msg != "" {
		return unclassifiable(&a, rs.policyVersion, msg)
	}
	ci := a.SideEffect.index()
	var facts actionFacts
	for _, h := range rs.hardline[ci] {
		if h.blocks(&a, &facts) {
			return PolicyDecision{
				Decision:      DecisionDeny,
				ReasonCode:    h.messageCode,
				PolicyVersion: rs.policyVersion,
				Layer:         LayerHardline,
				RuleID:        h.id,
				Explanation:   h.explanation,
				SideEffect:    a.SideEffect,
				Risk:          a.Risk,
			}
		}
	}
	rule := rs.toolRules[a.Name]
	if rule == nil {
		rule = rs.pairRows[ci][a.Risk.Rank()]
	}
	if rule == nil {
		rule = rs.rows[ci]
	}
	if rule == nil {
		return unclassifiable(&a, rs.policyVersion, explainNoRow)
	}
	d := PolicyDecision{
		Decision:      rule.decision,
		ReasonCode:    rule.reason,
		PolicyVersion: rs.policyVersion,
		Layer:         rule.layer,
		RuleID:        rule.id,
		Explanation:   rule.explainHeld,
		SideEffect:    a.SideEffect,
		Risk:          a.Risk,
	}
	if rule.cond != condNone && !conditionHolds(rule.cond, &a, &facts) {
		d.Decision = rule.otherwise
		d.Explanation = rule.explainFailed
	}
	if rule.approvalWhen != condNone && d.Decision.Rank() < DecisionRequireApproval.Rank() && conditionHolds(rule.approvalWhen, &a, &facts) {
		d.Decision = DecisionRequireApproval
		d.Explanation = rule.explainApproval
		d.ModifiedArguments = nil
	}
	if d.Decision == DecisionAllowWithModifications {
		d.ModifiedArguments = applyModifications(a.Arguments, rule.mods)
	}
	if d.Decision.Rank() < DecisionRequireApproval.Rank() && !trustExempt(a.SideEffect) && tainted(&a, rule) {
		// The overlay is a max combination: REQUIRE_APPROVAL outranks both
		// allows, and the modifications go with the decision that lost.
		d.Decision = DecisionRequireApproval
		d.ReasonCode = ReasonTrustEscalated
		d.Layer = LayerTrust
		d.Explanation = rule.explainTrust
		d.ModifiedArguments = nil
	}
	return d
}

func unclassifiable(a *ProposedAction, version, explanation string) PolicyDecision {
	return PolicyDecision{
		Decision:      DecisionDeny,
		ReasonCode:    ReasonUnclassifiable,
		PolicyVersion: version,
		Layer:         LayerValidation,
		Explanation:   explanation,
		SideEffect:    a.SideEffect,
		Risk:          a.Risk,
	}
}

// validateAction returns why a is not a well-formed ProposedAction, or "".
func validateAction(a *ProposedAction) string {
	switch {
	case !a.Kind.Valid():
		return explainBadKind
	case a.Name == "":
		return explainBadName
	case !a.SideEffect.Valid():
		return explainBadSideEffect
	case !a.Risk.Valid():
		return explainBadRisk
	case !a.Idempotency.Valid():
		return explainBadIdem
	case !a.OriginTrust.Valid():
		return explainBadOrigin
	case !isSHA256Hex(a.NormalizedArgumentsHash):
		return explainBadHash
	case a.Target.Kind != "" && !validTargetKind(a.Target.Kind):
		return explainBadTarget
	}
	for _, t := range a.ArgumentTrust {
		if !t.Valid() {
			return explainBadArgTrust
		}
	}
	return ""
}

func isSHA256Hex(s string) bool {
	if len(s) != 64 {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

func validTargetKind(k string) bool {
	switch k {
	case TargetInProcess, TargetSandbox, TargetDevice, TargetMCPServer, TargetWebProvider, TargetBrowserProvider:
		return true
	}
	return false
}

func conditionHolds(c condition, a *ProposedAction, f *actionFacts) bool {
	switch c {
	case condPathInsideWorkspace:
		// Every path the action names must be inside the workspace: the
		// catalog's path arguments, or "path" for a tool that declares none.
		if len(a.Roles.Paths) == 0 {
			p, ok := a.Arguments["path"].(string)
			return ok && PathInsideWorkspace(p)
		}
		for _, name := range a.Roles.Paths {
			p, ok := a.Arguments[name].(string)
			if !ok || !PathInsideWorkspace(p) {
				return false
			}
		}
		return true
	case condCommandOpaque:
		return f.commands(a).opaque
	case condConstructedProviderTarget:
		switch a.Target.Kind {
		case TargetWebProvider, TargetBrowserProvider:
			return true
		case TargetMCPServer:
			return a.SideEffect == SideEffectNetworkRead && a.Idempotency == IdempotencyReadOnly
		}
		return false
	case condBoundedBrowserScroll:
		return boundedBrowserScroll(a)
	case condTargetIsolated:
		// Only a sandbox is an isolated execution target; the flag on any
		// other kind (in_process, device, ...) is a claim nothing backs.
		return a.Target.Kind == TargetSandbox && a.Target.Isolated
	}
	return false
}

// PathInsideWorkspace reports whether p names a file inside the workspace:
// relative, already clean (no "." or ".." segments, no doubled or trailing
// slash), not absolute, no home directory, no NUL or control bytes, no
// backslash (a Windows separator or an escape), no drive letter.
func PathInsideWorkspace(p string) bool {
	if p == "" || p == "." || p[0] == '/' || p[0] == '~' {
		return false
	}
	for i := 0; i < len(p); i++ {
		if c := p[i]; c < 0x20 || c == 0x7f || c == '\\' {
			return false
		}
	}
	if len(p) >= 2 && p[1] == ':' {
		return false
	}
	if path.Clean(p) != p {
		return false
	}
	return p != ".." && !strings.HasPrefix(p, "../")
}

// trustExempt lists the classes the trust overlay leaves alone: nothing
// leaves the workspace, or only an approved read does.
func trustExempt(s SideEffectClass) bool {
	return s == SideEffectNone || s == SideEffectWorkspaceRead || s == SideEffectNetworkRead
}

// tainted applies the trust overlay's two halves. For a matrix row: any
// external_untrusted argument or origin. For a tool rule the argument half
// is suppressed only when the tool shows its arguments to the human who
// completes it, and the origin half admits only origins that may authorize.
func tainted(a *ProposedAction, rule *compiledRule) bool {
	if rule.isToolRule {
		if !a.OriginTrust.MayAuthorize() {
			return true
		}
		if rule.hca {
			return false
		}
	} else if a.OriginTrust == TrustExternalUntrusted {
		return true
	}
	for _, t := range a.ArgumentTrust {
		if t == TrustExternalUntrusted || rule.strictArgs && !t.MayAuthorize() {
			return true
		}
	}
	return false
}

// applyModifications returns a new argument map: args with the rule's Set
// keys written, then its Remove keys deleted.
func applyModifications(args map[string]any, m *ArgumentModification) map[string]any {
	out := make(map[string]any, len(args)+len(m.Set))
	for k, v := range args {
		out[k] = v
	}
	for k, v := range m.Set {
		out[k] = deepCopy(v)
	}
	for _, k := range m.Remove {
		delete(out, k)
	}
	return out
}

// Combine is max by rank; on a tie the first decision wins. The winner is
// returned as is, so modifications survive only when the decision that
// carried them wins (and only on allow_with_modifications). No decisions at
// all is unclassifiable: there is nothing to allow with.
func Combine(decisions ...PolicyDecision) PolicyDecision {
	if len(decisions) == 0 {
		return PolicyDecision{Decision: DecisionDeny, ReasonCode: ReasonUnclassifiable, Layer: LayerValidation, Explanation: "no decision to combine"}
	}
	best := decisions[0]
	for _, d := range decisions[1:] {
		if d.Decision.Rank() > best.Decision.Rank() {
			best = d
		}
	}
	if best.Decision != DecisionAllowWithModifications {
		best.ModifiedArguments = nil
	}
	return best
}

// DeterministicEngine is the PolicyEngine over one frozen ruleset: the
// pipeline's recovery policy, and the primary engine when no advisor is
// composed.
type DeterministicEngine struct {
	Ruleset *LoadedRuleset
}

// Evaluate implements PolicyEngine. It never fails: an unclassifiable action
// is a DENY decision, not an error.
func (e DeterministicEngine) Evaluate(_ context.Context, a ProposedAction, p Principal, r RunSnapshot) (PolicyDecision, error) {
	return EvaluateDeterministic(a, p, r, e.Ruleset), nil
}

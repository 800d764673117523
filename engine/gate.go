package engine

import (
	"slices"
	"strings"
	"time"
)

// Gate is the pure half of the single gate: validate the request, look the
// tool up in the catalog (its classification is the catalog's, never the
// caller's), check the tool's scopes against the run's stamp (before the
// engine, so a missing scope is policy.scope.missing even where a hardline
// rule would also block), normalize and hash the arguments, then evaluate.
// On allow_with_modifications the effective arguments and their hash are
// filled in for the idempotency key.
func Gate(req ActionRequest, cat *Catalog, run RunSnapshot, p Principal, rs *LoadedRuleset, now time.Time) GateOutcome {
	version := ""
	if rs != nil {
		version = rs.policyVersion
	}
	action := proposedAction(req, run, now)
	normalized, hash, normErr := NormalizeArguments(action.Arguments)
	action.NormalizedArgumentsHash = hash
	out := GateOutcome{NormalizedArguments: normalized}

	spec, msg := admit(&req, &action, cat, normErr)
	out.Action = action
	if msg != "" {
		out.Decision = unclassifiable(&action, version, msg)
		return out
	}
	if missing := MissingScopes(spec.RequiredScopes, run.PrincipalScopes); len(missing) > 0 {
		out.MissingScopes = missing
		out.Decision = scopeDenial(&action, missing)
		return out
	}
	out.Decision = EvaluateDeterministic(action, p, run, rs)
	if out.Decision.Decision == DecisionAllowWithModifications {
		effective, effectiveHash, err := NormalizeArguments(out.Decision.ModifiedArguments)
		if err != nil {
			out.Decision = unclassifiable(&action, version, explainUnrepresentable)
			return out
		}
		out.EffectiveArguments = out.Decision.ModifiedArguments
		out.EffectiveNormalized, out.EffectiveArgumentsHash = effective, effectiveHash
	}
	return out
}

// proposedAction is the request as the engine reads it, before the catalog
// classifies it.
func proposedAction(req ActionRequest, run RunSnapshot, now time.Time) ProposedAction {
	action := ProposedAction{
		Kind:          req.Kind,
		ActionID:      req.ActionID,
		TenantID:      run.TenantID,
		SessionID:     run.SessionID,
		RunID:         run.ID,
		StepNumber:    int(req.StepNumber),
		Name:          req.Name,
		Version:       req.Version,
		Summary:       req.Summary,
		Arguments:     req.Arguments,
		ArgumentTrust: req.ArgumentTrust,
		OriginTrust:   req.OriginTrust,
		EvaluatedAt:   now,
	}
	if action.Arguments == nil {
		action.Arguments = map[string]any{}
	}
	if req.Target != nil {
		action.Target = *req.Target
	}
	return action
}

// admit validates the request and classifies action from the catalog. It
// returns why the action is unclassifiable, or "" and the tool's spec.
func admit(req *ActionRequest, action *ProposedAction, cat *Catalog, normErr error) (ToolSpec, string) {
	if msg := validateRequest(req); msg != "" {
		return ToolSpec{}, msg
	}
	if normErr != nil {
		// Arguments the hash cannot bind exactly could be swapped after
		// approval: refuse them rather than approve a lossy digest.
		return ToolSpec{}, explainUnrepresentable
	}
	spec, ok := cat.Lookup(req.Name)
	if !ok || spec.Kind != req.Kind || (req.Version != "" && req.Version != spec.Version) {
		return ToolSpec{}, "the action names no registered tool of its kind and version"
	}
	for name := range action.Arguments {
		if !slices.Contains(spec.Arguments, name) {
			// An argument nobody declared is an argument no rule reads.
			return ToolSpec{}, explainUndeclaredArgument
		}
	}
	classify(action, spec)
	if spec.MCPServerID == "" && spec.Target == "" && compositionRootTarget(action.Target.Kind) {
		// Provider and MCP targets are fixed by the catalog (the
		// composition root); a request claiming one for a tool without a
		// fixed target would buy itself constructed_provider_target.
		return ToolSpec{}, explainClaimedTarget
	}
	return spec, ""
}

// scopeDenial is the decision for an action whose run lacks scopes: before
// the engine, so it names the scopes even where a hardline rule would also
// block.
func scopeDenial(action *ProposedAction, missing []string) PolicyDecision {
	return PolicyDecision{
		Decision:    DecisionDeny,
		ReasonCode:  ReasonScopeMissing,
		Layer:       LayerScope,
		Explanation: "the run's principal lacks required scopes: " + strings.Join(missing, ", "),
		SideEffect:  action.SideEffect,
		Risk:        action.Risk,
	}
}

// classify gives the action the catalog entry's classification: version,
// argument roles, side effect, risk, idempotency, required scopes and, when
// the catalog fixes one, the target. Gate and Reclassify share it, so a
// resume compares exactly what a proposal would assign.
func classify(action *ProposedAction, spec ToolSpec) {
	action.Version = spec.Version
	action.Roles = spec.Roles
	action.SideEffect = spec.SideEffect
	action.Risk = spec.Risk
	action.Idempotency = spec.Idempotency
	action.RequiredScopes = spec.RequiredScopes
	switch {
	case spec.MCPServerID != "":
		action.Target = ExecutionTarget{Kind: TargetMCPServer, ServerID: spec.MCPServerID}
	case spec.Target != "":
		action.Target = ExecutionTarget{Kind: spec.Target}
	}
}

// explainUnrepresentable is the explanation for arguments NormalizeArguments
// refuses.
const explainUnrepresentable = "request failed validation: arguments nest deeper than 64 levels or hold a value JSON cannot carry"

// explainUndeclaredArgument explains a request carrying an argument its
// tool's catalog entry does not list.
const explainUndeclaredArgument = "request failed validation: an argument the tool's catalog entry does not declare"

// explainClaimedTarget explains a request that claims a target only the
// catalog may assign.
const explainClaimedTarget = "request failed validation: a web_provider, browser_provider or mcp_server target comes from the catalog, not the request"

// compositionRootTarget reports whether a target kind is one only the
// catalog may assign.
func compositionRootTarget(kind string) bool {
	switch kind {
	case TargetWebProvider, TargetBrowserProvider, TargetMCPServer:
		return true
	}
	return false
}

// validateRequest checks what the agent sent, strictly: a request the gate
// cannot read exactly is unclassifiable, never guessed at.
func validateRequest(r *ActionRequest) string {
	switch {
	case !ValidUUID(r.ActionID):
		return "request failed validation: action_id must be a UUID"
	case !r.Kind.Valid():
		return explainBadKind
	case r.Name == "" || len(r.Name) > 200:
		return "request failed validation: name empty or too long"
	case strings.TrimSpace(r.Summary) == "":
		return "request failed validation: summary empty"
	case r.StepNumber < 0:
		return "request failed validation: negative step_number"
	case !r.OriginTrust.Valid():
		return explainBadOrigin
	case r.Target != nil && !validTargetKind(r.Target.Kind):
		return explainBadTarget
	}
	for k, t := range r.ArgumentTrust {
		if !t.Valid() {
			return explainBadArgTrust
		}
		if _, ok := r.Arguments[k]; !ok {
			return "request failed validation: argument_trust labels an argument that is not there"
		}
	}
	return ""
}

// ValidUUID accepts the canonical 8-4-4-4-12 hex form, either case: the
// shape of every id the gate and the service take from a caller.
func ValidUUID(s string) bool {
	if len(s) != 36 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if i == 8 || i == 13 || i == 18 || i == 23 {
			if c != '-' {
				return false
			}
			continue
		}
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') && (c < 'A' || c > 'F') {
			return false
		}
	}
	return true
}

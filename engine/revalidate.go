package engine

import (
	"slices"
	"time"
)

// Revalidate decides whether an approved invocation may run at resume. A
// passed run deadline comes first, whatever else changed: the run is over
// (deadline_exceeded, reason approval.expired: the approval came too late).
// Then, in the seed's order: changed arguments, narrowed scopes and a
// changed agent version void the approval (approval.invalidated); a changed
// policy_version, or a tool the current catalog classifies differently from
// the classification the approval was made under, re-runs the deterministic
// engine on the current classification, and anything but ALLOW is denied
// policy.revalidation.escalated. Otherwise the invocation is authorized.
func Revalidate(req ApprovalSnapshot, now ResumeSnapshot) RevalidationOutcome {
	var out RevalidationOutcome
	if now.Run.Deadline != nil && !now.Now.Before(*now.Run.Deadline) {
		out.Cause = VoidDeadlineExceeded
		out.ReasonCode = ReasonApprovalExpired
		return out
	}
	if cause := VoidCause(req, now); cause != "" {
		return invalidated(cause)
	}
	current := ""
	if now.Ruleset != nil {
		current = now.Ruleset.PolicyVersion()
	}
	action, reclassified, classifiable := Reclassify(req.Action, now.Catalog)
	if !classifiable {
		out.Cause = VoidToolReclassified
		out.ReasonCode = ReasonRevalidationEscalated
		return out
	}
	if req.PolicyVersion != current || reclassified {
		d := EvaluateDeterministic(action, now.Principal, now.Run, now.Ruleset)
		if len(MissingScopes(action.RequiredScopes, now.Run.PrincipalScopes)) > 0 {
			d = PolicyDecision{Decision: DecisionDeny, ReasonCode: ReasonScopeMissing, Layer: LayerScope,
				PolicyVersion: current, SideEffect: action.SideEffect, Risk: action.Risk}
		}
		out.Decision = &d
		if d.Decision != DecisionAllow {
			out.Cause = VoidPolicyEscalated
			if reclassified {
				out.Cause = VoidToolReclassified
			}
			out.ReasonCode = ReasonRevalidationEscalated
			return out
		}
	}
	out.Authorized = true
	return out
}

// Reclassify is the approved action as cat classifies it now, and whether
// that differs from the classification it was approved under. The policy
// version hashes the profile, not the operator's catalog, so a tool moved
// to another side-effect class or risk would otherwise resume unexamined.
// classifiable is false when cat no longer lists the tool of that kind, or
// no longer declares one of its arguments. A nil cat changes nothing.
func Reclassify(a ProposedAction, cat *Catalog) (cur ProposedAction, reclassified, classifiable bool) {
	if cat == nil {
		return a, false, true
	}
	spec, ok := cat.Lookup(a.Name)
	if !ok || spec.Kind != a.Kind {
		return a, true, false
	}
	for name := range a.Arguments {
		if !slices.Contains(spec.Arguments, name) {
			return a, true, false
		}
	}
	cur = a
	classify(&cur, spec)
	reclassified = cur.Version != a.Version || cur.SideEffect != a.SideEffect || cur.Risk != a.Risk ||
		cur.Idempotency != a.Idempotency || !slices.Equal(cur.RequiredScopes, a.RequiredScopes) ||
		!slices.Equal(cur.Roles.Commands, a.Roles.Commands) || !slices.Equal(cur.Roles.Paths, a.Roles.Paths) ||
		!slices.Equal(cur.Roles.URLs, a.Roles.URLs) || cur.Target != a.Target
	return cur, reclassified, true
}

// VoidCause is the first of the three changes that void an approval
// outright (arguments, narrowed scopes, agent version), or "" when none
// happened. A repeated resume of an already authorized invocation checks
// these too: the bytes re-presented must still be the bytes approved.
func VoidCause(req ApprovalSnapshot, now ResumeSnapshot) string {
	switch {
	case req.ArgumentsHash != now.ArgumentsHash:
		return VoidArgumentsChanged
	case len(MissingScopes(req.PrincipalScopes, now.PrincipalScopes)) > 0:
		return VoidScopesNarrowed
	case req.AgentVersion != now.AgentVersion:
		return VoidAgentVersionChanged
	}
	return ""
}

func invalidated(cause string) RevalidationOutcome {
	return RevalidationOutcome{Cause: cause, ReasonCode: ReasonApprovalInvalidated, Invalidated: true}
}

// Default approval lifetimes by risk (seed "Expiry and cancellation").
const (
	ExpiryLowMedium = 24 * time.Hour
	ExpiryHigh      = 4 * time.Hour
	ExpiryCritical  = time.Hour
)

// ApprovalExpiry is requestedAt plus the risk's default (or the profile's
// override), capped by the run deadline. An unknown risk gets the shortest
// lifetime: the safe direction for an approval is to lapse.
func ApprovalExpiry(risk RiskLevel, requestedAt time.Time, deadline *time.Time, overrides map[RiskLevel]time.Duration) time.Time {
	ttl := ExpiryCritical
	switch risk {
	case RiskLow, RiskMedium:
		ttl = ExpiryLowMedium
	case RiskHigh:
		ttl = ExpiryHigh
	}
	if d, ok := overrides[risk]; ok && d > 0 {
		ttl = d
	}
	exp := requestedAt.Add(ttl)
	if deadline != nil && deadline.Before(exp) {
		exp = *deadline
	}
	return exp
}

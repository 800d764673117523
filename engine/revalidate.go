package engine

import "time"

// Revalidate decides whether an approved invocation may run at resume, in
// the seed's order: changed arguments, narrowed scopes and a changed agent
// version void the approval (approval.invalidated); a changed policy_version
// re-runs the deterministic engine, and anything but ALLOW is denied
// policy.revalidation.escalated; a passed run deadline is
// deadline_exceeded (reason approval.expired: the approval came too late). Otherwise the invocation is authorized.
func Revalidate(req ApprovalSnapshot, now ResumeSnapshot) RevalidationOutcome {
	if cause := VoidCause(req, now); cause != "" {
		return invalidated(cause)
	}
	var out RevalidationOutcome
	current := ""
	if now.Ruleset != nil {
		current = now.Ruleset.PolicyVersion()
	}
	if req.PolicyVersion != current {
		d := EvaluateDeterministic(req.Action, now.Principal, now.Run, now.Ruleset)
		out.Decision = &d
		if d.Decision != DecisionAllow {
			out.Cause = VoidPolicyEscalated
			out.ReasonCode = ReasonRevalidationEscalated
			return out
		}
	}
	if now.Run.Deadline != nil && !now.Now.Before(*now.Run.Deadline) {
		out.Cause = VoidDeadlineExceeded
		out.ReasonCode = ReasonApprovalExpired
		return out
	}
	out.Authorized = true
	return out
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

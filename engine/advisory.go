package engine

import (
	"context"
	"errors"
	"strings"
)

// The advisory layer (seed §3 "The advisory layer"): an advisor may only
// escalate a plain ALLOW of an outward web read, and the combination is the
// max rule. What an advisor is (a model behind HTTP) lives outside the
// engine; here are the port's contract and the pure combination.

// Abstention causes: why an advisor gave no verdict. Each is a metric label
// and a log field, so the set is closed.
const (
	AbstainTimeout           = "timeout"
	AbstainProviderError     = "provider_error"
	AbstainMissingCredential = "missing_credential"
	AbstainInvalidResponse   = "invalid_response"
)

// Abstention is an advisor's error saying why it gave no verdict. An
// advisor may return any error; AbstentionCause classifies the rest.
type Abstention struct {
	Cause string // one of the Abstain* causes
	Err   error  // what went wrong, for the advisor's own tests; never logged
}

func (e *Abstention) Error() string { return "advisor abstained: " + e.Cause }
func (e *Abstention) Unwrap() error { return e.Err }

// AbstentionCause is the cause label of an advisor's error: its own when it
// is an Abstention, timeout for a deadline, provider_error otherwise.
func AbstentionCause(err error) string {
	var a *Abstention
	switch {
	case errors.As(err, &a) && validCause(a.Cause):
		return a.Cause
	case errors.Is(err, context.DeadlineExceeded):
		return AbstainTimeout
	}
	return AbstainProviderError
}

func validCause(c string) bool {
	switch c {
	case AbstainTimeout, AbstainProviderError, AbstainMissingCredential, AbstainInvalidResponse:
		return true
	}
	return false
}

// ConsultsAdvisor reports whether the advisory layer is asked about an
// action the deterministic layer decided det: only a plain ALLOW (an
// ALLOW_WITH_MODIFICATIONS passes untouched: escalating it would ask the
// owner to approve arguments not yet narrowed), and only a NETWORK_READ
// whose target is the web or browser provider, where an allowed action
// still carries model-written text outward (a search query, a fetch or
// navigation URL).
func ConsultsAdvisor(a ProposedAction, det PolicyDecision) bool {
	return det.Decision == DecisionAllow && a.SideEffect == SideEffectNetworkRead &&
		(a.Target.Kind == TargetWebProvider || a.Target.Kind == TargetBrowserProvider)
}

// ApplyAdvice combines a deterministic decision with an advisory verdict. An
// abstention (or a verdict this engine does not know: the advisor port
// abstains on an invalid response) returns det unchanged. Otherwise the
// result is max(det, verdict): never lower, never with modifications the
// advisor could have shaped, always with det's policy_version.
func ApplyAdvice(det PolicyDecision, v AdvisoryVerdict) PolicyDecision {
	var want PolicyDecisionType
	switch v.Verdict {
	case AdvisoryRequireApproval:
		want = DecisionRequireApproval
	case AdvisoryDeny:
		want = DecisionDeny
	default:
		return det
	}
	if want.Rank() <= det.Decision.Rank() {
		return det
	}
	return PolicyDecision{
		Decision:      want,
		ReasonCode:    ReasonAdvisoryEscalated,
		PolicyVersion: det.PolicyVersion,
		Layer:         LayerAdvisory,
		Explanation:   advisoryExplanationPrefix + strings.Join(SignalIDs(v.Signals), ",") + advisoryExplanationAdvisor + versionOrUnknown(v.AdvisorVersion),
		SideEffect:    det.SideEffect,
		Risk:          det.Risk,
	}
}

// The escalation's explanation: signal identifiers and the advisor's
// version, never content. EscalationSignals reads it back.
const (
	advisoryExplanationPrefix  = "advisory escalation: signals ["
	advisoryExplanationAdvisor = "], advisor "
)

// EscalationSignals are the signal identifiers an advisory escalation
// named, read from an approval's reason and explanation; nil for any other
// approval.
func EscalationSignals(reasonCode, explanation string) []string {
	if reasonCode != ReasonAdvisoryEscalated {
		return nil
	}
	rest, ok := strings.CutPrefix(explanation, advisoryExplanationPrefix)
	if !ok {
		return nil
	}
	list, _, ok := strings.Cut(rest, advisoryExplanationAdvisor)
	if !ok || list == "" {
		return nil
	}
	return SignalIDs(strings.Split(list, ","))
}

// SignalIDs keeps the well-formed signal identifiers (lower-case letters,
// digits, '.', '_' and '-', at most 64 bytes): an advisor is a port, and
// anything else in its verdict could be content on its way into the
// explanation the approvals API shows.
func SignalIDs(signals []string) []string {
	out := make([]string, 0, len(signals))
	for _, s := range signals {
		if validSignal(s) {
			out = append(out, s)
		}
	}
	return out
}

func validSignal(s string) bool {
	if s == "" || len(s) > 64 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if (c < 'a' || c > 'z') && (c < '0' || c > '9') && c != '.' && c != '_' && c != '-' {
			return false
		}
	}
	return true
}

func versionOrUnknown(version string) string {
	if !validSignal(version) {
		return "unknown"
	}
	return version
}

// AdvisedPolicyEngine is the PolicyEngine over a deterministic engine and
// one advisor, combined by the max rule. The advisor is asked only where
// ConsultsAdvisor holds, and any error it returns is an abstention: the
// deterministic decision, byte-identical. The single gate (package
// service) composes the same two steps around its transaction, so the
// advisor's network call never holds one open.
type AdvisedPolicyEngine struct {
	Deterministic PolicyEngine
	Advisor       PolicyAdvisor
}

// Evaluate implements PolicyEngine.
func (e AdvisedPolicyEngine) Evaluate(ctx context.Context, a ProposedAction, p Principal, r RunSnapshot) (PolicyDecision, error) {
	det, err := e.Deterministic.Evaluate(ctx, a, p, r)
	if err != nil || e.Advisor == nil || !ConsultsAdvisor(a, det) {
		return det, err
	}
	if v, err := e.Advisor.Advise(ctx, a); err == nil {
		return ApplyAdvice(det, v), nil
	}
	// Any error is an abstention: the deterministic decision stands.
	return det, nil
}

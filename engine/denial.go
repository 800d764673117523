package engine

import "strings"

// Remediations the model may be told.
const (
	RemediationNone            = "none"
	RemediationRequestApproval = "request_approval"
	RemediationModifyArguments = "modify_arguments"
)

type denialText struct {
	message     string
	remediation string
	retryable   bool
}

// Fixed messages by reason code. None names a rule, a pattern, a profile or
// anything of another principal: a denial that says what fired is a search
// gradient for a model reformulating until it gets through.
var (
	denialHardline       = denialText{"Not performed. This action is never permitted.", RemediationNone, false}
	denialToolRule       = denialText{"Not performed. Policy does not permit this action.", RemediationNone, false}
	denialMatrixFixed    = denialText{"Not performed. Policy does not permit this kind of action.", RemediationNone, false}
	denialMatrixArgument = denialText{"Not performed. Policy does not permit this action with these arguments or this target.", RemediationModifyArguments, true}
	denialUnknown        = denialText{"Not performed.", RemediationNone, false}

	denialByCode = map[string]denialText{
		ReasonUnclassifiable:        {"Not performed. The action could not be classified.", RemediationNone, false},
		ReasonScopeMissing:          {"Not performed. The run lacks a required scope: ", RemediationNone, false},
		ReasonTrustEscalated:        {"Not performed. Content that cannot authorize this action shaped it, so it needs a human's approval.", RemediationRequestApproval, false},
		ReasonRevalidationEscalated: {"Not performed. Policy changed after approval and no longer allows this action.", RemediationRequestApproval, true},
		ReasonAdvisoryEscalated:     {"Not performed. This action needs a human's approval.", RemediationRequestApproval, false},
		ReasonApprovalDenied:        {"Not performed. Approval was required and was denied.", RemediationNone, false},
		ReasonApprovalExpired:       {"Not performed. Approval was required and was not given in time.", RemediationNone, false},
		ReasonApprovalInvalidated:   {"Not performed. The approval no longer matches this action.", RemediationRequestApproval, true},
		ReasonApprovalCancelled:     {"Not performed. The run was cancelled.", RemediationNone, false},
	}
)

// DenialReasonCodes lists the fixed reason codes Denial knows by name; the
// families policy.hardline.*, policy.matrix.* and policy.tool_rule.* are
// handled by prefix.
func DenialReasonCodes() []string {
	return []string{
		ReasonUnclassifiable, ReasonScopeMissing, ReasonTrustEscalated, ReasonRevalidationEscalated,
		ReasonAdvisoryEscalated, ReasonApprovalDenied, ReasonApprovalExpired, ReasonApprovalInvalidated,
		ReasonApprovalCancelled,
	}
}

// Denial builds the denial result for a reason code; only
// policy.scope.missing names anything, and only the missing scopes.
func Denial(action, reasonCode string, missing []string) DenialResult {
	t := denialFor(reasonCode)
	msg := t.message
	if reasonCode == ReasonScopeMissing {
		scopes := make([]string, 0, len(missing))
		for _, s := range missing {
			// Only scope-shaped strings: the message must not become a
			// channel for anything else a caller passes in.
			if ValidScopeGrammar(s) {
				scopes = append(scopes, s)
			}
		}
		if len(scopes) == 0 {
			msg = "Not performed. The run lacks a required scope."
		} else {
			msg += strings.Join(scopes, ", ") + "."
		}
	}
	return DenialResult{
		Status:      "denied",
		Action:      action,
		ReasonCode:  reasonCode,
		Message:     msg,
		Retryable:   t.retryable,
		Remediation: t.remediation,
	}
}

func denialFor(code string) denialText {
	if t, ok := denialByCode[code]; ok {
		return t
	}
	switch {
	case strings.HasPrefix(code, HardlineMessagePrefix):
		return denialHardline
	case strings.HasPrefix(code, "policy.tool_rule."):
		return denialToolRule
	case strings.HasPrefix(code, "policy.matrix."):
		// The seed matrix's conditioned rows deny on a failed predicate over
		// the arguments or target; the model can fix those. The others deny
		// the class.
		switch SideEffectClass(strings.TrimPrefix(code, "policy.matrix.")) {
		case SideEffectWorkspaceRead, SideEffectWorkspaceWrite, SideEffectNetworkRead, SideEffectCodeExecution:
			return denialMatrixArgument
		}
		return denialMatrixFixed
	}
	return denialUnknown
}

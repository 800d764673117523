package engine

import (
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"slices"
	"testing"
)

// fixedEngine is a deterministic layer that always decides d.
type fixedEngine struct{ d PolicyDecision }

func (e fixedEngine) Evaluate(context.Context, ProposedAction, Principal, RunSnapshot) (PolicyDecision, error) {
	return e.d, nil
}

// countingAdvisor answers v (or err) and counts its calls.
type countingAdvisor struct {
	v     AdvisoryVerdict
	err   error
	calls int
}

func (a *countingAdvisor) Advise(context.Context, ProposedAction) (AdvisoryVerdict, error) {
	a.calls++
	return a.v, a.err
}

// TestGate14AdvisoryMonotonic: over the full cross product of deterministic
// decisions and advisor verdicts, evaluated through AdvisedPolicyEngine, the
// result's rank is never below the deterministic rank, it carries no
// modifications the deterministic layer did not produce, its policy_version
// is the deterministic one, and an abstention (or an error, or a verdict
// the port does not know) is the deterministic decision byte for byte.
func TestGate14AdvisoryMonotonic(t *testing.T) {
	t.Parallel()
	consulted := action(SideEffectNetworkRead, map[string]any{"query": "weather"})
	consulted.Target = ExecutionTarget{Kind: TargetWebProvider}

	type detCase struct {
		name   string
		engine PolicyEngine
		action ProposedAction
	}
	var dets []detCase
	// Every decision type on the consulted class, modifications included.
	for _, d := range PolicyDecisionTypes() {
		det := PolicyDecision{Decision: d, ReasonCode: "policy.matrix.network_read", PolicyVersion: "p@0123456789ab+h01234567", Layer: LayerMatrix, SideEffect: SideEffectNetworkRead, Risk: RiskLow}
		if d == DecisionAllowWithModifications {
			det.ModifiedArguments = map[string]any{"safe": true}
		}
		dets = append(dets, detCase{"fixed " + string(d), fixedEngine{det}, consulted})
	}
	// The real evaluator over every class, target and origin.
	rs := testRuleset(t)
	for _, s := range SideEffectClasses() {
		for _, target := range TargetKinds() {
			for _, origin := range TrustLevels() {
				a := action(s, map[string]any{"command": "rm -rf /", "query": "q"})
				a.Target, a.OriginTrust = ExecutionTarget{Kind: target}, origin
				dets = append(dets, detCase{string(s) + "/" + target + "/" + string(origin), DeterministicEngine{rs}, a})
			}
		}
	}
	advisors := []struct {
		name string
		v    AdvisoryVerdict
		err  error
	}{
		{"abstain", AdvisoryVerdict{Verdict: AdvisoryAbstain, AdvisorVersion: "v1"}, nil},
		{"require_approval", AdvisoryVerdict{Verdict: AdvisoryRequireApproval, Signals: []string{"advisory.addresses_ai", "<b>content</b>"}, AdvisorVersion: "v1"}, nil},
		{"deny", AdvisoryVerdict{Verdict: AdvisoryDeny, Signals: []string{"s1"}, AdvisorVersion: "v1"}, nil},
		{"unknown allow", AdvisoryVerdict{Verdict: "allow"}, nil},
		{"empty", AdvisoryVerdict{}, nil},
		{"error", AdvisoryVerdict{Verdict: AdvisoryDeny}, &Abstention{Cause: AbstainTimeout}},
	}
	ctx := context.Background()
	seen := map[PolicyDecisionType]bool{}
	for _, dc := range dets {
		det, err := dc.engine.Evaluate(ctx, dc.action, Principal{}, RunSnapshot{})
		if err != nil {
			t.Fatal(err)
		}
		detJSON, _ := json.Marshal(det)
		for _, ac := range advisors {
			adv := &countingAdvisor{v: ac.v, err: ac.err}
			got, err := AdvisedPolicyEngine{Deterministic: dc.engine, Advisor: adv}.Evaluate(ctx, dc.action, Principal{}, RunSnapshot{})
			if err != nil {
				t.Fatalf("%s × %s: %v", dc.name, ac.name, err)
			}
			seen[det.Decision] = true
			if got.Decision.Rank() < det.Decision.Rank() {
				t.Errorf("%s × %s: lowered %s to %s", dc.name, ac.name, det.Decision, got.Decision)
			}
			if got.PolicyVersion != det.PolicyVersion {
				t.Errorf("%s × %s: policy_version %q, want %q", dc.name, ac.name, got.PolicyVersion, det.PolicyVersion)
			}
			if got.ModifiedArguments != nil && !reflect.DeepEqual(got.ModifiedArguments, det.ModifiedArguments) {
				t.Errorf("%s × %s: modifications the deterministic layer did not produce", dc.name, ac.name)
			}
			want := ConsultsAdvisor(dc.action, det)
			if (adv.calls == 1) != want || adv.calls > 1 {
				t.Errorf("%s × %s: advisor called %d times, consulted %v", dc.name, ac.name, adv.calls, want)
			}
			gotJSON, _ := json.Marshal(got)
			escalates := want && ac.err == nil && (ac.v.Verdict == AdvisoryRequireApproval || ac.v.Verdict == AdvisoryDeny)
			if !escalates && string(gotJSON) != string(detJSON) {
				t.Errorf("%s × %s: changed the decision without escalating:\n%s\n%s", dc.name, ac.name, gotJSON, detJSON)
			}
			if escalates {
				if got.ReasonCode != ReasonAdvisoryEscalated || got.Layer != LayerAdvisory || got.ModifiedArguments != nil {
					t.Errorf("%s × %s: escalation %+v", dc.name, ac.name, got)
				}
				if signals := EscalationSignals(got.ReasonCode, got.Explanation); !slices.Equal(signals, SignalIDs(ac.v.Signals)) {
					t.Errorf("%s × %s: explanation %q names %v", dc.name, ac.name, got.Explanation, signals)
				}
			}
		}
	}
	if len(seen) != len(PolicyDecisionTypes()) {
		t.Fatalf("cross product covers only %v", seen)
	}
}

func TestConsultsAdvisorOnlyPlainAllowOfWebReads(t *testing.T) {
	t.Parallel()
	allow := PolicyDecision{Decision: DecisionAllow}
	for _, tc := range []struct {
		side   SideEffectClass
		target string
		det    PolicyDecisionType
		want   bool
	}{
		{SideEffectNetworkRead, TargetWebProvider, DecisionAllow, true},
		{SideEffectNetworkRead, TargetBrowserProvider, DecisionAllow, true},
		{SideEffectNetworkRead, TargetWebProvider, DecisionAllowWithModifications, false},
		{SideEffectNetworkRead, TargetWebProvider, DecisionRequireApproval, false},
		{SideEffectNetworkRead, TargetWebProvider, DecisionDeny, false},
		{SideEffectNetworkRead, TargetMCPServer, DecisionAllow, false},
		{SideEffectNetworkRead, TargetInProcess, DecisionAllow, false},
		{SideEffectExternalWrite, TargetBrowserProvider, DecisionAllow, false},
		{SideEffectWorkspaceRead, TargetWebProvider, DecisionAllow, false},
	} {
		a := ProposedAction{SideEffect: tc.side, Target: ExecutionTarget{Kind: tc.target}}
		d := allow
		d.Decision = tc.det
		if got := ConsultsAdvisor(a, d); got != tc.want {
			t.Errorf("%s %s %s: %v, want %v", tc.side, tc.target, tc.det, got, tc.want)
		}
	}
}

func TestAbstentionCause(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		err  error
		want string
	}{
		{&Abstention{Cause: AbstainMissingCredential}, AbstainMissingCredential},
		{&Abstention{Cause: "made up"}, AbstainProviderError},
		{context.DeadlineExceeded, AbstainTimeout},
		{errors.New("boom"), AbstainProviderError},
	} {
		if got := AbstentionCause(tc.err); got != tc.want {
			t.Errorf("%v: %s, want %s", tc.err, got, tc.want)
		}
	}
}

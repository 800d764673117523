package service

import (
	"context"
	"encoding/json"
	"fmt"

	"gatehouse/engine"
)

// The advisory layer in the single gate (seed §3 "The advisory layer").
// Propose evaluates deterministically inside its transaction; when the
// decision is one the layer consults on (engine.ConsultsAdvisor) and the
// run's profile enforces it or the service observes, the transaction rolls
// back before writing anything, the advisor is asked with no transaction
// open, and the proposal runs again with the verdict in hand and writes
// once. Actions the layer does not consult on never see it: their round
// trips are unchanged. Resume never asks the advisor (revalidation is
// deterministic, the pipeline's recovery policy), and neither does a
// proposal whose invocation already has a row: it is answered from the
// row, so an escalation recorded before a crash survives it.

// advisoryMode is what the layer does for a run's profile.
type advisoryMode int

const (
	advisoryOff advisoryMode = iota
	// advisoryObserve asks and records, and returns the deterministic
	// decision byte-identical (AGENT_POLICY_ADVISORY_OBSERVE_ENABLED).
	advisoryObserve
	// advisoryEnforce asks and combines by the max rule (the profile's
	// advisory.enabled, which moves policy_version). It wins over observe.
	advisoryEnforce
)

// advisoryMode is the layer's mode for runs of rs: off whenever no advisor
// is composed, whatever the profile and the flag say (New warned).
func (s *Service) advisoryMode(rs *engine.LoadedRuleset) advisoryMode {
	switch {
	case s.cfg.Advisor == nil || rs == nil:
		return advisoryOff
	case rs.AdvisoryEnabled():
		return advisoryEnforce
	case s.cfg.AdvisoryObserve:
		return advisoryObserve
	}
	return advisoryOff
}

// Advisory modes as the policy page names them.
const (
	AdvisoryOff       = "off"
	AdvisoryObserving = "observing"
	AdvisoryEnforcing = "enforcing"
)

// AdvisoryState is the layer's state for runs of profile. An advisor that
// has a Version method (the judgment advisor) has it shown.
func (s *Service) AdvisoryState(profile string) AdvisoryState {
	rs, _ := s.ruleset(profile)
	var st AdvisoryState
	switch s.advisoryMode(rs) {
	case advisoryEnforce:
		st.Mode = AdvisoryEnforcing
	case advisoryObserve:
		st.Mode = AdvisoryObserving
	default:
		st.Mode = AdvisoryOff
		st.Unconfigured = s.cfg.Advisor == nil && (s.cfg.AdvisoryObserve || rs != nil && rs.AdvisoryEnabled())
	}
	if v, ok := s.cfg.Advisor.(interface{ Version() string }); ok {
		st.AdvisorVersion = v.Version()
	}
	return st
}

// warnAdvisoryWithoutAdvisor warns once, at composition, when the layer is
// on (observing, or a loaded profile enforcing) but no advisor is composed:
// every decision is then the deterministic engine's.
func (s *Service) warnAdvisoryWithoutAdvisor() {
	if s.cfg.Advisor != nil {
		return
	}
	var enforcing []string
	for _, name := range s.cfg.Policy.Profiles() {
		if rs, ok := s.cfg.Policy.Ruleset(name); ok && rs.AdvisoryEnabled() {
			enforcing = append(enforcing, name)
		}
	}
	if s.cfg.AdvisoryObserve || len(enforcing) > 0 {
		s.log.Warn("policy_advisory_unavailable: the advisory layer is on but no advisor is configured; decisions are the deterministic engine's",
			"observe", s.cfg.AdvisoryObserve, "enforcing_profiles", enforcing)
	}
}

// advice is one consultation's outcome, carried into the transaction that
// records it.
type advice struct {
	verdict  engine.AdvisoryVerdict
	cause    string // the abstention cause; "" when the advisor answered
	enforced bool
}

// advisoryRecord is actions.advisory: what the layer said about an action
// it consulted on (NULL for every other action). It carries no content.
type advisoryRecord struct {
	Verdict        engine.AdvisoryVerdictType `json:"verdict"`
	Signals        []string                   `json:"signals,omitempty"`
	AdvisorVersion string                     `json:"advisor_version,omitempty"`
	// Cause is why the advisor abstained without judging: timeout,
	// provider_error, missing_credential, invalid_response.
	Cause    string `json:"cause,omitempty"`
	Enforced bool   `json:"enforced"`
}

func (a advice) record() *advisoryRecord {
	return &advisoryRecord{
		Verdict: a.verdict.Verdict, Signals: a.verdict.Signals, AdvisorVersion: a.verdict.AdvisorVersion,
		Cause: a.cause, Enforced: a.enforced,
	}
}

func (r *advisoryRecord) encode() (any, error) {
	if r == nil {
		return nil, nil
	}
	b, err := json.Marshal(r)
	if err != nil {
		return nil, fmt.Errorf("encode advisory record: %w", err)
	}
	return b, nil
}

// consultAdvisorError rolls a proposal's transaction back so that the
// advisor is asked with none open.
type consultAdvisorError struct {
	action   engine.ProposedAction
	enforced bool
}

func (e *consultAdvisorError) Error() string { return "advisor to consult" }

// applyAdvisory is the layer's step inside the proposal's transaction,
// after the deterministic decision: out unchanged and no record when the
// layer does not consult on it; a consultAdvisorError when it does and
// nobody asked yet; otherwise out combined with the advice (enforcing) or
// unchanged (observing), and the record to write.
func (s *Service) applyAdvisory(rs *engine.LoadedRuleset, out engine.GateOutcome, adv *advice) (engine.GateOutcome, *advisoryRecord, error) {
	mode := s.advisoryMode(rs)
	if mode == advisoryOff || !engine.ConsultsAdvisor(out.Action, out.Decision) {
		return out, nil, nil
	}
	if adv == nil {
		return out, nil, &consultAdvisorError{action: out.Action, enforced: mode == advisoryEnforce}
	}
	if adv.enforced {
		out.Decision = engine.ApplyAdvice(out.Decision, adv.verdict)
	}
	return out, adv.record(), nil
}

// consult asks the advisor about a, with no transaction open. An error or
// a verdict outside the port's three is an abstention, counted and logged
// by cause; an answer is counted and logged by verdict. The log lines
// carry the tool name and identifiers only: no argument, no probability.
func (s *Service) consult(ctx context.Context, a engine.ProposedAction, enforced bool) advice {
	start := s.now()
	v, err := s.cfg.Advisor.Advise(ctx, a)
	latency := s.now().Sub(start)
	switch {
	case err != nil:
		return s.abstained(a, engine.AbstentionCause(err), enforced)
	case v.Verdict != engine.AdvisoryAbstain && v.Verdict != engine.AdvisoryRequireApproval && v.Verdict != engine.AdvisoryDeny:
		return s.abstained(a, engine.AbstainInvalidResponse, enforced)
	}
	v.Signals = engine.SignalIDs(v.Signals)
	s.metrics.AdvisoryConsulted(string(v.Verdict), enforced, latency)
	s.log.Info("policy_advisory_consulted", "tool", a.Name, "verdict", string(v.Verdict), "enforced", enforced,
		"signals", v.Signals, "advisor_version", v.AdvisorVersion, "latency_ms", latency.Milliseconds())
	return advice{verdict: v, enforced: enforced}
}

func (s *Service) abstained(a engine.ProposedAction, cause string, enforced bool) advice {
	s.metrics.AdvisoryAbstained(cause)
	s.log.Info("policy_advisory_abstained", "tool", a.Name, "cause", cause)
	return advice{verdict: engine.AdvisoryVerdict{Verdict: engine.AdvisoryAbstain}, cause: cause, enforced: enforced}
}

package console

import (
	"strings"
	"testing"

	"gatehouse/engine"
	"gatehouse/rules"
)

// TestEveryShippedReasonHasASentence: every reason code the engine and the
// shipped rules can emit (the fixed codes, each profile's matrix rows and
// tool rules, the hardline message codes) reads as a sentence of its own,
// never the generic fallback and never the code itself.
func TestEveryShippedReasonHasASentence(t *testing.T) {
	t.Parallel()
	set, err := rules.Load(rules.Options{})
	if err != nil {
		t.Fatal(err)
	}
	codes := map[string]bool{}
	for _, c := range engine.DenialReasonCodes() {
		codes[c] = true
	}
	for _, se := range engine.SideEffectClasses() {
		codes[engine.MatrixReason(se)] = true
	}
	for _, name := range set.Profiles() {
		rs, _ := set.Ruleset(name)
		p := rs.Profile()
		for _, r := range p.Rules {
			codes[engine.MatrixReason(r.SideEffect)] = true
		}
		for _, r := range p.ToolRules {
			codes[engine.ToolRuleReason(r.Tool)] = true
		}
		for _, h := range rs.Hardline() {
			codes[h.MessageCode] = true
		}
	}
	if len(codes) < 30 {
		t.Fatalf("only %d codes collected: the test reads too little", len(codes))
	}
	for code := range codes {
		for _, d := range engine.PolicyDecisionTypes() {
			s, ok := reasonSentence(code, d)
			if !ok || s == "" || strings.Contains(s, code) || !strings.HasSuffix(s, ".") {
				t.Errorf("%s (%s): %q, ok=%v", code, d, s, ok)
			}
		}
	}
}

// TestReasonSentences: a family's sentence says what its rule decided; an
// unknown code still gets a sentence, flagged as generic.
func TestReasonSentences(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		code string
		d    engine.PolicyDecisionType
		want string
	}{
		{"policy.matrix.financial", engine.DecisionRequireApproval, "It spends money, and for every action of this kind the policy asks a person first."},
		{"policy.matrix.package_install", engine.DecisionDeny, "It installs packages, and for every action of this kind the policy does not permit it (or not with these arguments or this target)."},
		{"policy.tool_rule.memory.write", engine.DecisionRequireApproval, "The policy has a rule of its own for the tool memory.write, and it asks a person first."},
		{"policy.hardline.metadata_egress", engine.DecisionDeny, "It would reach a cloud metadata service, where the machine's own credentials live. Hardline rules never permit this, whoever asks."},
		{"policy.trust.escalated", engine.DecisionRequireApproval, "The policy would allow this action, but content that cannot authorize anything (a web page, a document, the agent's memory) shaped it, so a person must confirm it."},
	} {
		if got, ok := reasonSentence(c.code, c.d); !ok || got != c.want {
			t.Errorf("%s: %q, ok=%v; want %q", c.code, got, ok, c.want)
		}
	}
	for _, code := range []string{"policy.matrix.teleport", "policy.hardline.new_rule", "something.else", "policy.tool_rule."} {
		if s, ok := reasonSentence(code, engine.DecisionDeny); ok || s == "" {
			t.Errorf("%s: %q, ok=%v; want a generic sentence", code, s, ok)
		}
	}
}

// TestEveryHardlineRuleIsDescribed: the policy page describes every
// shipped hardline rule in words of its own.
func TestEveryHardlineRuleIsDescribed(t *testing.T) {
	t.Parallel()
	set, err := rules.Load(rules.Options{})
	if err != nil {
		t.Fatal(err)
	}
	m := policyView(set, fixedNow)
	if len(m.HardlineRules) == 0 {
		t.Fatal("no hardline rules on the policy page")
	}
	for _, h := range m.HardlineRules {
		if hardlineDescriptions[h.ID] == "" || h.Description != hardlineDescriptions[h.ID] {
			t.Errorf("hardline rule %s: %q", h.ID, h.Description)
		}
	}
	if len(m.HardlineRules) != len(hardlineDescriptions) {
		t.Errorf("%d hardline rules shipped, %d described: drop the descriptions of removed rules", len(m.HardlineRules), len(hardlineDescriptions))
	}
}

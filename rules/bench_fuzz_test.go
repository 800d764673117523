package rules

import (
	"encoding/json"
	"errors"
	"testing"
	"time"

	"gatehouse/engine"
)

// benchActions gates every corpus case once and keeps the classified
// actions whose decision satisfies keep, ready for the evaluator alone.
func benchActions(b *testing.B, keep func(engine.PolicyDecision) bool) ([]engine.ProposedAction, []*engine.LoadedRuleset) {
	set := loadCorpusSet(b)
	var actions []engine.ProposedAction
	var rulesets []*engine.LoadedRuleset
	for _, c := range loadCorpus(b) {
		out := c.run(set)
		if out.Decision.Layer == engine.LayerScope || out.Decision.Layer == engine.LayerValidation && out.Action.SideEffect == "" {
			continue // never reaches the evaluator
		}
		if !keep(out.Decision) {
			continue
		}
		rs, _ := set.Ruleset(c.Profile)
		actions = append(actions, out.Action)
		rulesets = append(rulesets, rs)
	}
	if len(actions) == 0 {
		b.Fatal("no actions")
	}
	return actions, rulesets
}

// BenchmarkEvaluate runs EvaluateDeterministic over the corpus; one op is
// one evaluation. The allow path must not allocate.
func BenchmarkEvaluate(b *testing.B) {
	run := func(b *testing.B, keep func(engine.PolicyDecision) bool) {
		actions, rulesets := benchActions(b, keep)
		b.ReportAllocs()
		b.ResetTimer()
		i := 0
		for b.Loop() {
			d := engine.EvaluateDeterministic(actions[i], engine.Principal{}, engine.RunSnapshot{}, rulesets[i])
			if d.Decision == "" {
				b.Fatal("empty decision")
			}
			if i++; i == len(actions) {
				i = 0
			}
		}
	}
	b.Run("corpus", func(b *testing.B) { run(b, func(engine.PolicyDecision) bool { return true }) })
	b.Run("allow", func(b *testing.B) {
		run(b, func(d engine.PolicyDecision) bool { return d.Decision == engine.DecisionAllow })
	})
	// Many allowed corpus cases are command near misses, which the shell
	// reader parses. The allow path of an action with no command shows the
	// evaluator's own cost and must not allocate; the one with a command
	// shows what parsing costs.
	b.Run("allow_without_command", func(b *testing.B) {
		run(b, func(d engine.PolicyDecision) bool {
			return d.Decision == engine.DecisionAllow && d.SideEffect != engine.SideEffectCodeExecution
		})
	})
	b.Run("allow_with_command", func(b *testing.B) {
		run(b, func(d engine.PolicyDecision) bool {
			return d.Decision == engine.DecisionAllow && d.SideEffect == engine.SideEffectCodeExecution
		})
	})
}

// BenchmarkGate is the whole pure gate: validation, catalog, scopes,
// normalization and hashing, evaluation.
func BenchmarkGate(b *testing.B) {
	set := loadCorpusSet(b)
	cases := loadCorpus(b)
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		cases[i].run(set)
		if i++; i == len(cases) {
			i = 0
		}
	}
}

// FuzzLoadProfile: run with -fuzzminimizetime 1s; minimizing a
// kilobyte-sized profile with the default 60 s stalls the fuzzer's report.
func FuzzLoadProfile(f *testing.F) {
	f.Add(defaultYAML)
	f.Add([]byte(defaultWithout("side_effect: privileged,", "")))
	f.Add([]byte(defaultWithout("", "  - {side_effect: financial, risk: low, decision: allow_with_modifications, modifications: {set: {a: [1, {b: c}]}, remove: [x]}}")))
	f.Add([]byte("matrix: [{side_effect: none}]\n---\n"))
	f.Add([]byte("tool_rules: {a: {decision: allow}}"))
	hl, err := parseHardline(hardlineYAML)
	if err != nil {
		f.Fatal(err)
	}
	cat, err := loadCatalog(Options{})
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		rs, err := compileProfile("fuzz", "fuzz.yaml", b, hl, cat)
		if (rs == nil) == (err == nil) {
			t.Fatalf("want exactly one of ruleset and error: %v %v", rs, err)
		}
		if err != nil {
			var le *LoadError
			if !errors.As(err, &le) {
				t.Fatalf("error is not a LoadError: %T %v", err, err)
			}
			return
		}
		if rs.PolicyVersion() != engine.ComputePolicyVersion("fuzz", b, hardlineYAML) {
			t.Fatal("version does not hash the bytes")
		}
	})
}

func FuzzDecodeAction(f *testing.F) {
	set, err := Load(corpusOptions)
	if err != nil {
		f.Fatal(err)
	}
	for _, c := range loadCorpus(f) {
		raw, _ := json.Marshal(c.Action)
		f.Add(raw, "workspace.write,sandbox.execute,mcp.files.use,mcp.files.read", c.Profile)
	}
	f.Add([]byte(`{"kind":"tool_call","arguments":{"a":1e999,"b":[[[[]]]]},"target":{"kind":"sandbox"}}`), "", "")
	f.Fuzz(func(t *testing.T, body []byte, scopes string, profile string) {
		req, err := engine.DecodeActionRequest(body)
		if err != nil {
			return
		}
		rs, ok := set.Ruleset(profile)
		if !ok {
			rs = set.DefaultRuleset()
		}
		run := engine.RunSnapshot{PrincipalScopes: splitComma(scopes)}
		out := engine.Gate(req, set.Catalog(), run, engine.Principal{}, rs, time.Time{})
		if !out.Decision.Decision.Valid() || out.Decision.ReasonCode == "" {
			t.Fatalf("invalid decision %+v", out.Decision)
		}
		if out.Decision.Decision != engine.DecisionDeny && out.Decision.PolicyVersion != rs.PolicyVersion() {
			t.Fatal("non-deny decision without the policy version")
		}
	})
}

func splitComma(s string) []string {
	var out []string
	start := 0
	for i := 0; i <= len(s); i++ {
		if i == len(s) || s[i] == ',' {
			if i > start {
				out = append(out, s[start:i])
			}
			start = i + 1
		}
	}
	return out
}

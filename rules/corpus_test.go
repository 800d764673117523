package rules

import (
	"encoding/json"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"gatehouse/engine"
)

// corpusOptions is the one set every corpus case runs against (see
// testdata/corpus/README.md).
var corpusOptions = Options{PolicyDir: "testdata/profiles", ToolsFile: "testdata/tools.yaml"}

// corpusCase is a corpus case; the corpus is read by the same loader as
// an operator's case files (LoadCases).
type corpusCase struct{ Case }

func loadCorpusSet(t testing.TB) *Set {
	t.Helper()
	set, err := Load(corpusOptions)
	if err != nil {
		t.Fatalf("load corpus set: %v", err)
	}
	return set
}

// loadCorpus reads every case and decodes its action strictly, exactly as
// the API would.
func loadCorpus(t testing.TB) []corpusCase {
	t.Helper()
	cases, err := LoadCases("testdata/corpus")
	if err != nil {
		t.Fatal(err)
	}
	out := make([]corpusCase, len(cases))
	for i, c := range cases {
		c.File = filepath.Base(c.File)
		out[i] = corpusCase{c}
	}
	return out
}

func (c corpusCase) run(set *Set) engine.GateOutcome {
	rs, ok := set.Ruleset(c.Profile)
	if !ok {
		return engine.GateOutcome{}
	}
	run := engine.RunSnapshot{ID: "run-1", TenantID: "t1", SessionID: "s1", PrincipalID: "p1", PrincipalScopes: c.Scopes, AgentVersion: "1"}
	p := engine.Principal{ID: "p1", TenantID: "t1", Scopes: c.Scopes}
	return engine.Gate(c.Action, set.Catalog(), run, p, rs, time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
}

func TestCorpus(t *testing.T) {
	t.Parallel()
	set := loadCorpusSet(t)
	cases := loadCorpus(t)
	if len(cases) < 80 {
		t.Fatalf("corpus has %d cases, want at least 80", len(cases))
	}
	reasons := map[string]bool{}
	for _, c := range cases {
		t.Run(c.File+"/"+c.Name, func(t *testing.T) {
			if _, ok := set.Ruleset(c.Profile); !ok {
				t.Fatalf("unknown profile %q", c.Profile)
			}
			out := c.run(set)
			got := out.Decision
			if got.Decision != c.Expect.Decision || got.ReasonCode != c.Expect.ReasonCode {
				t.Fatalf("got %s %s (%s), want %s %s", got.Decision, got.ReasonCode, got.Explanation, c.Expect.Decision, c.Expect.ReasonCode)
			}
			reasons[got.ReasonCode] = true
			if got.ReasonCode != engine.ReasonScopeMissing && got.PolicyVersion == "" {
				t.Error("decision carries no policy_version")
			}
		})
	}
	// The corpus must reach every hardline rule's message code and every
	// side-effect class's matrix row that can decide.
	rs, _ := set.Ruleset("")
	for _, h := range rs.Hardline() {
		if !reasons[h.MessageCode] {
			t.Errorf("no corpus case reaches %s", h.MessageCode)
		}
	}
	for _, s := range engine.SideEffectClasses() {
		if s == engine.SideEffectCredentialAccess || s == engine.SideEffectHostAccess || s == engine.SideEffectPrivileged {
			continue // hardline rules decide these classes first
		}
		if !reasons[engine.MatrixReason(s)] {
			t.Errorf("no corpus case reaches %s", engine.MatrixReason(s))
		}
	}
}

func TestGate02Determinism(t *testing.T) {
	t.Parallel()
	set := loadCorpusSet(t)
	cases := loadCorpus(t)
	for _, c := range cases {
		first, err := json.Marshal(c.run(set))
		if err != nil {
			t.Fatal(err)
		}
		for range 1000 {
			again, _ := json.Marshal(c.run(set))
			if string(again) != string(first) {
				t.Fatalf("%s: evaluation is not deterministic:\n%s\n%s", c.Name, first, again)
			}
		}
	}
}

// TestAllowWithModifications checks the modification plumbing end to end:
// the modified arguments, the effective hash, and the proposed hash kept.
func TestAllowWithModifications(t *testing.T) {
	t.Parallel()
	set := loadCorpusSet(t)
	rs, _ := set.Ruleset("modify")
	req := engine.ActionRequest{
		ActionID: "00000000-0000-4000-8000-000000000001", Kind: engine.ActionToolCall, Name: "web.fetch_raw",
		Summary: "fetch", Arguments: map[string]any{"url": "https://example.com", "cookies": "a=b"},
		OriginTrust: engine.TrustUser,
	}
	out := engine.Gate(req, set.Catalog(), engine.RunSnapshot{}, engine.Principal{}, rs, time.Time{})
	if out.Decision.Decision != engine.DecisionAllowWithModifications {
		t.Fatalf("decision %s %s", out.Decision.Decision, out.Decision.ReasonCode)
	}
	want := map[string]any{"url": "https://example.com", "safe_search": true, "max_bytes": json.Number("65536")}
	if b1, b2 := mustJSON(t, out.EffectiveArguments), mustJSON(t, want); b1 != b2 {
		t.Fatalf("effective arguments %s, want %s", b1, b2)
	}
	norm, hash, err := engine.NormalizeArguments(want)
	if err != nil || string(out.EffectiveNormalized) != string(norm) || out.EffectiveArgumentsHash != hash {
		t.Fatalf("effective normalization %s %s", out.EffectiveNormalized, out.EffectiveArgumentsHash)
	}
	if _, proposed, _ := engine.NormalizeArguments(req.Arguments); out.Action.NormalizedArgumentsHash != proposed {
		t.Fatal("the action must keep the proposed hash")
	}
	if _, ok := req.Arguments["safe_search"]; ok {
		t.Fatal("modification wrote into the caller's arguments")
	}
	// The modifications are a fresh copy each time: editing one decision's
	// map cannot change the next.
	out.EffectiveArguments["safe_search"] = false
	again := engine.Gate(req, set.Catalog(), engine.RunSnapshot{}, engine.Principal{}, rs, time.Time{})
	if again.EffectiveArguments["safe_search"] != true {
		t.Fatal("modifications leaked between decisions")
	}
	if !slices.Equal(rs.Profile().ToolRules[0].Modifications.Remove, nil) || rs.Profile().Rules[3].Modifications.Remove[0] != "cookies" {
		t.Fatal("profile accessor lost the modifications")
	}
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

package rules

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestLoadCasesRefuses: a case file that cannot assert anything, or says
// something the loader cannot be sure of, does not load, and the error
// names the file, the line and what is wrong.
func TestLoadCasesRefuses(t *testing.T) {
	t.Parallel()
	const action = `{name: web.search, arguments: {query: q}, argument_trust: {query: user}, origin_trust: user}`
	for name, tc := range map[string]struct{ file, line, want string }{
		"no expectation":     {"cases:\n  - name: a\n    action: " + action + "\n", ":2:", "asserts nothing"},
		"reason only":        {"cases:\n  - name: a\n    action: " + action + "\n    expect: {reason_code: x}\n", ":2:", "asserts nothing"},
		"unknown decision":   {"cases:\n  - name: a\n    action: " + action + "\n    expect: {decision: maybe, reason_code: x}\n", ":2:", "asserts nothing"},
		"no name":            {"cases:\n  - action: " + action + "\n    expect: {decision: allow, reason_code: x}\n", ":2:", "needs a name"},
		"no action":          {"cases:\n  - name: a\n    expect: {decision: allow, reason_code: x}\n", ":2:", "no action"},
		"unknown key":        {"cases:\n  - name: a\n    expct: {}\n", ":3:", "yaml.syntax"},
		"unknown action key": {"cases:\n  - name: a\n    action: {name: web.search, bogus: 1}\n    expect: {decision: allow, reason_code: x}\n", ":2:", "bogus"},
		"empty":              {"cases: []\n", "", "non-empty list"},
		"duplicate name": {"cases:\n  - {name: a, action: " + action + ", expect: {decision: allow, reason_code: x}}\n" +
			"  - {name: a, action: " + action + ", expect: {decision: allow, reason_code: x}}\n", ":3:", "also at"},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			if err := os.WriteFile(filepath.Join(dir, "c.yaml"), []byte(tc.file), 0o600); err != nil {
				t.Fatal(err)
			}
			cases, err := LoadCases(dir)
			var le *LoadError
			if !errors.As(err, &le) || cases != nil {
				t.Fatalf("loaded %d cases, error %v", len(cases), err)
			}
			if !strings.Contains(err.Error(), "c.yaml"+tc.line) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %q, want c.yaml%s and %q", err, tc.line, tc.want)
			}
		})
	}
	if _, err := LoadCases(t.TempDir()); err == nil || !strings.Contains(err.Error(), "no *.yaml case files") {
		t.Fatalf("an empty directory: %v", err)
	}
}

// TestLoadCasesDefaults: a case names only what policy reads; the
// proposal's id, kind, summary and step are filled in.
func TestLoadCasesDefaults(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	body := "cases:\n  - name: search\n    action: {name: web.search, arguments: {query: q}, argument_trust: {query: user}, origin_trust: user}\n" +
		"    expect: {decision: allow, reason_code: policy.matrix.network_read}\n"
	if err := os.WriteFile(filepath.Join(dir, "c.yaml"), []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	cases, err := LoadCases(dir)
	if err != nil || len(cases) != 1 {
		t.Fatalf("%v %v", cases, err)
	}
	c := cases[0]
	if c.Action.Summary != "search" || c.Action.Kind != "tool_call" || c.Action.StepNumber != 1 || c.Action.ActionID == "" || c.Line != 2 {
		t.Fatalf("defaults not applied: %+v", c)
	}
}

package main

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/uuid"

	"gatehouse/engine"
	"gatehouse/internal/testdb"
	"gatehouse/rules"
)

// The shipped examples: an operator profile with a quorum, its cases, and
// a proposed change to it.
const (
	examplesDir = "../../rules/examples"
	casesDir    = examplesDir + "/cases"
	proposedDir = examplesDir + "/proposed"
)

func policyCmd(t *testing.T, env envConfig, args ...string) (string, error) {
	t.Helper()
	var out bytes.Buffer
	err := runPolicy(t.Context(), env, args, nil, &out)
	return out.String(), err
}

// TestPolicyTestShippedCases: the shipped example cases pass, exit 0.
func TestPolicyTestShippedCases(t *testing.T) {
	t.Parallel()
	out, err := policyCmd(t, envConfig{}, "test", "--policy-dir", examplesDir, casesDir)
	if err != nil || out != "PASS: 10/10\n" {
		t.Fatalf("%v\n%s", err, out)
	}
	out, err = policyCmd(t, envConfig{PolicyDir: examplesDir}, "test", "-v", casesDir)
	if err != nil || !strings.Contains(out, "PASS "+casesDir+"/team.yaml:5: team: a charge goes to a human\n") {
		t.Fatalf("-v with the directory from CONSOLE_POLICY_DIR: %v\n%s", err, out)
	}
}

// TestPolicyTestFailureIsADiff: a case whose decision changed fails the
// command (exit 1) and says where, what it wanted and what it got.
func TestPolicyTestFailureIsADiff(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	b, err := os.ReadFile(casesDir + "/team.yaml")
	if err != nil {
		t.Fatal(err)
	}
	wrong := strings.Replace(string(b), "expect: {decision: deny, reason_code: policy.matrix.package_install}", "expect: {decision: require_approval, reason_code: policy.matrix.package_install}", 1)
	if err := os.WriteFile(filepath.Join(dir, "team.yaml"), []byte(wrong), 0o600); err != nil {
		t.Fatal(err)
	}
	out, err := policyCmd(t, envConfig{}, "test", "--policy-dir", examplesDir, dir)
	if !errors.Is(err, errCasesFailed) || errors.Is(err, errUsage) {
		t.Fatalf("error %v, want the cases failed", err)
	}
	for _, want := range []string{
		"FAIL " + dir + "/team.yaml:23: team: installing a package is refused\n",
		"    - decision:    require_approval\n    + decision:    deny\n",
		"      reason_code: policy.matrix.package_install\n",
		"because: profile team rule matrix.package_install: deny\n",
		"PASS: 6/7\nFAIL: 1/7\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}

	// A case of a profile that is not loaded fails; it does not pass
	// unexamined.
	out, err = policyCmd(t, envConfig{}, "test", casesDir)
	if !errors.Is(err, errCasesFailed) || !strings.Contains(out, `profile "team" is not loaded (have default)`) || !strings.Contains(out, "FAIL: 7/10") {
		t.Fatalf("without the team profile: %v\n%s", err, out)
	}
}

func TestPolicyTestUsage(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{{"test"}, {"test", "a", "b"}, {"test", "--bogus", casesDir}} {
		if _, err := policyCmd(t, envConfig{}, args...); !errors.Is(err, errUsage) {
			t.Errorf("%v: %v, want a usage error", args, err)
		}
	}
	if _, err := policyCmd(t, envConfig{}, "test", t.TempDir()); err == nil || errors.Is(err, errUsage) || !strings.Contains(err.Error(), "no *.yaml case files") {
		t.Fatalf("an empty directory: %v", err)
	}
}

// TestPolicyDiffShippedExamples: the proposed change's versions, the
// rules that differ and the two case decisions it changes; --exit-code
// turns changes into exit 1, and a diff of a directory with itself has
// nothing to say.
func TestPolicyDiffShippedExamples(t *testing.T) {
	t.Parallel()
	from, err := rules.Load(rules.Options{PolicyDir: examplesDir})
	if err != nil {
		t.Fatal(err)
	}
	to, err := rules.Load(rules.Options{PolicyDir: proposedDir})
	if err != nil {
		t.Fatal(err)
	}
	was, _ := from.Ruleset("team")
	will, _ := to.Ruleset("team")
	out, err := policyCmd(t, envConfig{}, "diff", "--from", examplesDir, "--to", proposedDir, "--cases", casesDir)
	if err != nil {
		t.Fatal(err)
	}
	want := "profile default: unchanged (" + from.DefaultRuleset().PolicyVersion() + ")\n" +
		"profile team: " + was.PolicyVersion() + " -> " + will.PolicyVersion() + "\n" +
		"  + approvals.quorum.high: 2\n" +
		"  ~ matrix.package_install: deny -> require_approval\n" +
		"  ~ matrix.publication: require_approval -> deny\n" +
		"cases (" + casesDir + "): 2 of 10 decisions change\n" +
		"  " + casesDir + "/team.yaml:14: team: publishing a post goes to a human\n" +
		"    - require_approval policy.matrix.publication\n    + deny policy.matrix.publication\n" +
		"  " + casesDir + "/team.yaml:23: team: installing a package is refused\n" +
		"    - deny policy.matrix.package_install\n    + require_approval policy.matrix.package_install\n"
	if out != want {
		t.Fatalf("diff:\n%s\nwant:\n%s", out, want)
	}
	if _, err := policyCmd(t, envConfig{}, "diff", "--from", examplesDir, "--to", proposedDir, "--cases", casesDir, "--exit-code"); !errors.Is(err, errPolicyChanges) {
		t.Fatalf("--exit-code with changes: %v", err)
	}
	out, err = policyCmd(t, envConfig{}, "diff", "--from", examplesDir, "--to", examplesDir, "--cases", casesDir, "--exit-code")
	if err != nil || !strings.Contains(out, "profile team: unchanged") || !strings.Contains(out, "0 of 10 decisions change") {
		t.Fatalf("no change: %v\n%s", err, out)
	}
	// A profile the deploy removes voids its runs' approvals: a change.
	out, err = policyCmd(t, envConfig{}, "diff", "--from", examplesDir, "--to", t.TempDir(), "--exit-code")
	if !errors.Is(err, errPolicyChanges) || !strings.Contains(out, "profile team: removed") {
		t.Fatalf("removed profile: %v\n%s", err, out)
	}
	for _, args := range [][]string{{"diff"}, {"diff", "--from", examplesDir}, {"diff", "--from", examplesDir, "--to", proposedDir, "extra"}} {
		if _, err := policyCmd(t, envConfig{}, args...); !errors.Is(err, errUsage) {
			t.Errorf("%v: %v, want a usage error", args, err)
		}
	}
}

// TestPolicyDiffPendingApprovals: with a database, the diff revalidates
// the pending approvals as resume would: the team run's blog post, which
// the proposed profile denies, would be voided; the default profile's
// approval is untouched.
func TestPolicyDiffPendingApprovals(t *testing.T) {
	t.Parallel()
	dbURL := testdb.NewDatabase(t, "console_policy_diff")
	kept := parkedApproval(t, dbURL)
	voided := parkedApprovalUnder(t, dbURL, rules.Options{PolicyDir: examplesDir}, "team", engine.ActionRequest{
		ActionID: uuid.NewString(), Kind: engine.ActionToolCall, Name: "blog.publish", Summary: "publish",
		StepNumber: 1, Arguments: map[string]any{"title": "t", "body": "b"}, OriginTrust: engine.TrustUser,
	})
	env := envConfig{DatabaseURL: dbURL}
	out, err := policyCmd(t, env, "diff", "--from", examplesDir, "--to", proposedDir)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out, "pending approvals: 1 of 2 would be voided at resume\n") ||
		!strings.Contains(out, voided+" tenant acme run ") ||
		!strings.Contains(out, "(profile team) high blog.publish: voided, policy_escalated (policy.revalidation.escalated)\n"+
			"    - require_approval policy.matrix.publication\n    + deny policy.matrix.publication\n") ||
		strings.Contains(out, kept) {
		t.Fatalf("diff:\n%s", out)
	}
	if _, err := policyCmd(t, env, "diff", "--from", examplesDir, "--to", proposedDir, "--exit-code"); !errors.Is(err, errPolicyChanges) {
		t.Fatalf("--exit-code with a voided approval: %v", err)
	}
	// Deploying the same profiles voids nothing.
	out, err = policyCmd(t, env, "diff", "--from", examplesDir, "--to", examplesDir, "--exit-code")
	if err != nil || !strings.Contains(out, "pending approvals: 0 of 2 would be voided") {
		t.Fatalf("same policy: %v\n%s", err, out)
	}
}

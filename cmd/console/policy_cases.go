package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
	"time"

	"gatehouse/rules"
	"gatehouse/service"
)

// errCasesFailed is `policy test`'s failure: the report is already on
// stdout, so the error only says how many.
var errCasesFailed = errors.New("cases failed")

// caseResult is what a case got under one set: the decision and reason
// code, or why it could not be evaluated (its profile is not loaded).
type caseResult struct {
	Decision, ReasonCode, Explanation, PolicyVersion string
	Err                                              string
}

func (r caseResult) String() string {
	if r.Err != "" {
		return r.Err
	}
	return r.Decision + " " + r.ReasonCode
}

// evalCase gates a case's action as `policy eval` does: a dry run, no
// database, a synthetic run whose stamped scopes are the case's.
func evalCase(set *rules.Set, c rules.Case, now time.Time) caseResult {
	rs, ok := set.Ruleset(c.Profile)
	if !ok {
		return caseResult{Err: fmt.Sprintf("profile %q is not loaded (have %s)", c.Profile, strings.Join(set.Profiles(), ", "))}
	}
	d := service.DryRun(set.Catalog(), rs, c.Action, c.Scopes, now).Decision
	return caseResult{Decision: string(d.Decision), ReasonCode: d.ReasonCode, Explanation: d.Explanation, PolicyVersion: rs.PolicyVersion()}
}

// policyFlags are the files `policy test` and `policy diff` load a set
// from; they default to the environment's (CONSOLE_MCP's tools included),
// as `serve` does.
func policyFlags(fs *flag.FlagSet, env envConfig) (*rules.Options, error) {
	o, err := env.policyOptions()
	if err != nil {
		return nil, err
	}
	fs.StringVar(&o.PolicyDir, "policy-dir", o.PolicyDir, "operator profiles (default: CONSOLE_POLICY_DIR)")
	fs.StringVar(&o.ToolsFile, "tools", o.ToolsFile, "operator tool catalog (default: CONSOLE_TOOLS)")
	return &o, nil
}

// runPolicyTest is `console policy test [--policy-dir D] [--tools F] [-v]
// CASES_DIR`: every case file of CASES_DIR against the loaded profiles,
// each failure shown as want/got lines, then the totals as `opa test`
// prints them. Any failing case is an error (exit 1), so CI can run it.
func runPolicyTest(env envConfig, args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("policy test", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	opts, err := policyFlags(fs, env)
	if err != nil {
		return fmt.Errorf("policy test: %w", err)
	}
	verbose := fs.Bool("v", false, "list passing cases too")
	if err := fs.Parse(args); err != nil {
		return fmt.Errorf("%w: policy test: %w", errUsage, err)
	}
	if fs.NArg() != 1 {
		return fmt.Errorf("%w: policy test [--policy-dir DIR] [--tools FILE] [-v] CASES_DIR", errUsage)
	}
	set, err := rules.Load(*opts)
	if err != nil {
		return fmt.Errorf("policy test: %w", err)
	}
	cases, err := rules.LoadCases(fs.Arg(0))
	if err != nil {
		return fmt.Errorf("policy test: %w", err)
	}
	now := time.Now().UTC()
	failed := 0
	var b strings.Builder
	for _, c := range cases {
		got := evalCase(set, c, now)
		want := caseResult{Decision: string(c.Expect.Decision), ReasonCode: c.Expect.ReasonCode}
		if got.Err == "" && got.Decision == want.Decision && got.ReasonCode == want.ReasonCode {
			if *verbose {
				fmt.Fprintf(&b, "PASS %s: %s\n", c.Where(), c.Name)
			}
			continue
		}
		failed++
		fmt.Fprintf(&b, "FAIL %s: %s\n", c.Where(), c.Name)
		if got.Err != "" {
			fmt.Fprintf(&b, "    %s\n", got.Err)
			continue
		}
		fmt.Fprintf(&b, "    profile %s\n", got.PolicyVersion)
		diffLine(&b, "decision", want.Decision, got.Decision)
		diffLine(&b, "reason_code", want.ReasonCode, got.ReasonCode)
		fmt.Fprintf(&b, "    because: %s\n", got.Explanation)
	}
	if failed > 0 || *verbose {
		b.WriteString(strings.Repeat("-", 80) + "\n")
	}
	if passed := len(cases) - failed; passed > 0 {
		fmt.Fprintf(&b, "PASS: %d/%d\n", passed, len(cases))
	}
	if failed > 0 {
		fmt.Fprintf(&b, "FAIL: %d/%d\n", failed, len(cases))
	}
	if _, err := io.WriteString(stdout, b.String()); err != nil {
		return err
	}
	if failed > 0 {
		return fmt.Errorf("policy test: %d of %d %w", failed, len(cases), errCasesFailed)
	}
	return nil
}

// diffLine writes one field as a unified diff does: unchanged once, a
// change as - want / + got.
func diffLine(b *strings.Builder, field, want, got string) {
	if want == got {
		fmt.Fprintf(b, "      %-12s %s\n", field+":", got)
		return
	}
	fmt.Fprintf(b, "    - %-12s %s\n    + %-12s %s\n", field+":", want, field+":", got)
}

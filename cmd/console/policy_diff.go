package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"gatehouse/engine"
	"gatehouse/rules"
	"gatehouse/service"
)

// errPolicyChanges is `policy diff --exit-code`'s answer when the deploy
// changes a decision or voids an approval, as `git diff --exit-code`.
var errPolicyChanges = errors.New("the policy change changes decisions")

// maxPreviewApprovals bounds how many pending approvals a diff revalidates.
const maxPreviewApprovals = 10000

// runPolicyDiff is `console policy diff --from DIR --to DIR [--tools F]
// [--cases DIR] [--database-url URL] [--exit-code]`: what deploying the
// profiles of --to over those of --from (each a CONSOLE_POLICY_DIR; the
// built-in profiles are the same on both sides) would change: each
// profile's policy_version and the rules and settings that differ; for
// the case files, the decisions that change; with a database, each pending
// approval the deploy would void, by the revalidation resume runs.
func runPolicyDiff(ctx context.Context, env envConfig, args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("policy diff", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	opts, err := policyFlags(fs, env)
	if err != nil {
		return fmt.Errorf("policy diff: %w", err)
	}
	from := fs.String("from", "", "the policy directory deployed now")
	to := fs.String("to", "", "the policy directory to deploy")
	cases := fs.String("cases", "", "case files to evaluate under both")
	dbURL := fs.String("database-url", env.DatabaseURL, "PostgreSQL connection string (DATABASE_URL): revalidate the pending approvals")
	exitCode := fs.Bool("exit-code", false, "exit 1 when a decision changes or an approval would be voided")
	if err := fs.Parse(args); err != nil {
		return fmt.Errorf("%w: policy diff: %w", errUsage, err)
	}
	if fs.NArg() > 0 || *from == "" || *to == "" {
		return fmt.Errorf("%w: policy diff --from DIR --to DIR [--tools FILE] [--cases DIR] [--database-url URL] [--exit-code]", errUsage)
	}
	load := func(dir string) (*rules.Set, error) {
		o := *opts
		o.PolicyDir = dir
		set, err := rules.Load(o)
		if err != nil {
			return nil, fmt.Errorf("policy diff: %w", err)
		}
		return set, nil
	}
	fromSet, err := load(*from)
	if err != nil {
		return err
	}
	toSet, err := load(*to)
	if err != nil {
		return err
	}
	var b strings.Builder
	changes := diffProfiles(&b, fromSet, toSet)
	now := time.Now().UTC()
	if *cases != "" {
		cs, err := rules.LoadCases(*cases)
		if err != nil {
			return fmt.Errorf("policy diff: %w", err)
		}
		changes += diffCases(&b, *cases, cs, fromSet, toSet, now)
	}
	if *dbURL != "" {
		n, err := diffPending(ctx, &b, *dbURL, toSet, now)
		if err != nil {
			return err
		}
		changes += n
	}
	if _, err := io.WriteString(stdout, b.String()); err != nil {
		return err
	}
	if *exitCode && changes > 0 {
		return fmt.Errorf("policy diff: %w", errPolicyChanges)
	}
	return nil
}

// diffProfiles writes, per profile of either set, its policy_versions and
// the rules and settings that differ. It counts removed profiles only as
// changes: what a rule change does shows in the decisions below.
func diffProfiles(b *strings.Builder, from, to *rules.Set) int {
	names := slices.Compact(slices.Sorted(slices.Values(append(from.Profiles(), to.Profiles()...))))
	removed := 0
	for _, name := range names {
		f, inFrom := from.Ruleset(name)
		t, inTo := to.Ruleset(name)
		switch {
		case !inTo:
			removed++
			fmt.Fprintf(b, "profile %s: removed (%s); its runs' approvals are voided at resume\n", name, f.PolicyVersion())
			continue
		case !inFrom:
			fmt.Fprintf(b, "profile %s: added (%s)\n", name, t.PolicyVersion())
			continue
		case f.PolicyVersion() == t.PolicyVersion():
			fmt.Fprintf(b, "profile %s: unchanged (%s)\n", name, t.PolicyVersion())
			continue
		}
		fmt.Fprintf(b, "profile %s: %s -> %s\n", name, f.PolicyVersion(), t.PolicyVersion())
		fd, td := describeProfile(f.Profile()), describeProfile(t.Profile())
		both := maps.Clone(fd)
		maps.Copy(both, td)
		for _, k := range slices.Sorted(maps.Keys(both)) {
			old, inOld := fd[k]
			cur, inCur := td[k]
			switch {
			case !inCur:
				fmt.Fprintf(b, "  - %s: %s\n", k, old)
			case !inOld:
				fmt.Fprintf(b, "  + %s: %s\n", k, cur)
			case old != cur:
				fmt.Fprintf(b, "  ~ %s: %s -> %s\n", k, old, cur)
			}
		}
	}
	return removed
}

// describeProfile is a profile as rule id or setting -> one line, so two
// profiles compare key by key. The comments and layout of the file are
// not in it: they move policy_version and change nothing else.
func describeProfile(p engine.Profile) map[string]string {
	out := map[string]string{
		"approvals.require_distinct_resolver": strconv.FormatBool(p.RequireDistinctResolver),
		"advisory.enabled":                    strconv.FormatBool(p.AdvisoryEnabled),
	}
	for _, r := range slices.Concat(p.Rules, p.ToolRules) {
		out[r.ID] = describeRule(r)
	}
	for risk, d := range p.Expiry {
		out["approvals.expiry."+string(risk)] = d.String()
	}
	for risk, n := range p.Quorum {
		out["approvals.quorum."+string(risk)] = strconv.Itoa(n)
	}
	return out
}

func describeRule(r engine.ProfileRule) string {
	s := string(r.Decision)
	if r.Condition != "" {
		s += " if " + r.Condition + ", else " + string(r.Otherwise)
	}
	if r.ApprovalWhen != "" {
		s += "; require_approval when " + r.ApprovalWhen
	}
	if r.HumanConfirmsArguments {
		s += "; human_confirms_arguments"
	}
	if r.ArgumentsMustAuthorize {
		s += "; arguments_must_authorize"
	}
	if m := r.Modifications; m != nil {
		s += fmt.Sprintf("; set %v remove %v", m.Set, m.Remove)
	}
	return s
}

// diffCases writes each case whose decision or reason code differs
// between the sets, and returns how many.
func diffCases(b *strings.Builder, dir string, cases []rules.Case, from, to *rules.Set, now time.Time) int {
	var lines strings.Builder
	changed := 0
	for _, c := range cases {
		was, will := evalCase(from, c, now), evalCase(to, c, now)
		if was.String() == will.String() {
			continue
		}
		changed++
		fmt.Fprintf(&lines, "  %s: %s\n    - %s\n    + %s\n", c.Where(), c.Name, was, will)
	}
	fmt.Fprintf(b, "cases (%s): %d of %d decisions change\n%s", dir, changed, len(cases), lines.String())
	return changed
}

// diffPending writes each pending approval the deploy would void and
// returns how many.
func diffPending(ctx context.Context, b *strings.Builder, dbURL string, to *rules.Set, now time.Time) (int, error) {
	pool, err := connect(ctx, dbURL)
	if err != nil {
		return 0, fmt.Errorf("policy diff: %w", err)
	}
	defer pool.Close()
	verdicts, err := service.PreviewDeploy(ctx, pool, to, now, maxPreviewApprovals)
	if err != nil {
		return 0, fmt.Errorf("policy diff: %w", err)
	}
	var lines strings.Builder
	voided := 0
	for _, v := range verdicts {
		if v.Outcome.Authorized {
			continue
		}
		voided++
		a := v.Approval
		fmt.Fprintf(&lines, "  %s tenant %s run %s (profile %s) %s %s: voided, %s (%s)\n", a.ID, a.TenantID, a.RunID, orDash(v.Profile), a.Risk, a.ToolName, v.Outcome.Cause, v.Outcome.ReasonCode)
		if d := v.Outcome.Decision; d != nil {
			fmt.Fprintf(&lines, "    - %s %s\n    + %s %s\n", v.Decision.Decision, v.Decision.ReasonCode, d.Decision, d.ReasonCode)
		}
	}
	fmt.Fprintf(b, "pending approvals: %d of %d would be voided at resume\n%s", voided, len(verdicts), lines.String())
	return voided, nil
}

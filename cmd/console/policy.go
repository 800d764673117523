package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
	"time"

	"gatehouse/engine"
	"gatehouse/rules"
	"gatehouse/service"
)

// maxEvalInput bounds `policy eval`'s stdin like the API bounds a body.
const maxEvalInput = 1 << 20

// runPolicy is `console policy version|check|eval|test|diff`: the loaded policy, read
// from the same files and environment variables `serve` reads.
func runPolicy(ctx context.Context, env envConfig, args []string, stdin io.Reader, stdout io.Writer) error {
	if len(args) == 0 {
		return fmt.Errorf("%w: policy needs version, check, eval, test or diff", errUsage)
	}
	switch args[0] {
	case "test":
		return runPolicyTest(env, args[1:], stdout)
	case "diff":
		return runPolicyDiff(ctx, env, args[1:], stdout)
	}
	fs := flag.NewFlagSet("policy "+args[0], flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	profile := fs.String("profile", "", "profile (default: CONSOLE_POLICY_PROFILE or default)")
	if err := fs.Parse(args[1:]); err != nil {
		return fmt.Errorf("%w: policy %s: %w", errUsage, args[0], err)
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("%w: policy %s takes no arguments", errUsage, args[0])
	}
	opts, err := env.policyOptions()
	if err != nil {
		return fmt.Errorf("policy: %w", err)
	}
	set, err := rules.Load(opts)
	if err != nil {
		return fmt.Errorf("policy: %w", err)
	}
	switch args[0] {
	case "version":
		rs, err := selectRuleset(set, *profile)
		if err != nil {
			return err
		}
		_, err = fmt.Fprintln(stdout, rs.PolicyVersion())
		return err
	case "check":
		return policyCheck(set, stdout)
	case "eval":
		return policyEval(set, *profile, stdin, stdout)
	default:
		return fmt.Errorf("%w: unknown policy command %q", errUsage, args[0])
	}
}

func selectRuleset(set *rules.Set, profile string) (*engine.LoadedRuleset, error) {
	rs, ok := set.Ruleset(profile)
	if !ok {
		return nil, fmt.Errorf("policy: no profile %q (loaded: %s)", profile, strings.Join(set.Profiles(), ", "))
	}
	return rs, nil
}

// policyCheck reports what loaded; loading already validated everything.
func policyCheck(set *rules.Set, stdout io.Writer) error {
	for _, name := range set.Profiles() {
		rs, _ := set.Ruleset(name)
		mark := ""
		if name == set.DefaultProfile() {
			mark = " (default)"
		}
		if _, err := fmt.Fprintf(stdout, "profile %s%s: %s, %d rules, %d hardline rules\n", name, mark, rs.PolicyVersion(), rs.RuleCount(), rs.HardlineCount()); err != nil {
			return err
		}
	}
	_, err := fmt.Fprintf(stdout, "catalog: %d tools\nok\n", set.Catalog().Len())
	return err
}

type evalInput struct {
	Action  json.RawMessage `json:"action"`
	Scopes  []string        `json:"scopes"`
	Profile string          `json:"profile"`
}

type evalOutput struct {
	Decision      engine.PolicyDecisionType `json:"decision"`
	ReasonCode    string                    `json:"reason_code"`
	PolicyVersion string                    `json:"policy_version"`
	Explanation   string                    `json:"explanation"`
	Risk          engine.RiskLevel          `json:"risk"`
	SideEffect    engine.SideEffectClass    `json:"side_effect"`
	MissingScopes []string                  `json:"missing_scopes,omitempty"`
}

// policyEval dry-runs the gate: no database, a synthetic run whose stamped
// scopes are the input's.
func policyEval(set *rules.Set, profileFlag string, stdin io.Reader, stdout io.Writer) error {
	b, err := io.ReadAll(io.LimitReader(stdin, maxEvalInput+1))
	if err != nil {
		return fmt.Errorf("policy eval: read stdin: %w", err)
	}
	if len(b) > maxEvalInput {
		return errors.New("policy eval: input exceeds 1 MiB")
	}
	var in evalInput
	if err := engine.DecodeStrict(b, &in); err != nil {
		return fmt.Errorf("policy eval: %w", err)
	}
	if len(in.Action) == 0 {
		return errors.New("policy eval: input has no action")
	}
	req, err := engine.DecodeActionRequest(in.Action)
	if err != nil {
		return fmt.Errorf("policy eval: action: %w", err)
	}
	profile := in.Profile
	if profileFlag != "" {
		profile = profileFlag
	}
	rs, err := selectRuleset(set, profile)
	if err != nil {
		return err
	}
	out := service.DryRun(set.Catalog(), rs, req, in.Scopes, time.Now().UTC())
	enc := json.NewEncoder(stdout)
	enc.SetIndent("", "  ")
	return enc.Encode(evalOutput{
		Decision:      out.Decision.Decision,
		ReasonCode:    out.Decision.ReasonCode,
		PolicyVersion: out.Decision.PolicyVersion,
		Explanation:   out.Decision.Explanation,
		Risk:          out.Decision.Risk,
		SideEffect:    out.Decision.SideEffect,
		MissingScopes: out.MissingScopes,
	})
}

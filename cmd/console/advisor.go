package main

import (
	"fmt"
	"log/slog"
	"strconv"
	"time"

	"gatehouse/advisor"
	"gatehouse/engine"
	"gatehouse/rules"
)

// advisoryEnv is the advisory layer's environment (README "The advisory
// layer"). The layer is off unless AGENT_POLICY_ADVISORY_OBSERVE_ENABLED
// is set or a loaded profile says advisory.enabled; only then is an
// advisor built, from the AGENT_POLICY_ADVISOR_* variables.
type advisoryEnv struct {
	observe    bool   // AGENT_POLICY_ADVISORY_OBSERVE_ENABLED=1 (or true)
	baseURL    string // AGENT_POLICY_ADVISOR_BASE_URL, e.g. http://127.0.0.1:11434/v1
	model      string // AGENT_POLICY_ADVISOR_MODEL
	apiKeyEnv  string // AGENT_POLICY_ADVISOR_API_KEY_ENV: the variable holding the key
	timeoutDds string // AGENT_POLICY_ADVISOR_TIMEOUT_DECISECONDS; default 20
	getenv     func(string) string
}

func loadAdvisoryEnv(getenv func(string) string) advisoryEnv {
	observe := getenv("AGENT_POLICY_ADVISORY_OBSERVE_ENABLED")
	return advisoryEnv{
		observe:    observe == "1" || observe == "true",
		baseURL:    getenv("AGENT_POLICY_ADVISOR_BASE_URL"),
		model:      getenv("AGENT_POLICY_ADVISOR_MODEL"),
		apiKeyEnv:  getenv("AGENT_POLICY_ADVISOR_API_KEY_ENV"),
		timeoutDds: getenv("AGENT_POLICY_ADVISOR_TIMEOUT_DECISECONDS"),
		getenv:     getenv,
	}
}

// compose is the advisor the service consults, or nil. Off (no profile
// enforcing, not observing): nil, and nothing is built whatever the
// advisor variables say. On with no endpoint or model: nil too, and the
// service warns once that decisions stay deterministic. A malformed
// setting refuses the start.
func (e advisoryEnv) compose(policy *rules.Set, logger *slog.Logger) (engine.PolicyAdvisor, error) {
	enforcing := false
	for _, name := range policy.Profiles() {
		if rs, ok := policy.Ruleset(name); ok && rs.AdvisoryEnabled() {
			enforcing = true
		}
	}
	if !enforcing && !e.observe {
		return nil, nil
	}
	if e.baseURL == "" || e.model == "" {
		return nil, nil
	}
	timeout := advisor.DefaultTimeout
	if e.timeoutDds != "" {
		n, err := strconv.Atoi(e.timeoutDds)
		if err != nil || n < 1 || n > 600 {
			return nil, fmt.Errorf("AGENT_POLICY_ADVISOR_TIMEOUT_DECISECONDS %q: want an integer from 1 to 600", e.timeoutDds)
		}
		timeout = time.Duration(n) * 100 * time.Millisecond
	}
	j, err := advisor.New(advisor.Config{BaseURL: e.baseURL, Model: e.model, APIKeyEnv: e.apiKeyEnv, Timeout: timeout, Getenv: e.getenv})
	if err != nil {
		return nil, fmt.Errorf("advisory layer: %w", err)
	}
	logger.Info("advisory layer on", "observe", e.observe, "enforcing_profile", enforcing,
		"advisor_version", j.Version(), "model", e.model, "timeout", timeout.String())
	return j, nil
}

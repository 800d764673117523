package main

import (
	"log/slog"
	"testing"

	"gatehouse/rules"
)

// TestGate18NoAdvisorConstructedWhenOff: with the shipped profile (the
// layer not enforced) and the observe flag unset, no advisor is built even
// when an endpoint is configured; observing builds one only with an
// endpoint and a model; a malformed timeout refuses the start.
func TestGate18NoAdvisorConstructedWhenOff(t *testing.T) {
	t.Parallel()
	policy, err := rules.Load(rules.Options{})
	if err != nil {
		t.Fatal(err)
	}
	env := func(vars map[string]string) advisoryEnv {
		return loadAdvisoryEnv(func(k string) string { return vars[k] })
	}
	endpoint := map[string]string{
		"AGENT_POLICY_ADVISOR_BASE_URL": "http://127.0.0.1:11434/v1",
		"AGENT_POLICY_ADVISOR_MODEL":    "llama3.2",
	}
	with := func(extra map[string]string) map[string]string {
		m := map[string]string{}
		for k, v := range endpoint {
			m[k] = v
		}
		for k, v := range extra {
			m[k] = v
		}
		return m
	}
	for _, tc := range []struct {
		name    string
		vars    map[string]string
		built   bool
		wantErr bool
	}{
		{"off with an endpoint", endpoint, false, false},
		{"observe flag other than 1", with(map[string]string{"AGENT_POLICY_ADVISORY_OBSERVE_ENABLED": "0"}), false, false},
		{"observing", with(map[string]string{"AGENT_POLICY_ADVISORY_OBSERVE_ENABLED": "1"}), true, false},
		{"observing, no endpoint", map[string]string{"AGENT_POLICY_ADVISORY_OBSERVE_ENABLED": "1"}, false, false},
		{"bad timeout", with(map[string]string{"AGENT_POLICY_ADVISORY_OBSERVE_ENABLED": "1", "AGENT_POLICY_ADVISOR_TIMEOUT_DECISECONDS": "0.5"}), false, true},
		{"bad base URL", map[string]string{"AGENT_POLICY_ADVISORY_OBSERVE_ENABLED": "1", "AGENT_POLICY_ADVISOR_BASE_URL": "localhost:11434", "AGENT_POLICY_ADVISOR_MODEL": "m"}, false, true},
	} {
		adv, err := env(tc.vars).compose(policy, slog.New(slog.DiscardHandler))
		if (err != nil) != tc.wantErr || (adv != nil) != tc.built {
			t.Errorf("%s: advisor %v, err %v", tc.name, adv, err)
		}
	}
}

package main

import (
	"bytes"
	"encoding/json"
	"os"
	"strings"
	"testing"

	"gatehouse/rules"
)

func TestPolicyCommands(t *testing.T) {
	t.Setenv("CONSOLE_POLICY_DIR", "")
	t.Setenv("CONSOLE_TOOLS", "")
	t.Setenv("CONSOLE_POLICY_PROFILE", "")
	set, err := rules.Load(rules.Options{})
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := runPolicy(t.Context(), loadEnvConfig(os.Getenv), []string{"version"}, nil, &out); err != nil || strings.TrimSpace(out.String()) != set.DefaultRuleset().PolicyVersion() {
		t.Fatalf("version: %v %q", err, out.String())
	}
	out.Reset()
	if err := runPolicy(t.Context(), loadEnvConfig(os.Getenv), []string{"check"}, nil, &out); err != nil || !strings.HasSuffix(out.String(), "ok\n") {
		t.Fatalf("check: %v %q", err, out.String())
	}

	eval := func(in string) (map[string]any, error) {
		var buf bytes.Buffer
		if err := runPolicy(t.Context(), loadEnvConfig(os.Getenv), []string{"eval"}, strings.NewReader(in), &buf); err != nil {
			return nil, err
		}
		var m map[string]any
		return m, json.Unmarshal(buf.Bytes(), &m)
	}
	action := `{"action_id":"00000000-0000-4000-8000-000000000001","kind":"tool_call","name":"demo.external_write","summary":"s","step_number":1,"arguments":{"record":"r","field":"f","value":"v"},"argument_trust":{},"origin_trust":"user"}`
	m, err := eval(`{"action":` + action + `,"scopes":["demo.write"]}`)
	if err != nil || m["decision"] != "require_approval" || m["reason_code"] != "policy.matrix.external_write" || m["policy_version"] != set.DefaultRuleset().PolicyVersion() {
		t.Fatalf("eval: %v %v", err, m)
	}
	if _, ok := m["missing_scopes"]; ok {
		t.Fatal("missing_scopes on a decision without missing scopes")
	}
	m, err = eval(`{"action":` + action + `,"scopes":[]}`)
	if err != nil || m["reason_code"] != "policy.scope.missing" || m["missing_scopes"].([]any)[0] != "demo.write" {
		t.Fatalf("eval without scope: %v %v", err, m)
	}
	for _, bad := range []string{
		`{"action":` + action + `,"extra":1}`, `{"scopes":[]}`, `{"action":{"bogus":1}}`, strings.Repeat(" ", 1<<20+1),
		// The strict decoder: a duplicate key, invalid UTF-8, a step_number
		// no column holds.
		`{"action":` + action + `,"scopes":[],"scopes":["demo.write"]}`,
		`{"action":` + strings.Replace(action, `"value":"v"`, "\"value\":\"v\xff\"", 1) + `,"scopes":[]}`,
		`{"action":` + strings.Replace(action, `"step_number":1`, `"step_number":2147483648`, 1) + `,"scopes":[]}`,
	} {
		if _, err := eval(bad); err == nil {
			t.Errorf("accepted %.60q", bad)
		}
	}
	if err := runPolicy(t.Context(), loadEnvConfig(os.Getenv), []string{"version", "--profile", "nope"}, nil, &out); err == nil {
		t.Fatal("unknown profile accepted")
	}
}

package bench

import (
	"fmt"
	"sort"

	"gatehouse/engine"
	"gatehouse/rules"
)

// regoData turns the loaded Go ruleset into the Rego policy's data document,
// so OPA decides with exactly the rules Gatehouse loaded.
func regoData(set *rules.Set) (map[string]any, error) {
	catalog := map[string]any{}
	for _, t := range set.Catalog.Tools() {
		catalog[t.Name] = map[string]any{
			"kind":            string(t.Kind),
			"side_effect":     string(t.SideEffect),
			"risk":            string(t.Risk),
			"idempotency":     string(t.Idempotency),
			"required_scopes": strs(t.RequiredScopes),
			"target":          t.Target,
		}
	}

	names := make([]string, 0, len(set.Rulesets))
	for name := range set.Rulesets {
		names = append(names, name)
	}
	sort.Strings(names)
	profiles := map[string]any{}
	var hardline []engine.HardlineRule
	for _, name := range names {
		rs := set.Rulesets[name]
		p := rs.Profile()
		rows := map[string]any{}
		for _, r := range p.Rules {
			key := string(r.SideEffect)
			if r.Risk != "" {
				key += "." + string(r.Risk)
			}
			rows[key] = row(r)
		}
		toolRules := map[string]any{}
		for _, r := range p.ToolRules {
			toolRules[r.Tool] = row(r)
		}
		profiles[name] = map[string]any{"rows": rows, "tool_rules": toolRules}
		// Hardline is one set for every profile; any ruleset carries it.
		hardline = rs.Hardline()
	}
	if len(hardline) == 0 {
		return nil, fmt.Errorf("rego data: the loaded rules have no hardline set")
	}

	hl := make([]any, 0, len(hardline))
	for _, r := range hardline {
		applies := make([]string, 0, len(r.AppliesTo))
		for _, s := range r.AppliesTo {
			applies = append(applies, string(s))
		}
		hl = append(hl, map[string]any{
			"id":           r.ID,
			"kind":         r.Kind,
			"applies_to":   strs(applies),
			"pattern":      r.Pattern,
			"arguments":    strs(r.Arguments),
			"message_code": r.MessageCode,
		})
	}

	return map[string]any{
		"catalog":             catalog,
		"profiles":            profiles,
		"hardline":            hl,
		"egress":              map[string]any{"hosts": strs(metadataHosts), "cidrs": strs(metadataCIDRs)},
		"credential_patterns": strs(credentialPatterns),
	}, nil
}

func row(r engine.ProfileRule) map[string]any {
	return map[string]any{
		"condition":                r.Condition,
		"decision":                 string(r.Decision),
		"otherwise":                string(r.Otherwise),
		"human_confirms_arguments": r.HumanConfirmsArguments,
	}
}

// strs makes a nil slice an empty JSON array, which Rego iterates as empty.
func strs(s []string) []any {
	out := make([]any, 0, len(s))
	for _, v := range s {
		out = append(out, v)
	}
	return out
}

// The egress_host and credential_egress rules carry no pattern in the
// ruleset: their hosts and value shapes are the engine's. These mirror it.
var (
	metadataHosts      = []string{"169.254.169.254", "fd00:ec2::254", "metadata.google.internal"}
	metadataCIDRs      = []string{"169.254.0.0/16", "fe80::/10"}
	credentialPatterns = []string{}
)

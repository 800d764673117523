package bench

import (
	"fmt"
	"net/netip"
	"strings"

	"gatehouse/engine"
	"gatehouse/rules"
)

// regoData turns the loaded Go ruleset into the Rego policy's data document,
// so OPA decides with exactly the rules Gatehouse loaded.
func regoData(set *rules.Set) (map[string]any, error) {
	catalog := map[string]any{}
	for _, t := range set.Catalog().Tools() {
		catalog[t.Name] = map[string]any{
			"kind":            string(t.Kind),
			"side_effect":     string(t.SideEffect),
			"risk":            string(t.Risk),
			"idempotency":     string(t.Idempotency),
			"required_scopes": strs(t.RequiredScopes),
			"target":          t.Target,
			"mcp_server_id":   t.MCPServerID,
			"version":         t.Version,
		}
	}

	names := set.Profiles()
	profiles := map[string]any{}
	var hardline []engine.HardlineRule
	for _, name := range names {
		rs, _ := set.Ruleset(name)
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
		hosts, cidrs := egressHosts(r)
		hl = append(hl, map[string]any{
			"hostnames":    strs(hosts),
			"cidrs":        strs(cidrs),
			"id":           r.ID,
			"kind":         r.Kind,
			"applies_to":   strs(applies),
			"pattern":      r.Pattern,
			"arguments":    strs(r.Arguments),
			"message_code": r.MessageCode,
		})
	}

	return map[string]any{
		"catalog":            catalog,
		"profiles":           profiles,
		"hardline":           hl,
		"credential_pattern": credentialPattern,
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

// egressHosts splits an egress_host pattern as the engine does: addresses
// and CIDR ranges become ranges (net.cidr_contains), the rest host names.
func egressHosts(r engine.HardlineRule) (hosts, cidrs []string) {
	if r.Kind != engine.HardlineEgressHost {
		return nil, nil
	}
	for item := range strings.SplitSeq(r.Pattern, ",") {
		item = strings.TrimSpace(item)
		switch {
		case item == "":
		case strings.Contains(item, "/"):
			cidrs = append(cidrs, item)
		default:
			if a, err := netip.ParseAddr(item); err == nil {
				cidrs = append(cidrs, netip.PrefixFrom(a, a.BitLen()).String())
				continue
			}
			hosts = append(hosts, strings.TrimRight(strings.ToLower(item), "."))
		}
	}
	return hosts, cidrs
}

// credentialPattern is the engine's credential shapes as one expression,
// without the engine's normalized readings. TestCredentialPatternMatchesEngine
// checks the engine finds everything it does.
var credentialPattern = strings.Join([]string{
	`(?:AKIA|ASIA)[0-9A-Z]{16}`,
	`-----BEGIN[A-Z0-9 ]*PRIVATE KEY-----`,
	`(?:ghp|gho|ghs|ghu|ghr)_[A-Za-z0-9]{20,}`,
	`github_pat_[A-Za-z0-9_]{20,}`,
	`xox[abposr]-[A-Za-z0-9-]{10,}`,
	`(?:sk|rk)_live_[A-Za-z0-9]{16,}`,
	`sk-[A-Za-z0-9_-]{20,}`,
	`eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}`,
	`(?i:bearer)\s+[A-Za-z0-9._~+/=-]{20,}`,
	`AIza[0-9A-Za-z_-]{35}`,
	`[A-Za-z][A-Za-z0-9+.-]*://[^/\s:@]*:[^/\s@]+@`,
}, "|")

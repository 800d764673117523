# Gatehouse's gate decision in Rego, for the OPA comparison benchmark.
#
# The rules are not written here: the catalog, the profiles and the hardline
# set arrive as data generated from the loaded Go ruleset, so both evaluators
# decide with the same rules and only the evaluation logic is duplicated.
#
# input: {"action": <ActionRequest JSON>, "scopes": [...], "profile": "<name>"}
# data:  catalog, profiles, hardline (see opa_test.go, regoData)
# query: data.gatehouse.result -> {"decision", "reason_code"}
package gatehouse

unclassifiable := {"decision": "deny", "reason_code": "policy.unclassifiable_action"}

action := input.action

tool := data.catalog[action.name]

profile := data.profiles[input.profile]

# The order mirrors the gate: catalog and validation, the scope check, the
# hardline short-circuit, then the profile combined with the trust overlay.
result := unclassifiable if {
	not valid
} else := {"decision": "deny", "reason_code": "policy.scope.missing"} if {
	count(missing_scopes) > 0
} else := {"decision": "deny", "reason_code": hardline_code} if {
	hardline_code
} else := row_result if {
	not trust_escalated
} else := {"decision": "require_approval", "reason_code": "policy.trust.escalated"}

# --- catalog and validation ---------------------------------------------

trust_levels := {
	"platform", "trusted_configuration", "user", "internal_tool",
	"memory", "knowledge", "external_untrusted",
}

authorizing_origins := {"platform", "trusted_configuration", "user"}

valid if {
	tool
	profile
	action.kind == tool.kind
	action.origin_trust in trust_levels
	every label in object.get(action, "argument_trust", {}) {
		label in trust_levels
	}
}

missing_scopes := {s | some s in tool.required_scopes; not s in {x | some x in input.scopes}}

# A tool with a fixed target gets it whatever the request says.
target := object.union(object.get(action, "target", {}), {"kind": tool.target}) if {
	tool.target != ""
} else := object.get(action, "target", {})

arguments := object.get(action, "arguments", {})

# --- hardline -------------------------------------------------------------

# The first rule in file order that blocks names the reason.
hardline_code := data.hardline[min(blocking)].message_code

blocking contains i if {
	some i, rule in data.hardline
	tool.side_effect in rule.applies_to
	blocks(rule)
}

blocks(rule) if rule.kind == "side_effect"

blocks(rule) if {
	rule.kind == "command_regex"
	some v in read_values(rule)
	regex.match(rule.pattern, v)
}

blocks(rule) if {
	rule.kind == "path_pattern"
	some v in read_values(rule)
	regex.match(rule.pattern, v)
}

blocks(rule) if {
	rule.kind == "egress_host"
	some v in read_values(rule)
	metadata_host(url_host(v))
}

blocks(rule) if {
	rule.kind == "credential_egress"
	some v in read_values(rule)
	some p in data.credential_patterns
	regex.match(p, v)
}

# The strings a rule reads: the named arguments, or every string value.
read_values(rule) := {v |
	some name in rule.arguments
	some path, v in walk(arguments[name])
	is_string(v)
} if {
	count(rule.arguments) > 0
} else := {v |
	some path, v in walk(arguments)
	is_string(v)
}

url_host(s) := lower(trim_suffix(trim(m[0][1], "[]"), ".")) if {
	m := regex.find_all_string_submatch_n(`^(?:[a-zA-Z][a-zA-Z0-9+.-]*://)?(?:[^@/?#]*@)?(\[[^\]]*\]|[^:/?#]*)`, s, 1)
}

metadata_host(h) if h in {x | some x in data.egress.hosts}

metadata_host(h) if {
	some cidr in data.egress.cidrs
	net.cidr_contains(cidr, h)
}

# --- profile: tool rule, else the (side_effect, risk) row, else the row ----

tool_rule := profile.tool_rules[action.name]

row := tool_rule

row := profile.rows[concat(".", [tool.side_effect, tool.risk])] if not tool_rule

row := profile.rows[tool.side_effect] if {
	not tool_rule
	not profile.rows[concat(".", [tool.side_effect, tool.risk])]
}

reason := concat("", ["policy.tool_rule.", action.name]) if tool_rule else := concat("", ["policy.matrix.", tool.side_effect])

row_result := {"decision": row.decision, "reason_code": reason} if {
	condition(row.condition)
} else := {"decision": row.otherwise, "reason_code": reason} if {
	row
} else := unclassifiable

condition("")

condition("target_isolated") if target.isolated == true

condition("constructed_provider_target") if target.kind in {"web_provider", "browser_provider"}

condition("constructed_provider_target") if {
	target.kind == "mcp_server"
	tool.side_effect == "network_read"
	tool.idempotency == "read_only"
}

condition("path_inside_workspace") if inside_workspace(arguments.path)

inside_workspace(p) if {
	is_string(p)
	p != ""
	not startswith(p, "/")
	not contains(p, "\\")
	every seg in split(p, "/") {
		seg != ".."
	}
}

# --- trust overlay --------------------------------------------------------

trust_exempt := {"none", "workspace_read", "network_read"}

trust_escalated if {
	row_result.decision == "allow"
	not tool.side_effect in trust_exempt
	untrusted
}

untrusted if {
	not tool_rule.human_confirms_arguments
	some label in object.get(action, "argument_trust", {})
	label == "external_untrusted"
}

untrusted if {
	not tool_rule
	action.origin_trust == "external_untrusted"
}

# A tool rule tightens the origin half: only an authorizing origin passes.
untrusted if {
	tool_rule
	not action.origin_trust in authorizing_origins
}

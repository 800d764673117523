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

action_kinds := {"tool_call", "memory_write", "skill_authoring", "artifact_export"}

target_kinds := {"in_process", "sandbox", "device", "mcp_server", "web_provider", "browser_provider"}

# A request the gate cannot read exactly is unclassifiable, never guessed at.
valid if {
	regex.match(`^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$`, action.action_id)
	action.kind in action_kinds
	action.name != ""
	count(action.name) <= 200
	trim_space(object.get(action, "summary", "")) != ""
	object.get(action, "step_number", 0) >= 0
	action.origin_trust in trust_levels
	object.get(action, ["target", "kind"], "in_process") in target_kinds
	every name, label in argument_trust {
		label in trust_levels
		arguments[name]
	}
	profile
	action.kind == tool.kind
	object.get(action, "version", "") in {"", tool.version}
	not claims_root_target
}

# Provider and MCP targets come from the catalog, never from the request.
claims_root_target if {
	tool.mcp_server_id == ""
	tool.target == ""
	object.get(action, ["target", "kind"], "") in {"web_provider", "browser_provider", "mcp_server"}
}

missing_scopes := {s | some s in tool.required_scopes; not s in {x | some x in input.scopes}}

# An MCP tool or a tool with a fixed target gets that target whatever the
# request says; otherwise the runtime reports where it will run the action.
target := {"kind": "mcp_server", "server_id": tool.mcp_server_id} if {
	tool.mcp_server_id != ""
} else := {"kind": tool.target} if {
	tool.target != ""
} else := object.get(action, "target", {})

# JSON null (a nil map on the Go side) reads as empty, as it does in Go.
arguments := action.arguments if is_object(action.arguments) else := {}

argument_trust := action.argument_trust if is_object(action.argument_trust) else := {}

# --- hardline -------------------------------------------------------------

# The first rule in file order that blocks names the reason.
hardline_code := data.hardline[min(blocking)].message_code

blocking contains i if {
	some i, rule in data.hardline
	tool.side_effect in rule.applies_to
	blocks(rule)
}

blocks(rule) if rule.kind == "side_effect"

# A command is read as given and with shell quotes and backslashes removed;
# an argv array is also read as its strings joined with spaces.
blocks(rule) if {
	rule.kind == "command_regex"
	some v in read_values(rule, ["command"]) | joined_arrays(read_roots(rule, ["command"]))
	some c in {v, strings.replace_n({"\"": "", "'": "", "\\": ""}, v)}
	regex.match(rule.pattern, c)
}

# A path is tested as given and with backslashes made slashes and doubled
# or dot segments cleaned, so "/etc//passwd" cannot slip past "^/etc".
blocks(rule) if {
	rule.kind == "path_pattern"
	some v in read_values(rule, ["path"])
	some p in {v, clean_path(v)}
	regex.match(rule.pattern, p)
}

# A string is read as given and after each of up to three percent
# decodings (a URL nested in a query parameter); ? and & split tokens too.
# urlquery.decode refuses a string with any invalid escape, where the engine
# decodes the valid ones: the corpus has no such case.
blocks(rule) if {
	rule.kind == "egress_host"
	some v in read_values(rule, [])
	some d in percent_forms(v)
	some tok in regex.split("[ \t\r\n\"'`,;<>(){}|?&]", d)
	blocked_host(rule, host_of(tok), tok)
}

percent_forms(v) := {v} | percent_decoded(v)

percent_decoded(v) := {d1, d2, d3} if {
	contains(v, "%")
	d1 := urlquery.decode(v)
	d2 := urlquery.decode(d1)
	d3 := urlquery.decode(d2)
} else := {d1, d2} if {
	contains(v, "%")
	d1 := urlquery.decode(v)
	d2 := urlquery.decode(d1)
} else := {d1} if {
	contains(v, "%")
	d1 := urlquery.decode(v)
} else := set()

blocks(rule) if {
	rule.kind == "credential_egress"
	some v in read_values(rule, []) | object_keys(arguments)
	count(v) >= 15
	regex.match(data.credential_pattern, v)
}

# The strings a rule reads: the named arguments (or the kind's default
# argument), else every string value at any depth.
read_values(rule, default_args) := strings_in(read_roots(rule, default_args))

read_roots(rule, default_args) := [arguments[n] | some n in rule.arguments] if {
	count(rule.arguments) > 0
} else := [arguments[n] | some n in default_args] if {
	count(default_args) > 0
} else := arguments

strings_in(x) := {v |
	some _, v in walk(x)
	is_string(v)
}

joined_arrays(roots) := {concat(" ", [s | some s in arr; is_string(s)]) |
	some root in roots
	some _, arr in walk(root)
	is_array(arr)
}

object_keys(x) := {k |
	some _, v in walk(x)
	is_object(v)
	some k, _ in v
}

# clean_path is Go's path.Clean after making backslashes slashes. Rego has
# no fold, so a segment survives when no later ".." run outnumbers the
# segments between, as with matching brackets.
clean_path(p) := cleaned if {
	q := replace(p, "\\", "/")
	segs := [s | some s in split(q, "/"); not s in {"", "."}]
	rooted := startswith(q, "/")
	kept := [s | some i, s in segs; survives(segs, i, rooted)]
	cleaned := join_clean(rooted, concat("/", kept))
}

join_clean(true, body) := concat("", ["/", body])

join_clean(false, "") := "."

join_clean(false, body) := body if body != ""

survives(segs, i, _) if {
	segs[i] != ".."
	not popped(segs, i, count(segs) - 1)
}

# A ".." stays only in a relative path, when nothing before it is left to pop.
survives(segs, i, false) if {
	segs[i] == ".."
	every k in span(0, i - 1) {
		kept_before(segs, k, i)
	}
}

kept_before(segs, k, _) if segs[k] == ".."

kept_before(segs, k, i) if {
	segs[k] != ".."
	popped(segs, k, i - 1)
}

popped(segs, i, last) if {
	some j in span(i + 1, last)
	dotdots(segs, i + 1, j) > count(span(i + 1, j)) - dotdots(segs, i + 1, j)
}

dotdots(segs, a, b) := count([k | some k in span(a, b); segs[k] == ".."])

# span is numbers.range without its count-down: empty when a > b.
span(a, b) := numbers.range(a, b) if a <= b else := []

# The host of a URL, a host:port, a key=value or a bare host.
host_of(tok) := lower(trim_right(strip_port(host_port(tok)), "."))

host_port(tok) := m[0][1] if {
	m := regex.find_all_string_submatch_n(`^(?:[^/]*://|//|[^=/]*=)?(?:[^@/?#\\]*@)?(\[[^\]]*\]?|[^/?#\\]*)`, tok, 1)
}

# A token is unmistakably an address, not a word, with a scheme or // before
# the host, a bracketed IPv6 host, or a port after it.
qualified(tok) if contains(tok, "://")

qualified(tok) if startswith(tok, "//")

qualified(tok) if startswith(host_port(tok), "[")

qualified(tok) if regex.match(`^[^:]*:[0-9]{1,5}$`, host_port(tok))

strip_port(raw) := trim(regex.find_n(`^\[[^\]]*`, raw, 1)[0], "[") if startswith(raw, "[")

strip_port(raw) := split(raw, ":")[0] if {
	not startswith(raw, "[")
	count(indexof_n(raw, ":")) == 1
}

strip_port(raw) := raw if {
	not startswith(raw, "[")
	count(indexof_n(raw, ":")) != 1
}

# A single-label name (GCE's "metadata") is blocked only as an address.
blocked_host(rule, h, _) if {
	h != ""
	h in rule.hostnames
	contains(h, ".")
}

blocked_host(rule, h, tok) if {
	h != ""
	h in rule.hostnames
	not contains(h, ".")
	qualified(tok)
}

blocked_host(rule, h, _) if {
	h != ""
	some cidr in rule.cidrs
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

# Only a sandbox is an isolated execution target.
condition("target_isolated") if {
	target.kind == "sandbox"
	target.isolated == true
}

condition("constructed_provider_target") if target.kind in {"web_provider", "browser_provider"}

condition("constructed_provider_target") if {
	target.kind == "mcp_server"
	tool.side_effect == "network_read"
	tool.idempotency == "read_only"
}

condition("path_inside_workspace") if inside_workspace(arguments.path)

# Relative, already clean, no home directory, control byte, backslash or
# drive letter: engine.PathInsideWorkspace.
inside_workspace(p) if {
	is_string(p)
	not p in {"", ".", ".."}
	not regex.match(`^[/~]|^.:|[\x00-\x1f\x7f\\]`, p)
	clean_path(p) == p
	not startswith(p, "../")
}

# --- trust overlay --------------------------------------------------------

trust_exempt := {"none", "workspace_read", "network_read"}

trust_escalated if {
	row_result.decision in {"allow", "allow_with_modifications"}
	not tool.side_effect in trust_exempt
	untrusted
}

untrusted if {
	not tool_rule.human_confirms_arguments
	some label in argument_trust
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

// Package mcpgw is the MCP gateway: an MCP server (Streamable HTTP at /mcp
// in `console serve`) in front of the operator's MCP servers (upstreams),
// whose every tools/call is a proposed action of the one gate
// (service.Propose). It classifies nothing itself: the upstreams' tools are
// catalog entries from the operator's CONSOLE_MCP file, loaded into the same
// catalog as every other tool, and the gateway only forwards what the
// service authorized.
package mcpgw

import (
	"fmt"
	"net/url"
	"os"
	"slices"
	"strings"
	"time"

	"gopkg.in/yaml.v3"

	"gatehouse/engine"
	"gatehouse/rules"
)

// Load error codes (rules.LoadError.Code) beyond the YAML ones rules uses.
const (
	CodeUpstream  = "mcp.upstream"
	CodeTool      = "mcp.tool"
	CodeGateway   = "mcp.gateway"
	CodeDuplicate = "mcp.duplicate"
)

// Defaults of the gateway-wide settings.
const (
	// DefaultOriginTrust is the lowest trust the matrix rows still take at
	// face value: knowledge. An MCP client's call is written by a model
	// that may have read anything, so the gateway never labels it user;
	// external_untrusted would send every class the overlay escalates to a
	// human, so allowed rows of the matrix would never allow. An operator
	// who knows better says so per gateway or per upstream.
	DefaultOriginTrust      = engine.TrustKnowledge
	DefaultCallTimeout      = 60 * time.Second
	DefaultSessionTimeout   = 30 * time.Minute
	DefaultProgressInterval = 5 * time.Second
	maxConfigBytes          = 1 << 20
)

// Config is a loaded, validated CONSOLE_MCP file.
type Config struct {
	File string
	// OriginTrust labels every call of every upstream that sets none.
	OriginTrust engine.TrustLevel
	// CallTimeout bounds one forwarded call; past it the outcome is
	// unknown and recorded uncertain.
	CallTimeout time.Duration
	// SessionTimeout closes an idle client session (and ends its run).
	SessionTimeout time.Duration
	// ProgressInterval is how often a call waiting for approval tells the
	// client it still waits.
	ProgressInterval time.Duration
	// DevPrincipalScopes are granted to the AUTH_MODE=dev principal, which
	// otherwise holds no mcp scope: the operator's explicit opt-in.
	DevPrincipalScopes []string
	Upstreams          []Upstream
}

// Upstream is one of the operator's MCP servers.
type Upstream struct {
	ID          string // the mcp_server_id: scopes are mcp.{ID}.*, tools {ID}.{name}
	OriginTrust engine.TrustLevel
	Stdio       *Stdio
	HTTP        *HTTP
	Tools       []Tool
	// HideResources and HidePrompts keep the upstream's resources and
	// prompts from clients; by default they pass through read-only.
	HideResources bool
	HidePrompts   bool
}

// Stdio launches the upstream as a child process speaking MCP on stdio.
type Stdio struct {
	Command string
	Args    []string
	Env     map[string]string // added to the gateway's environment
}

// HTTP reaches the upstream over Streamable HTTP.
type HTTP struct {
	URL string
	// HeadersFromEnv maps a header name to the environment variable that
	// holds its value, so secrets stay out of the file.
	HeadersFromEnv map[string]string
}

// Tool is one classified tool of an upstream.
type Tool struct {
	Upstream string          // the upstream's own name for it
	Spec     engine.ToolSpec // Spec.Name is {upstream id}.{Upstream}
}

// ToolName is the catalog name of an upstream's tool: the upstream id,
// a dot, the upstream's name, so the card says where the call goes.
func ToolName(upstreamID, tool string) string { return upstreamID + "." + tool }

// Specs lists every tool's catalog entry, for rules.Options.MCPTools.
func (c *Config) Specs() []engine.ToolSpec {
	if c == nil {
		return nil
	}
	var out []engine.ToolSpec
	for _, u := range c.Upstreams {
		for _, t := range u.Tools {
			out = append(out, t.Spec)
		}
	}
	return out
}

// PolicyOptions adds the gateway's catalog entries to opts.
func (c *Config) PolicyOptions(opts rules.Options) rules.Options {
	if c != nil {
		opts.MCPTools, opts.MCPFile = c.Specs(), c.File
	}
	return opts
}

type configDoc struct {
	OriginTrust        string        `yaml:"origin_trust"`
	CallTimeout        string        `yaml:"call_timeout"`
	SessionTimeout     string        `yaml:"session_timeout"`
	ProgressInterval   string        `yaml:"progress_interval"`
	DevPrincipalScopes []string      `yaml:"dev_principal_scopes"`
	Upstreams          []upstreamDoc `yaml:"upstreams"`
}

type upstreamDoc struct {
	ID            string    `yaml:"id"`
	OriginTrust   string    `yaml:"origin_trust"`
	Stdio         *stdioDoc `yaml:"stdio"`
	HTTP          *httpDoc  `yaml:"http"`
	Tools         []toolDoc `yaml:"tools"`
	HideResources bool      `yaml:"hide_resources"`
	HidePrompts   bool      `yaml:"hide_prompts"`
}

type stdioDoc struct {
	Command string            `yaml:"command"`
	Args    []string          `yaml:"args"`
	Env     map[string]string `yaml:"env"`
}

type httpDoc struct {
	URL            string            `yaml:"url"`
	HeadersFromEnv map[string]string `yaml:"headers_from_env"`
}

// toolDoc mirrors an entry of rules/tools.yaml, minus what the upstream
// fixes: the kind (tool_call), the target (mcp_server) and the server id.
type toolDoc struct {
	Name           string   `yaml:"name"`
	Version        string   `yaml:"version"`
	SideEffect     string   `yaml:"side_effect"`
	Risk           string   `yaml:"risk"`
	Idempotency    string   `yaml:"idempotency"`
	RequiredScopes []string `yaml:"required_scopes"`
	Arguments      []string `yaml:"arguments"`
	Commands       []string `yaml:"commands"`
	Paths          []string `yaml:"paths"`
	URLs           []string `yaml:"urls"`
}

// LoadFile reads and validates a CONSOLE_MCP file.
func LoadFile(file string) (*Config, error) {
	b, err := os.ReadFile(file)
	if err != nil {
		return nil, &rules.LoadError{File: file, Code: rules.CodeRead, Msg: err.Error()}
	}
	return Parse(file, b)
}

// Parse validates a CONSOLE_MCP document: strict YAML (one document, no
// unknown field), every error naming file:line and a stable code. On error
// the Config is nil.
func Parse(file string, b []byte) (*Config, error) {
	if len(b) > maxConfigBytes {
		return nil, &rules.LoadError{File: file, Code: CodeGateway, Msg: "the file is larger than 1 MiB"}
	}
	var doc configDoc
	root, err := rules.DecodeStrict(file, b, &doc)
	if err != nil {
		return nil, err
	}
	p := parser{file: file, root: root}
	cfg := &Config{File: file}
	if cfg.OriginTrust, err = p.trust(doc.OriginTrust, DefaultOriginTrust, p.line(root, "origin_trust")); err != nil {
		return nil, err
	}
	for _, d := range []struct {
		key, raw string
		def      time.Duration
		out      *time.Duration
	}{
		{"call_timeout", doc.CallTimeout, DefaultCallTimeout, &cfg.CallTimeout},
		{"session_timeout", doc.SessionTimeout, DefaultSessionTimeout, &cfg.SessionTimeout},
		{"progress_interval", doc.ProgressInterval, DefaultProgressInterval, &cfg.ProgressInterval},
	} {
		if *d.out, err = p.duration(d.key, d.raw, d.def); err != nil {
			return nil, err
		}
	}
	for _, s := range doc.DevPrincipalScopes {
		if err := engine.ValidPrincipalScope(s); err != nil || !strings.HasPrefix(s, "mcp.") {
			return nil, p.errf(p.line(root, "dev_principal_scopes"), "", CodeGateway, "dev_principal_scopes lists only mcp.{server_id}.{verb} scopes; %q is not one", s)
		}
	}
	cfg.DevPrincipalScopes = doc.DevPrincipalScopes
	_, seq := rules.MappingValue(root, "upstreams")
	if len(doc.Upstreams) == 0 {
		return nil, p.errf(p.line(root, "upstreams"), "", CodeUpstream, "at least one upstream is required")
	}
	for i, ud := range doc.Upstreams {
		node := item(seq, i)
		u, err := p.upstream(ud, node, cfg.OriginTrust)
		if err != nil {
			return nil, err
		}
		if slices.ContainsFunc(cfg.Upstreams, func(o Upstream) bool { return o.ID == u.ID }) {
			return nil, p.errf(lineOf(node), u.ID, CodeDuplicate, "upstream %q is defined twice", u.ID)
		}
		cfg.Upstreams = append(cfg.Upstreams, u)
	}
	return cfg, nil
}

type parser struct {
	file string
	root *yaml.Node
}

func (p parser) errf(line int, rule, code, format string, args ...any) error {
	return &rules.LoadError{File: p.file, Line: line, RuleID: rule, Code: code, Msg: fmt.Sprintf(format, args...)}
}

func (p parser) line(n *yaml.Node, key string) int {
	k, _ := rules.MappingValue(n, key)
	if k == nil {
		return lineOf(n)
	}
	return k.Line
}

func (p parser) trust(raw string, def engine.TrustLevel, line int) (engine.TrustLevel, error) {
	if raw == "" {
		return def, nil
	}
	t := engine.TrustLevel(raw)
	if !t.Valid() {
		return "", p.errf(line, "", CodeGateway, "origin_trust %q is not a trust level (%s)", raw, joinTrust())
	}
	return t, nil
}

func joinTrust() string {
	var names []string
	for _, t := range engine.TrustLevels() {
		names = append(names, string(t))
	}
	return strings.Join(names, ", ")
}

func (p parser) duration(key, raw string, def time.Duration) (time.Duration, error) {
	if raw == "" {
		return def, nil
	}
	d, err := time.ParseDuration(raw)
	if err != nil || d <= 0 || d > 24*time.Hour {
		return 0, p.errf(p.line(p.root, key), "", CodeGateway, "%s %q: want a positive duration of at most 24h, such as 30s", key, raw)
	}
	return d, nil
}

func (p parser) upstream(d upstreamDoc, node *yaml.Node, gatewayTrust engine.TrustLevel) (Upstream, error) {
	line := lineOf(node)
	if !validID(d.ID) {
		return Upstream{}, p.errf(line, d.ID, CodeUpstream, "upstream id %q must be one [a-z][a-z0-9_]* word of at most 64 characters (it becomes the scope segment mcp.{id})", d.ID)
	}
	u := Upstream{ID: d.ID, HideResources: d.HideResources, HidePrompts: d.HidePrompts}
	var err error
	if u.OriginTrust, err = p.trust(d.OriginTrust, gatewayTrust, p.line(node, "origin_trust")); err != nil {
		return Upstream{}, err
	}
	switch {
	case (d.Stdio == nil) == (d.HTTP == nil):
		return Upstream{}, p.errf(line, d.ID, CodeUpstream, "an upstream has exactly one of stdio or http")
	case d.Stdio != nil:
		if strings.TrimSpace(d.Stdio.Command) == "" {
			return Upstream{}, p.errf(p.line(node, "stdio"), d.ID, CodeUpstream, "stdio.command is required")
		}
		for k := range d.Stdio.Env {
			if !validEnvName(k) {
				return Upstream{}, p.errf(p.line(node, "stdio"), d.ID, CodeUpstream, "stdio.env name %q is not an environment variable name", k)
			}
		}
		u.Stdio = &Stdio{Command: d.Stdio.Command, Args: d.Stdio.Args, Env: d.Stdio.Env}
	default:
		pu, perr := url.Parse(d.HTTP.URL)
		if perr != nil || (pu.Scheme != "http" && pu.Scheme != "https") || pu.Host == "" {
			return Upstream{}, p.errf(p.line(node, "http"), d.ID, CodeUpstream, "http.url %q is not an http(s) URL", d.HTTP.URL)
		}
		for h, env := range d.HTTP.HeadersFromEnv {
			if !validHeaderName(h) || !validEnvName(env) {
				return Upstream{}, p.errf(p.line(node, "http"), d.ID, CodeUpstream, "headers_from_env maps a header name to an environment variable name; %q: %q is not", h, env)
			}
		}
		u.HTTP = &HTTP{URL: d.HTTP.URL, HeadersFromEnv: d.HTTP.HeadersFromEnv}
	}
	_, seq := rules.MappingValue(node, "tools")
	for i, td := range d.Tools {
		tn := item(seq, i)
		t, err := p.tool(u.ID, td, lineOf(tn))
		if err != nil {
			return Upstream{}, err
		}
		if slices.ContainsFunc(u.Tools, func(o Tool) bool { return o.Upstream == t.Upstream }) {
			return Upstream{}, p.errf(lineOf(tn), t.Spec.Name, CodeDuplicate, "tool %q is classified twice", t.Upstream)
		}
		u.Tools = append(u.Tools, t)
	}
	return u, nil
}

func (p parser) tool(upstreamID string, d toolDoc, line int) (Tool, error) {
	if d.Name == "" || len(d.Name) > 128 || !validToolName(d.Name) {
		return Tool{}, p.errf(line, d.Name, CodeTool, "tool name %q is not an MCP tool name ([A-Za-z0-9_.-], 1 to 128 characters)", d.Name)
	}
	scopes := slices.Clone(d.RequiredScopes)
	if use := engine.MCPUseScope(upstreamID); !slices.Contains(scopes, use) {
		// The use scope is every MCP tool's independent prerequisite;
		// listing it again in the file is allowed, never needed.
		scopes = append([]string{use}, scopes...)
	}
	spec := engine.ToolSpec{
		Name:           ToolName(upstreamID, d.Name),
		Version:        d.Version,
		Kind:           engine.ActionToolCall,
		SideEffect:     engine.SideEffectClass(d.SideEffect),
		Risk:           engine.RiskLevel(d.Risk),
		Idempotency:    engine.IdempotencyClass(d.Idempotency),
		RequiredScopes: scopes,
		Target:         engine.TargetMCPServer,
		MCPServerID:    upstreamID,
		Arguments:      d.Arguments,
		Roles:          engine.ArgumentRoles{Commands: d.Commands, Paths: d.Paths, URLs: d.URLs},
	}
	if _, err := engine.NewCatalog([]engine.ToolSpec{spec}); err != nil {
		return Tool{}, p.errf(line, spec.Name, CodeTool, "%s", err.Error())
	}
	return Tool{Upstream: d.Name, Spec: spec}, nil
}

func validID(s string) bool {
	if s == "" || len(s) > 64 || s[0] < 'a' || s[0] > 'z' {
		return false
	}
	return !strings.ContainsFunc(s, func(r rune) bool {
		return (r < 'a' || r > 'z') && (r < '0' || r > '9') && r != '_'
	})
}

func validToolName(s string) bool {
	return !strings.ContainsFunc(s, func(r rune) bool {
		return (r < 'a' || r > 'z') && (r < 'A' || r > 'Z') && (r < '0' || r > '9') && r != '_' && r != '-' && r != '.'
	})
}

func validEnvName(s string) bool {
	if s == "" || (s[0] >= '0' && s[0] <= '9') {
		return false
	}
	return !strings.ContainsFunc(s, func(r rune) bool {
		return (r < 'a' || r > 'z') && (r < 'A' || r > 'Z') && (r < '0' || r > '9') && r != '_'
	})
}

func validHeaderName(s string) bool {
	return s != "" && !strings.ContainsFunc(s, func(r rune) bool {
		return r <= ' ' || r >= 0x7f || strings.ContainsRune(`"(),/:;<=>?@[\]{}`, r)
	})
}

func item(seq *yaml.Node, i int) *yaml.Node {
	if seq == nil || seq.Kind != yaml.SequenceNode || i >= len(seq.Content) {
		return nil
	}
	return seq.Content[i]
}

func lineOf(n *yaml.Node) int {
	if n == nil {
		return 0
	}
	return n.Line
}

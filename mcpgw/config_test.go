package mcpgw

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"gatehouse/engine"
	"gatehouse/rules"
)

const validConfig = `
origin_trust: knowledge
call_timeout: 30s
dev_principal_scopes: [mcp.files.use]
upstreams:
  - id: files
    stdio: {command: files-server, args: [--root, /srv], env: {FILES_MODE: ro}}
    tools:
      - {name: read_file, version: "1", side_effect: workspace_read, risk: low, idempotency: read_only,
         required_scopes: [mcp.files.read], arguments: [path], paths: [path]}
  - id: remote
    origin_trust: user
    http: {url: "https://mcp.example.com/mcp", headers_from_env: {Authorization: WEB_MCP_AUTH}}
    tools:
      - {name: search, version: "1", side_effect: network_read, risk: low, idempotency: read_only, arguments: [query]}
`

func TestParseValidConfig(t *testing.T) {
	cfg, err := Parse("mcp.yaml", []byte(validConfig))
	if err != nil {
		t.Fatal(err)
	}
	specs := cfg.Specs()
	if len(specs) != 2 || specs[0].Name != "files.read_file" || specs[0].MCPServerID != "files" || specs[0].Target != engine.TargetMCPServer {
		t.Fatalf("specs: %+v", specs)
	}
	if !slices.Equal(specs[0].RequiredScopes, []string{"mcp.files.use", "mcp.files.read"}) {
		t.Fatalf("mcp.files.use is every tool's prerequisite: %v", specs[0].RequiredScopes)
	}
	if cfg.Upstreams[0].OriginTrust != engine.TrustKnowledge || cfg.Upstreams[1].OriginTrust != engine.TrustUser {
		t.Fatalf("origin trust: %s %s", cfg.Upstreams[0].OriginTrust, cfg.Upstreams[1].OriginTrust)
	}
	// The entries join the one catalog the gate classifies with.
	set, err := rules.Load(cfg.PolicyOptions(rules.Options{}))
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := set.Catalog().Lookup("remote.search"); !ok {
		t.Fatal("web.search is not in the loaded catalog")
	}
}

func TestParseRefusesWithFileLineAndCode(t *testing.T) {
	for _, c := range []struct {
		name, doc string
		line      int
		code      string
	}{
		{"unknown field", "upstreams: []\nbogus: 1\n", 2, rules.CodeSyntax},
		{"two documents", "upstreams: []\n---\nupstreams: []\n", 2, rules.CodeMultipleDocs},
		{"no upstream", "origin_trust: user\n", 1, CodeUpstream},
		{"bad trust", "origin_trust: root\nupstreams: []\n", 1, CodeGateway},
		{"bad duration", "call_timeout: soon\nupstreams: []\n", 1, CodeGateway},
		{"dev scope outside mcp", "dev_principal_scopes: [run.write]\nupstreams: []\n", 1, CodeGateway},
		{"bad id", "upstreams:\n  - id: Files\n    stdio: {command: x}\n", 2, CodeUpstream},
		{"both transports", "upstreams:\n  - id: f\n    stdio: {command: x}\n    http: {url: 'https://x'}\n", 2, CodeUpstream},
		{"no transport", "upstreams:\n  - id: f\n", 2, CodeUpstream},
		{"bad url", "upstreams:\n  - id: f\n    http: {url: 'ftp://x'}\n", 3, CodeUpstream},
		{"bad header env", "upstreams:\n  - id: f\n    http: {url: 'https://x', headers_from_env: {Authorization: 'A B'}}\n", 3, CodeUpstream},
		{"duplicate upstream", "upstreams:\n  - id: f\n    stdio: {command: x}\n  - id: f\n    stdio: {command: y}\n", 4, CodeDuplicate},
		{"borrowed scope", "upstreams:\n  - id: f\n    stdio: {command: x}\n    tools:\n      - {name: t, side_effect: none, risk: low, idempotency: read_only, required_scopes: [run.cancel]}\n", 5, CodeTool},
		{"other server's scope", "upstreams:\n  - id: f\n    stdio: {command: x}\n    tools:\n      - {name: t, side_effect: none, risk: low, idempotency: read_only, required_scopes: [mcp.g.read]}\n", 5, CodeTool},
		{"unknown class", "upstreams:\n  - id: f\n    stdio: {command: x}\n    tools:\n      - {name: t, side_effect: harmless, risk: low, idempotency: read_only}\n", 5, CodeTool},
		{"role not an argument", "upstreams:\n  - id: f\n    stdio: {command: x}\n    tools:\n      - {name: t, side_effect: none, risk: low, idempotency: read_only, commands: [cmd]}\n", 5, CodeTool},
		{"bad tool name", "upstreams:\n  - id: f\n    stdio: {command: x}\n    tools:\n      - {name: 'a b', side_effect: none, risk: low, idempotency: read_only}\n", 5, CodeTool},
		{"tool twice", "upstreams:\n  - id: f\n    stdio: {command: x}\n    tools:\n      - {name: t, side_effect: none, risk: low, idempotency: read_only}\n      - {name: t, side_effect: none, risk: low, idempotency: read_only}\n", 6, CodeDuplicate},
	} {
		t.Run(c.name, func(t *testing.T) {
			cfg, err := Parse("mcp.yaml", []byte(c.doc))
			var le *rules.LoadError
			if !errors.As(err, &le) || cfg != nil {
				t.Fatalf("want a LoadError and no config, got %v", err)
			}
			if le.File != "mcp.yaml" || le.Line != c.line || le.Code != c.code {
				t.Fatalf("got %s (line %d, code %s), want line %d code %s", le, le.Line, le.Code, c.line, c.code)
			}
		})
	}
}

func TestLoadRefusesAToolNamedLikeABuiltIn(t *testing.T) {
	cfg, err := Parse("mcp.yaml", []byte(validConfig))
	if err != nil {
		t.Fatal(err)
	}
	opts := cfg.PolicyOptions(rules.Options{})
	opts.MCPTools = append(opts.MCPTools, engine.ToolSpec{Name: "web.search", SideEffect: engine.SideEffectNone})
	var le *rules.LoadError
	if _, err := rules.Load(opts); !errors.As(err, &le) || le.Code != rules.CodeDuplicateTool || le.File != "mcp.yaml" {
		t.Fatalf("want %s naming mcp.yaml, got %v", rules.CodeDuplicateTool, err)
	}
}

// FuzzParse: any input either loads a config whose every tool is a valid
// catalog entry of its own server, or fails with a LoadError and no config;
// it never panics.
func FuzzParse(f *testing.F) {
	f.Add([]byte(validConfig))
	f.Add([]byte("upstreams:\n  - id: f\n    stdio: {command: x}\n    tools:\n      - {name: t, side_effect: none, risk: low, idempotency: read_only}\n"))
	f.Add([]byte("upstreams: [{id: a, http: {url: 'http://h'}}]"))
	f.Add([]byte("{"))
	f.Fuzz(func(t *testing.T, b []byte) {
		cfg, err := Parse("f.yaml", b)
		if err != nil {
			var le *rules.LoadError
			if cfg != nil || !errors.As(err, &le) {
				t.Fatalf("error %v with config %v", err, cfg)
			}
			return
		}
		if _, err := engine.NewCatalog(cfg.Specs()); err != nil {
			t.Fatalf("loaded specs are not a catalog: %v", err)
		}
		for _, s := range cfg.Specs() {
			if !slices.Contains(s.RequiredScopes, engine.MCPUseScope(s.MCPServerID)) || !strings.HasPrefix(s.Name, s.MCPServerID+".") {
				t.Fatalf("spec %+v", s)
			}
		}
	})
}

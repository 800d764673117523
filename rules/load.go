// Package rules holds the shipped policy files (default.yaml, hardline.yaml,
// tools.yaml, embedded) and their strict loader.
package rules

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"gopkg.in/yaml.v3"

	"gatehouse/engine"
	"gatehouse/internal/strictyaml"
)

var (
	//go:embed default.yaml
	defaultYAML []byte
	//go:embed hardline.yaml
	hardlineYAML []byte
	//go:embed tools.yaml
	toolsYAML []byte
)

// Built-in file names, as errors and the policy page name them.
const (
	DefaultProfile = "default"
	HardlineFile   = "hardline.yaml"
	ToolsFile      = "tools.yaml"
)

// Options selects what to load beyond the built-in files.
type Options struct {
	PolicyDir      string // CONSOLE_POLICY_DIR: extra operator profiles ({name}.yaml)
	ToolsFile      string // CONSOLE_TOOLS: operator catalog merged over the built-in one
	DefaultProfile string // CONSOLE_POLICY_PROFILE; "" means "default"
	// MCPTools are the catalog entries of the MCP gateway's upstreams
	// (CONSOLE_MCP, parsed by mcpgw), named in errors as MCPFile. They join
	// the one catalog the gate classifies with, under the same rule as the
	// operator file: they may add tools, never redefine one.
	MCPTools []engine.ToolSpec
	MCPFile  string
}

// Set is everything loaded: frozen rulesets by profile name, the default
// profile's name, and the tool catalog. It has no exported state and no
// setter: what a process loaded at start is what it evaluates with, and the
// rulesets and the catalog are immutable values.
type Set struct {
	rulesets    map[string]*engine.LoadedRuleset
	defaultName string
	catalog     *engine.Catalog
}

// NewSet assembles a Set from rulesets compiled elsewhere (tests, tools),
// copying the map so the caller keeps no handle on it. The default profile
// must be among them.
func NewSet(rulesets map[string]*engine.LoadedRuleset, defaultProfile string, catalog *engine.Catalog) (*Set, error) {
	if catalog == nil {
		return nil, errors.New("rules: a set needs a catalog")
	}
	s := &Set{rulesets: make(map[string]*engine.LoadedRuleset, len(rulesets)), defaultName: defaultProfile, catalog: catalog}
	for name, rs := range rulesets {
		if rs == nil {
			return nil, fmt.Errorf("rules: profile %q has no ruleset", name)
		}
		s.rulesets[name] = rs
	}
	if _, ok := s.rulesets[defaultProfile]; !ok {
		return nil, fmt.Errorf("rules: default profile %q is not in the set", defaultProfile)
	}
	return s, nil
}

// Ruleset returns the ruleset of a profile; "" selects the default.
func (s *Set) Ruleset(profile string) (*engine.LoadedRuleset, bool) {
	if profile == "" {
		profile = s.defaultName
	}
	rs, ok := s.rulesets[profile]
	return rs, ok
}

// DefaultRuleset is the ruleset of the default profile (nil on a zero Set).
func (s *Set) DefaultRuleset() *engine.LoadedRuleset { return s.rulesets[s.defaultName] }

// DefaultProfile is the name of the profile used when a run names none.
func (s *Set) DefaultProfile() string { return s.defaultName }

// Catalog is the tool catalog every profile of the set classifies with.
func (s *Set) Catalog() *engine.Catalog { return s.catalog }

// Profiles lists the loaded profile names in order (a fresh slice).
func (s *Set) Profiles() []string {
	names := make([]string, 0, len(s.rulesets))
	for n := range s.rulesets {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// Load error codes beyond the engine's rule codes (engine.Code*).
const (
	CodeRead             = "file.read"
	CodeSyntax           = strictyaml.CodeSyntax
	CodeEmpty            = strictyaml.CodeEmpty
	CodeMultipleDocs     = strictyaml.CodeMultipleDocs
	CodeValue            = "yaml.value"
	CodeHardlineOverride = "profile.hardline_not_overridable"
	CodeProfileName      = "profile.name"
	CodeUnknownTool      = "profile.unknown_tool"
	CodeMissingProfile   = "profile.missing"
	CodeCatalog          = "catalog.invalid"
	CodeDuplicateTool    = "catalog.duplicate_builtin"
	CodeMissingExample   = engine.CodeHardlineExample
)

// LoadError says where loading failed: file:line, the rule, a stable code.
type LoadError struct {
	File   string
	Line   int // 0 when the failure has no single line
	RuleID string
	Code   string
	Msg    string
}

func (e *LoadError) Error() string {
	var b strings.Builder
	b.WriteString(e.File)
	if e.Line > 0 {
		fmt.Fprintf(&b, ":%d", e.Line)
	}
	b.WriteString(": ")
	if e.RuleID != "" {
		b.WriteString("rule " + e.RuleID + ": ")
	}
	b.WriteString(e.Code + ": " + e.Msg)
	return b.String()
}

// Load reads, validates and freezes profiles, the hardline set and the
// catalog, refusing anything invalid (errors name file, line and rule).
// Hardline rules come only from the embedded file: an operator directory
// can add profiles, never replace or extend the hardline set.
func Load(opts Options) (*Set, error) {
	hl, err := parseHardline(hardlineYAML)
	if err != nil {
		return nil, err
	}
	cat, err := loadCatalog(opts)
	if err != nil {
		return nil, err
	}
	s := &Set{rulesets: map[string]*engine.LoadedRuleset{}, catalog: cat, defaultName: opts.DefaultProfile}
	if s.defaultName == "" {
		s.defaultName = DefaultProfile
	}
	rs, err := compileProfile(DefaultProfile, DefaultProfile+".yaml", defaultYAML, hl, cat)
	if err != nil {
		return nil, err
	}
	s.rulesets[DefaultProfile] = rs
	if opts.PolicyDir != "" {
		if err := s.loadPolicyDir(opts.PolicyDir, hl, cat); err != nil {
			return nil, err
		}
	}
	if _, ok := s.rulesets[s.defaultName]; !ok {
		return nil, &LoadError{File: opts.PolicyDir, Code: CodeMissingProfile, Msg: fmt.Sprintf("default profile %q is not loaded (have %s)", s.defaultName, strings.Join(s.Profiles(), ", "))}
	}
	return s, nil
}

func (s *Set) loadPolicyDir(dir string, hl *hardlineSet, cat *engine.Catalog) error {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return &LoadError{File: dir, Code: CodeRead, Msg: err.Error()}
	}
	for _, e := range entries {
		file := filepath.Join(dir, e.Name())
		if e.IsDir() || !strings.HasSuffix(e.Name(), ".yaml") {
			continue
		}
		name := strings.TrimSuffix(e.Name(), ".yaml")
		switch {
		case e.Name() == HardlineFile:
			return &LoadError{File: file, Code: CodeHardlineOverride, Msg: "hardline rules are built in and cannot be replaced by a policy directory"}
		case name == DefaultProfile:
			return &LoadError{File: file, Code: CodeProfileName, Msg: "the built-in default profile cannot be shadowed; give the profile another name and select it with CONSOLE_POLICY_PROFILE"}
		case !validProfileName(name):
			return &LoadError{File: file, Code: CodeProfileName, Msg: "a profile name is [a-z][a-z0-9_-]*"}
		}
		b, err := os.ReadFile(file)
		if err != nil {
			return &LoadError{File: file, Code: CodeRead, Msg: err.Error()}
		}
		rs, err := compileProfile(name, file, b, hl, cat)
		if err != nil {
			return err
		}
		s.rulesets[name] = rs
	}
	return nil
}

func validProfileName(s string) bool {
	if s == "" || s[0] < 'a' || s[0] > 'z' {
		return false
	}
	for i := 1; i < len(s); i++ {
		c := s[i]
		if (c < 'a' || c > 'z') && (c < '0' || c > '9') && c != '_' && c != '-' {
			return false
		}
	}
	return true
}

// DecodeStrict decodes exactly one YAML document into v, refusing unknown
// fields, and returns the document's node tree for line lookups.
func DecodeStrict(file string, b []byte, v any) (*yaml.Node, error) {
	root, err := strictyaml.Decode(b, v)
	if se, ok := errors.AsType[*strictyaml.Error](err); ok {
		return nil, &LoadError{File: file, Line: se.Line, Code: se.Code, Msg: se.Msg}
	}
	return root, err
}

// MappingValue returns the value node of key in a mapping node, or nil.
func MappingValue(n *yaml.Node, key string) (keyNode, value *yaml.Node) {
	if n == nil {
		return nil, nil
	}
	if n.Kind == yaml.DocumentNode && len(n.Content) > 0 {
		n = n.Content[0]
	}
	if n.Kind != yaml.MappingNode {
		return nil, nil
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value == key {
			return n.Content[i], n.Content[i+1]
		}
	}
	return nil, nil
}

// toJSONValue converts a YAML-decoded value into the shapes a JSON request
// decodes to (json.Number for numbers, map[string]any), so examples and
// modifications behave exactly like agent-sent arguments.
func toJSONValue(v any) (any, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("not a JSON-like value: %w", err)
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var out any
	if err := dec.Decode(&out); err != nil {
		return nil, fmt.Errorf("not a JSON-like value: %w", err)
	}
	return out, nil
}

func toJSONMap(m map[string]any) (map[string]any, error) {
	if m == nil {
		return nil, nil
	}
	v, err := toJSONValue(m)
	if err != nil {
		return nil, err
	}
	out, _ := v.(map[string]any)
	return out, nil
}

package rules

import (
	"fmt"
	"os"
	"slices"

	"gatehouse/engine"
)

type toolsDoc struct {
	Tools []toolDoc `yaml:"tools"`
}

type toolDoc struct {
	Name           string   `yaml:"name"`
	Version        string   `yaml:"version"`
	Kind           string   `yaml:"kind"`
	SideEffect     string   `yaml:"side_effect"`
	Risk           string   `yaml:"risk"`
	Idempotency    string   `yaml:"idempotency"`
	RequiredScopes []string `yaml:"required_scopes"`
	Target         string   `yaml:"target"`
	MCPServerID    string   `yaml:"mcp_server_id"`
	Arguments      []string `yaml:"arguments"`
	Commands       []string `yaml:"commands"`
	Paths          []string `yaml:"paths"`
	URLs           []string `yaml:"urls"`
}

// loadCatalog merges the operator catalog and the MCP gateway's entries
// over the built-in one. A name defined twice is refused rather than
// replaced: an operator file that could reclassify payments.charge as
// "none" would be a quiet bypass.
func loadCatalog(opts Options) (*engine.Catalog, error) {
	specs, err := parseTools(ToolsFile, toolsYAML)
	if err != nil {
		return nil, err
	}
	if opts.ToolsFile != "" {
		b, err := os.ReadFile(opts.ToolsFile)
		if err != nil {
			return nil, &LoadError{File: opts.ToolsFile, Code: CodeRead, Msg: err.Error()}
		}
		extra, err := parseTools(opts.ToolsFile, b)
		if err != nil {
			return nil, err
		}
		if specs, err = addTools(opts.ToolsFile, specs, extra); err != nil {
			return nil, err
		}
	}
	if specs, err = addTools(opts.MCPFile, specs, opts.MCPTools); err != nil {
		return nil, err
	}
	cat, err := engine.NewCatalog(specs)
	if err != nil {
		return nil, &LoadError{File: opts.ToolsFile, Code: CodeCatalog, Msg: err.Error()}
	}
	return cat, nil
}

// addTools appends extra to specs, refusing a name specs already has.
func addTools(file string, specs, extra []engine.ToolSpec) ([]engine.ToolSpec, error) {
	for _, s := range extra {
		if slices.ContainsFunc(specs, func(b engine.ToolSpec) bool { return b.Name == s.Name }) {
			return nil, &LoadError{File: file, RuleID: s.Name, Code: CodeDuplicateTool, Msg: fmt.Sprintf("tool %q is already defined; a later catalog may add tools, not redefine them", s.Name)}
		}
	}
	return append(specs, extra...), nil
}

// parseTools decodes a catalog file and validates each entry on its own, so
// the error points at the entry's line.
func parseTools(file string, b []byte) ([]engine.ToolSpec, error) {
	var doc toolsDoc
	root, err := DecodeStrict(file, b, &doc)
	if err != nil {
		return nil, err
	}
	_, seq := MappingValue(root, "tools")
	specs := make([]engine.ToolSpec, 0, len(doc.Tools))
	for i, t := range doc.Tools {
		s := engine.ToolSpec{
			Name:           t.Name,
			Version:        t.Version,
			Kind:           engine.ActionKind(t.Kind),
			SideEffect:     engine.SideEffectClass(t.SideEffect),
			Risk:           engine.RiskLevel(t.Risk),
			Idempotency:    engine.IdempotencyClass(t.Idempotency),
			RequiredScopes: t.RequiredScopes,
			Target:         t.Target,
			MCPServerID:    t.MCPServerID,
			Arguments:      t.Arguments,
			Roles:          engine.ArgumentRoles{Commands: t.Commands, Paths: t.Paths, URLs: t.URLs},
		}
		if _, err := engine.NewCatalog([]engine.ToolSpec{s}); err != nil {
			line := 0
			if seq != nil && i < len(seq.Content) {
				line = seq.Content[i].Line
			}
			return nil, &LoadError{File: file, Line: line, RuleID: t.Name, Code: CodeCatalog, Msg: err.Error()}
		}
		specs = append(specs, s)
	}
	return specs, nil
}

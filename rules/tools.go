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

// loadCatalog merges the operator catalog over the built-in one. A name
// defined in both is refused rather than replaced: an operator file that
// could reclassify payments.charge as "none" would be a quiet bypass.
func loadCatalog(operatorFile string) (*engine.Catalog, error) {
	specs, err := parseTools(ToolsFile, toolsYAML)
	if err != nil {
		return nil, err
	}
	if operatorFile != "" {
		b, err := os.ReadFile(operatorFile)
		if err != nil {
			return nil, &LoadError{File: operatorFile, Code: CodeRead, Msg: err.Error()}
		}
		extra, err := parseTools(operatorFile, b)
		if err != nil {
			return nil, err
		}
		for _, s := range extra {
			if slices.ContainsFunc(specs, func(b engine.ToolSpec) bool { return b.Name == s.Name }) {
				return nil, &LoadError{File: operatorFile, RuleID: s.Name, Code: CodeDuplicateTool, Msg: fmt.Sprintf("tool %q is built in; an operator catalog may add tools, not redefine them", s.Name)}
			}
		}
		specs = append(specs, extra...)
	}
	cat, err := engine.NewCatalog(specs)
	if err != nil {
		return nil, &LoadError{File: operatorFile, Code: CodeCatalog, Msg: err.Error()}
	}
	return cat, nil
}

// parseTools decodes a catalog file and validates each entry on its own, so
// the error points at the entry's line.
func parseTools(file string, b []byte) ([]engine.ToolSpec, error) {
	var doc toolsDoc
	root, err := decodeStrict(file, b, &doc)
	if err != nil {
		return nil, err
	}
	_, seq := mappingValue(root, "tools")
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

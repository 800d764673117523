package engine

import (
	"fmt"
	"slices"
	"strings"
)

// Catalog is the immutable tool catalog.
type Catalog struct {
	byName map[string]ToolSpec
	names  []string
}

// NewCatalog validates specs (enums, scope grammar, MCP namespace, no
// duplicate names) and freezes them. An empty Kind means tool_call.
func NewCatalog(specs []ToolSpec) (*Catalog, error) {
	c := &Catalog{byName: make(map[string]ToolSpec, len(specs))}
	for _, s := range specs {
		s = copySpec(s)
		if s.Kind == "" {
			s.Kind = ActionToolCall
		}
		if err := validateSpec(s); err != nil {
			return nil, fmt.Errorf("tool %q: %w", s.Name, err)
		}
		if _, dup := c.byName[s.Name]; dup {
			return nil, fmt.Errorf("tool %q: defined twice", s.Name)
		}
		c.byName[s.Name] = s
		c.names = append(c.names, s.Name)
	}
	slices.Sort(c.names)
	return c, nil
}

func validateSpec(s ToolSpec) error {
	switch {
	case s.Name == "" || strings.TrimSpace(s.Name) != s.Name:
		return fmt.Errorf("name is empty or padded")
	case !s.Kind.Valid():
		return fmt.Errorf("unknown kind %q", s.Kind)
	case !s.SideEffect.Valid():
		return fmt.Errorf("unknown side_effect %q", s.SideEffect)
	case !s.Risk.Valid():
		return fmt.Errorf("unknown risk %q", s.Risk)
	case !s.Idempotency.Valid():
		return fmt.Errorf("unknown idempotency %q", s.Idempotency)
	case s.Target != "" && !validTargetKind(s.Target):
		return fmt.Errorf("unknown target %q", s.Target)
	}
	if s.MCPServerID != "" {
		if !validIdentifier(s.MCPServerID) {
			return fmt.Errorf("mcp_server_id %q must be one [a-z][a-z0-9_]* word", s.MCPServerID)
		}
		if s.Target != "" && s.Target != TargetMCPServer {
			return fmt.Errorf("an MCP tool runs on target %s, not %s", TargetMCPServer, s.Target)
		}
		if !slices.Contains(s.RequiredScopes, MCPUseScope(s.MCPServerID)) {
			return fmt.Errorf("an MCP tool must require %s", MCPUseScope(s.MCPServerID))
		}
	} else if s.Target == TargetMCPServer {
		return fmt.Errorf("target %s needs an mcp_server_id", TargetMCPServer)
	}
	for i, sc := range s.RequiredScopes {
		if err := ValidToolScope(sc, s.MCPServerID); err != nil {
			return err
		}
		if slices.Contains(s.RequiredScopes[:i], sc) {
			return fmt.Errorf("scope %q listed twice", sc)
		}
	}
	for i, a := range s.Arguments {
		if a == "" || slices.Contains(s.Arguments[:i], a) {
			return fmt.Errorf("argument names must be non-empty and distinct")
		}
	}
	for _, role := range [][]string{s.Roles.Commands, s.Roles.Paths, s.Roles.URLs} {
		for _, a := range role {
			if !slices.Contains(s.Arguments, a) {
				return fmt.Errorf("commands, paths and urls name declared arguments; %q is not one", a)
			}
		}
	}
	return nil
}

// Lookup finds a tool by its exact, case-sensitive name.
func (c *Catalog) Lookup(name string) (ToolSpec, bool) {
	if c == nil {
		return ToolSpec{}, false
	}
	s, ok := c.byName[name]
	if !ok {
		return ToolSpec{}, false
	}
	return copySpec(s), true
}

// Tools lists the catalog in name order.
func (c *Catalog) Tools() []ToolSpec {
	if c == nil {
		return nil
	}
	out := make([]ToolSpec, 0, len(c.names))
	for _, n := range c.names {
		out = append(out, copySpec(c.byName[n]))
	}
	return out
}

// Len is the number of tools.
func (c *Catalog) Len() int {
	if c == nil {
		return 0
	}
	return len(c.names)
}

func copySpec(s ToolSpec) ToolSpec {
	s.RequiredScopes = slices.Clone(s.RequiredScopes)
	s.Arguments = slices.Clone(s.Arguments)
	s.Roles = ArgumentRoles{Commands: slices.Clone(s.Roles.Commands), Paths: slices.Clone(s.Roles.Paths), URLs: slices.Clone(s.Roles.URLs)}
	return s
}

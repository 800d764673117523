package engine

import (
	"fmt"
	"slices"
	"strings"
)

// The scopes the API's routes and the service's own checks name: one
// spelling each, shared by every surface (API, console, CLI).
const (
	ScopeRunRead         = "run.read"
	ScopeRunWrite        = "run.write"
	ScopeRunCancel       = "run.cancel"
	ScopeApprovalRead    = "approval.read"
	ScopeApprovalResolve = "approval.resolve"
	ScopeGrantRead       = "browser.grant.read"
	ScopeGrantWrite      = "browser.grant.write"
)

// scopeVocabulary is the closed platform vocabulary: the seed's final count
// of 43 after ADR-0143 (DESIGN.md corrects the seed's stale "forty-two").
var scopeVocabulary = []string{
	"session.read", "session.write",
	ScopeRunRead, ScopeRunWrite, ScopeRunCancel,
	ScopeApprovalRead, ScopeApprovalResolve,
	"artifact.read", "artifact.write",
	"workspace.read", "workspace.write",
	"sandbox.execute",
	"skill.write",
	"demo.write",
	"knowledge.write",
	"browser.profile.read", "browser.profile.write",
	ScopeGrantRead, ScopeGrantWrite,
	"schedule.read", "schedule.write", "schedule.cancel",
	"device.read", "device.write", "notification.read",
	"memory.read",
	"run.delegate",
	"surface.read", "surface.write",
	"persona.read", "persona.write",
	"email.read", "email.write",
	"call.read", "call.cancel", "call.delete",
	"people.read", "people.write",
	"memory.write",
	"settings.read", "settings.write",
	"media.generate",
	"notification.write",
}

// ScopeVocabulary is the closed list of 43 scope strings (a fresh copy).
func ScopeVocabulary() []string { return slices.Clone(scopeVocabulary) }

// InScopeVocabulary reports whether s is one of the 43 platform scopes.
func InScopeVocabulary(s string) bool { return slices.Contains(scopeVocabulary, s) }

// ValidScopeGrammar reports whether s is two or more [a-z][a-z0-9_]* segments
// joined by dots.
func ValidScopeGrammar(s string) bool {
	segments := 0
	start := true
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case start:
			if c < 'a' || c > 'z' {
				return false
			}
			start = false
			segments++
		case c == '.':
			start = true
		case (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_':
		default:
			return false
		}
	}
	return !start && segments >= 2
}

// validIdentifier reports whether s is one [a-z][a-z0-9_]* segment, the
// shape of an MCP server id (it becomes a scope segment).
func validIdentifier(s string) bool {
	return s != "" && !strings.Contains(s, ".") && ValidScopeGrammar(s+".x")
}

// MCPUseScope is the independent prerequisite every tool of an MCP server
// requires.
func MCPUseScope(serverID string) string { return "mcp." + serverID + ".use" }

// ValidToolScope reports whether a catalog entry may require scope: one of
// the vocabulary for a platform tool; for a tool of MCP server mcpServerID,
// only mcp.{mcpServerID}.{action} (seed decision 32), so an operator cannot
// lend a remote capability a platform scope every session already holds.
func ValidToolScope(scope, mcpServerID string) error {
	if !ValidScopeGrammar(scope) {
		return fmt.Errorf("scope %q does not match the scope grammar", scope)
	}
	if mcpServerID == "" {
		if !InScopeVocabulary(scope) {
			return fmt.Errorf("scope %q is not in the scope vocabulary", scope)
		}
		return nil
	}
	segs := strings.Split(scope, ".")
	if len(segs) < 3 || segs[0] != "mcp" || segs[1] != mcpServerID {
		return fmt.Errorf("scope %q is not allowed on a tool of MCP server %q: only mcp.%s.* scopes are", scope, mcpServerID, mcpServerID)
	}
	return nil
}

// ValidPrincipalScope reports whether a principal may hold scope: one of the
// vocabulary, or a grammar-valid MCP scope mcp.{server_id}.{verb}, the only
// way a principal can be granted an MCP server's tools (DESIGN.md §2).
func ValidPrincipalScope(scope string) error {
	if InScopeVocabulary(scope) {
		return nil
	}
	segs := strings.Split(scope, ".")
	if ValidScopeGrammar(scope) && len(segs) >= 3 && segs[0] == "mcp" {
		return nil
	}
	return fmt.Errorf("scope %q is neither in the vocabulary nor an mcp.{server_id}.{verb} scope", scope)
}

// MissingScopes is required minus held over exact strings, sorted and
// deduplicated: no hierarchy, no wildcard, no prefix rule. It returns nil
// when nothing is missing.
func MissingScopes(required, held []string) []string {
	var missing []string
	for _, r := range required {
		if !slices.Contains(held, r) && !slices.Contains(missing, r) {
			missing = append(missing, r)
		}
	}
	slices.Sort(missing)
	return missing
}

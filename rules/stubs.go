// Package rules holds the shipped policy files (default.yaml, hardline.yaml,
// tools.yaml, embedded) and their strict loader.
package rules

// Stub bodies: replaced by the real loader before anything lands.

import (
	"errors"

	"gatehouse/engine"
)

// Options selects what to load beyond the built-in files.
type Options struct {
	PolicyDir      string // CONSOLE_POLICY_DIR: extra operator profiles ({name}.yaml)
	ToolsFile      string // CONSOLE_TOOLS: operator catalog merged over the built-in one
	DefaultProfile string // CONSOLE_POLICY_PROFILE; "" means "default"
}

// Set is everything loaded: frozen rulesets by profile name, the default
// profile's name, and the tool catalog.
type Set struct {
	Rulesets map[string]*engine.LoadedRuleset
	Default  string
	Catalog  *engine.Catalog
}

// Load reads, validates and freezes profiles, the hardline set and the
// catalog, refusing anything invalid (errors name file, line and rule).
func Load(opts Options) (*Set, error) { return nil, errors.New("rules: not implemented") }

// Ruleset returns the ruleset of a profile; "" selects the default.
func (s *Set) Ruleset(profile string) (*engine.LoadedRuleset, bool) {
	if profile == "" {
		profile = s.Default
	}
	rs, ok := s.Rulesets[profile]
	return rs, ok
}

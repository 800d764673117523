package rules

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"gopkg.in/yaml.v3"

	"gatehouse/engine"
)

type profileDoc struct {
	Matrix    []rowDoc          `yaml:"matrix"`
	ToolRules map[string]rowDoc `yaml:"tool_rules"`
	Approvals struct {
		RequireDistinctResolver bool              `yaml:"require_distinct_resolver"`
		Expiry                  map[string]string `yaml:"expiry"` // risk -> Go duration
		Quorum                  map[string]int    `yaml:"quorum"` // risk -> distinct approvers
	} `yaml:"approvals"`
	Advisory struct {
		Enabled bool `yaml:"enabled"`
	} `yaml:"advisory"`
}

type rowDoc struct {
	SideEffect             string   `yaml:"side_effect"`
	Risk                   string   `yaml:"risk"`
	Condition              string   `yaml:"condition"`
	Decision               string   `yaml:"decision"`
	Otherwise              string   `yaml:"otherwise"`
	ApprovalWhen           string   `yaml:"approval_when"`
	HumanConfirmsArguments bool     `yaml:"human_confirms_arguments"`
	ArgumentsMustAuthorize bool     `yaml:"arguments_must_authorize"`
	Modifications          *modsDoc `yaml:"modifications"`
}

type modsDoc struct {
	Set    map[string]any `yaml:"set"`
	Remove []string       `yaml:"remove"`
}

// compileProfile parses a profile file and freezes it with the hardline set.
// Errors carry file:line and the rule.
func compileProfile(name, file string, b []byte, hl *hardlineSet, cat *engine.Catalog) (*engine.LoadedRuleset, error) {
	p, lines, err := parseProfile(name, file, b)
	if err != nil {
		return nil, err
	}
	for _, tr := range p.ToolRules {
		if _, ok := cat.Lookup(tr.Tool); !ok {
			return nil, &LoadError{File: file, Line: lines[tr.ID], RuleID: tr.ID, Code: CodeUnknownTool, Msg: fmt.Sprintf("tool %q is not in the catalog", tr.Tool)}
		}
	}
	rs, err := engine.NewLoadedRuleset(p, b, hl.rules, hl.bytes)
	if err != nil {
		var re *engine.RuleError
		if errors.As(err, &re) {
			if hl.lines[re.RuleID] > 0 && strings.HasPrefix(re.Code, "hardline.") {
				return nil, &LoadError{File: hl.file, Line: hl.lines[re.RuleID], RuleID: re.RuleID, Code: re.Code, Msg: re.Msg}
			}
			line := lines[re.RuleID]
			if line == 0 {
				line = lines[""]
			}
			return nil, &LoadError{File: file, Line: line, RuleID: re.RuleID, Code: re.Code, Msg: re.Msg}
		}
		return nil, &LoadError{File: file, Code: CodeValue, Msg: err.Error()}
	}
	return rs, nil
}

// parseProfile decodes a profile strictly. lines maps rule ids to the line
// of their definition; "" maps to the matrix key, for rows that are missing.
func parseProfile(name, file string, b []byte) (engine.Profile, map[string]int, error) {
	var raw yaml.Node
	if err := yaml.Unmarshal(b, &raw); err == nil {
		for _, key := range []string{"rules", "hardline"} {
			if k, _ := MappingValue(&raw, key); k != nil {
				return engine.Profile{}, nil, &LoadError{File: file, Line: k.Line, Code: CodeHardlineOverride, Msg: "a profile cannot define hardline rules; they are built in"}
			}
		}
		// A tool named twice is a rule error, not a syntax error: found here,
		// before decoding into a map refuses the document for it.
		if _, tr := MappingValue(&raw, "tool_rules"); tr != nil && tr.Kind == yaml.MappingNode {
			seen := map[string]bool{}
			for i := 0; i+1 < len(tr.Content); i += 2 {
				k := tr.Content[i]
				if seen[k.Value] {
					return engine.Profile{}, nil, &LoadError{File: file, Line: k.Line, RuleID: "tool_rule." + k.Value, Code: engine.CodeDuplicateToolRule, Msg: "two entries for tool " + k.Value}
				}
				seen[k.Value] = true
			}
		}
	}
	var doc profileDoc
	root, err := DecodeStrict(file, b, &doc)
	if err != nil {
		return engine.Profile{}, nil, err
	}
	lines := map[string]int{}
	if k, v := MappingValue(root, "matrix"); k != nil {
		lines[""] = k.Line
		if v.Kind == yaml.SequenceNode {
			for i, item := range v.Content {
				if i < len(doc.Matrix) {
					lines[rowID(doc.Matrix[i])] = item.Line
				}
			}
		}
	}
	if _, v := MappingValue(root, "tool_rules"); v != nil && v.Kind == yaml.MappingNode {
		for i := 0; i+1 < len(v.Content); i += 2 {
			lines["tool_rule."+v.Content[i].Value] = v.Content[i].Line
		}
	}

	p := engine.Profile{
		Name:                    name,
		RequireDistinctResolver: doc.Approvals.RequireDistinctResolver,
		AdvisoryEnabled:         doc.Advisory.Enabled,
	}
	for _, r := range doc.Matrix {
		pr, err := r.rule(rowID(r))
		if err != nil {
			return engine.Profile{}, nil, &LoadError{File: file, Line: lines[rowID(r)], RuleID: rowID(r), Code: CodeValue, Msg: err.Error()}
		}
		p.Rules = append(p.Rules, pr)
	}
	tools := make([]string, 0, len(doc.ToolRules))
	for t := range doc.ToolRules {
		tools = append(tools, t)
	}
	slices.Sort(tools)
	for _, t := range tools {
		id := "tool_rule." + t
		pr, err := doc.ToolRules[t].rule(id)
		if err != nil {
			return engine.Profile{}, nil, &LoadError{File: file, Line: lines[id], RuleID: id, Code: CodeValue, Msg: err.Error()}
		}
		pr.Tool = t
		p.ToolRules = append(p.ToolRules, pr)
	}
	if len(doc.Approvals.Expiry) > 0 {
		p.Expiry = map[engine.RiskLevel]time.Duration{}
		for risk, d := range doc.Approvals.Expiry {
			dur, err := time.ParseDuration(d)
			if err != nil || dur <= 0 || !engine.RiskLevel(risk).Valid() {
				return engine.Profile{}, nil, &LoadError{File: file, Code: engine.CodeExpiry, Msg: fmt.Sprintf("approvals.expiry %s: %q needs a known risk and a positive duration like 30m", risk, d)}
			}
			p.Expiry[engine.RiskLevel(risk)] = dur
		}
	}
	if len(doc.Approvals.Quorum) > 0 {
		p.Quorum = make(map[engine.RiskLevel]int, len(doc.Approvals.Quorum))
		_, approvals := MappingValue(root, "approvals")
		k, _ := MappingValue(approvals, "quorum")
		for risk, n := range doc.Approvals.Quorum {
			if !engine.RiskLevel(risk).Valid() || n < 1 || n > engine.MaxQuorum {
				return engine.Profile{}, nil, &LoadError{File: file, Line: k.Line, Code: engine.CodeQuorum, Msg: fmt.Sprintf("approvals.quorum %s: %d needs a known risk and a number of distinct approvers from 1 to %d", risk, n, engine.MaxQuorum)}
			}
			p.Quorum[engine.RiskLevel(risk)] = n
		}
	}
	return p, lines, nil
}

// rowID is the id a row gets: matrix.<side_effect>[.<risk>].
func rowID(r rowDoc) string {
	id := "matrix." + r.SideEffect
	if r.Risk != "" {
		id += "." + r.Risk
	}
	return id
}

func (r rowDoc) rule(id string) (engine.ProfileRule, error) {
	pr := engine.ProfileRule{
		ID:                     id,
		SideEffect:             engine.SideEffectClass(r.SideEffect),
		Risk:                   engine.RiskLevel(r.Risk),
		Condition:              r.Condition,
		Decision:               engine.PolicyDecisionType(r.Decision),
		Otherwise:              engine.PolicyDecisionType(r.Otherwise),
		ApprovalWhen:           r.ApprovalWhen,
		HumanConfirmsArguments: r.HumanConfirmsArguments,
		ArgumentsMustAuthorize: r.ArgumentsMustAuthorize,
	}
	if r.Modifications != nil {
		set, err := toJSONMap(r.Modifications.Set)
		if err != nil {
			return pr, fmt.Errorf("modifications.set: %w", err)
		}
		pr.Modifications = &engine.ArgumentModification{Set: set, Remove: r.Modifications.Remove}
	}
	return pr, nil
}

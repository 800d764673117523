package rules

import (
	"errors"
	"fmt"

	"gatehouse/engine"
)

// appliesToAll in applies_to names every class: a rule that reads the
// arguments the catalog declares as commands guards them on any tool.
const appliesToAll = "all"

type hardlineDoc struct {
	Rules []hardlineRuleDoc `yaml:"rules"`
}

type hardlineRuleDoc struct {
	ID          string      `yaml:"id"`
	Kind        string      `yaml:"kind"`
	AppliesTo   []string    `yaml:"applies_to"`
	Pattern     string      `yaml:"pattern"`
	Intent      string      `yaml:"intent"`
	Arguments   []string    `yaml:"arguments"`
	When        string      `yaml:"when"`
	MessageCode string      `yaml:"message_code"`
	Blocks      *exampleDoc `yaml:"blocks"`
	NearMiss    *exampleDoc `yaml:"near_miss"`
}

type exampleDoc struct {
	SideEffect string         `yaml:"side_effect"`
	Arguments  map[string]any `yaml:"arguments"`
	Target     *targetDoc     `yaml:"target"`
}

type targetDoc struct {
	Kind           string `yaml:"kind"`
	Isolated       bool   `yaml:"isolated"`
	NetworkEnabled bool   `yaml:"network_enabled"`
	DeviceID       string `yaml:"device_id"`
	ServerID       string `yaml:"server_id"`
}

// hardlineSet is the parsed hardline file: rules, the exact bytes (hashed
// into every policy_version) and rule id -> line for errors.
type hardlineSet struct {
	file  string
	bytes []byte
	rules []engine.HardlineRule
	lines map[string]int
}

func parseHardline(b []byte) (*hardlineSet, error) {
	const file = HardlineFile
	var doc hardlineDoc
	root, err := DecodeStrict(file, b, &doc)
	if err != nil {
		return nil, err
	}
	hs := &hardlineSet{file: file, bytes: b, lines: map[string]int{}}
	_, seq := MappingValue(root, "rules")
	for i, r := range doc.Rules {
		line := 0
		if seq != nil && i < len(seq.Content) {
			line = seq.Content[i].Line
		}
		hs.lines[r.ID] = line
		fail := func(format string, args ...any) error {
			return &LoadError{File: file, Line: line, RuleID: r.ID, Code: CodeMissingExample, Msg: fmt.Sprintf(format, args...)}
		}
		if r.Blocks == nil || r.NearMiss == nil {
			return nil, fail("every hardline rule needs a blocks example and a near_miss it permits")
		}
		blocks, err := r.Blocks.example()
		if err != nil {
			return nil, fail("blocks: %v", err)
		}
		near, err := r.NearMiss.example()
		if err != nil {
			return nil, fail("near_miss: %v", err)
		}
		rule := engine.HardlineRule{
			ID:          r.ID,
			Kind:        r.Kind,
			Pattern:     r.Pattern,
			Intent:      r.Intent,
			Arguments:   r.Arguments,
			When:        r.When,
			MessageCode: r.MessageCode,
			Blocks:      blocks,
			NearMiss:    near,
		}
		for _, s := range r.AppliesTo {
			if s == appliesToAll {
				rule.AppliesTo = append(rule.AppliesTo, engine.SideEffectClasses()...)
				continue
			}
			rule.AppliesTo = append(rule.AppliesTo, engine.SideEffectClass(s))
		}
		hs.rules = append(hs.rules, rule)
	}
	if len(hs.rules) == 0 {
		return nil, &LoadError{File: file, Code: engine.CodeHardlineEmpty, Msg: "no hardline rules"}
	}
	// Compile once against a minimal total profile, so a broken hardline
	// file is reported against itself rather than against every profile.
	if _, err := engine.NewLoadedRuleset(probeProfile(), nil, hs.rules, b); err != nil {
		var re *engine.RuleError
		if errors.As(err, &re) {
			return nil, &LoadError{File: file, Line: hs.lines[re.RuleID], RuleID: re.RuleID, Code: re.Code, Msg: re.Msg}
		}
		return nil, &LoadError{File: file, Code: CodeValue, Msg: err.Error()}
	}
	return hs, nil
}

// probeProfile denies every class: just enough profile to compile hardline
// rules on their own.
func probeProfile() engine.Profile {
	p := engine.Profile{Name: "hardline-probe"}
	for _, s := range engine.SideEffectClasses() {
		p.Rules = append(p.Rules, engine.ProfileRule{SideEffect: s, Decision: engine.DecisionDeny})
	}
	return p
}

func (e *exampleDoc) example() (engine.HardlineExample, error) {
	args, err := toJSONMap(e.Arguments)
	if err != nil {
		return engine.HardlineExample{}, err
	}
	ex := engine.HardlineExample{SideEffect: engine.SideEffectClass(e.SideEffect), Arguments: args}
	if e.Target != nil {
		ex.Target = engine.ExecutionTarget{
			Kind: e.Target.Kind, Isolated: e.Target.Isolated, NetworkEnabled: e.Target.NetworkEnabled,
			DeviceID: e.Target.DeviceID, ServerID: e.Target.ServerID,
		}
	}
	return ex, nil
}

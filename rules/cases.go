package rules

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"

	"gopkg.in/yaml.v3"

	"gatehouse/engine"
)

// Case is one policy case as operators keep them beside their profiles
// (`console policy test`) and as the corpus holds them: an action as the
// API sends it, the run's stamped scopes, the profile ("" is the default)
// and the decision and reason code it must get.
type Case struct {
	File    string // as given to LoadCases
	Line    int
	Name    string
	Profile string
	Scopes  []string
	Action  engine.ActionRequest
	Expect  CaseExpect
}

// CaseExpect is what a case asserts; both fields are required, so a case
// that asserts nothing does not load.
type CaseExpect struct {
	Decision   engine.PolicyDecisionType `yaml:"decision"`
	ReasonCode string                    `yaml:"reason_code"`
}

// Where returns file:line of the case.
func (c Case) Where() string { return fmt.Sprintf("%s:%d", c.File, c.Line) }

// CodeCase is the load error code of a case file's content.
const CodeCase = "case.invalid"

type caseDoc struct {
	Name    string         `yaml:"name"`
	Profile string         `yaml:"profile"`
	Scopes  []string       `yaml:"scopes"`
	Action  map[string]any `yaml:"action"`
	Expect  CaseExpect     `yaml:"expect"`
}

// caseDefaults fill what every case would otherwise repeat and no rule
// reads: the proposal's id, kind, summary and step.
var caseDefaults = map[string]any{
	"action_id": "00000000-0000-4000-8000-000000000001", "kind": string(engine.ActionToolCall), "step_number": 1,
}

// LoadCases reads every *.yaml file of dir (not its subdirectories), in
// name order. Each holds `cases:`; the action is decoded strictly, exactly
// as the API decodes a proposal, after defaults for action_id, kind,
// summary (the case name) and step_number. Names are unique across the
// directory. Errors are *LoadError naming file:line.
func LoadCases(dir string) ([]Case, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
	if err != nil {
		return nil, &LoadError{File: dir, Code: CodeRead, Msg: err.Error()}
	}
	if len(files) == 0 {
		return nil, &LoadError{File: dir, Code: CodeRead, Msg: "no *.yaml case files"}
	}
	slices.Sort(files)
	var all []Case
	seen := map[string]string{}
	for _, f := range files {
		cases, err := loadCaseFile(f)
		if err != nil {
			return nil, err
		}
		for _, c := range cases {
			if prev, dup := seen[c.Name]; dup {
				return nil, &LoadError{File: c.File, Line: c.Line, Code: CodeCase, Msg: fmt.Sprintf("case %q is also at %s", c.Name, prev)}
			}
			seen[c.Name] = c.Where()
		}
		all = append(all, cases...)
	}
	return all, nil
}

func loadCaseFile(file string) ([]Case, error) {
	b, err := os.ReadFile(file)
	if err != nil {
		return nil, &LoadError{File: file, Code: CodeRead, Msg: err.Error()}
	}
	var doc struct {
		Cases []caseDoc `yaml:"cases"`
	}
	root, err := DecodeStrict(file, b, &doc)
	if err != nil {
		return nil, err
	}
	var lines []int
	if _, v := MappingValue(root, "cases"); v != nil && v.Kind == yaml.SequenceNode {
		for _, item := range v.Content {
			lines = append(lines, item.Line)
		}
	}
	if len(doc.Cases) == 0 || len(lines) != len(doc.Cases) {
		return nil, &LoadError{File: file, Code: CodeCase, Msg: "a case file holds a non-empty list under cases:"}
	}
	out := make([]Case, len(doc.Cases))
	for i, d := range doc.Cases {
		c := Case{File: file, Line: lines[i], Name: d.Name, Profile: d.Profile, Scopes: d.Scopes, Expect: d.Expect}
		fail := func(msg string) error { return &LoadError{File: file, Line: c.Line, Code: CodeCase, Msg: msg} }
		switch {
		case d.Name == "":
			return nil, fail("a case needs a name")
		case !d.Expect.Decision.Valid() || d.Expect.ReasonCode == "":
			return nil, fail(fmt.Sprintf("case %q asserts nothing: expect needs a decision (allow, allow_with_modifications, require_approval, deny) and a reason_code", d.Name))
		case d.Action == nil:
			return nil, fail(fmt.Sprintf("case %q has no action", d.Name))
		}
		action := map[string]any{"summary": d.Name}
		for k, v := range caseDefaults {
			action[k] = v
		}
		for k, v := range d.Action {
			action[k] = v
		}
		raw, err := json.Marshal(action)
		if err == nil {
			c.Action, err = engine.DecodeActionRequest(raw)
		}
		if err != nil {
			return nil, fail(fmt.Sprintf("case %q: action: %v", d.Name, err))
		}
		out[i] = c
	}
	return out, nil
}

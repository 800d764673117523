package engine

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"
)

// RuleError is a validation failure of one rule: a stable Code a caller can
// switch on, the RuleID so the loader can point at the file and line, and a
// message for humans.
type RuleError struct {
	RuleID string
	Code   string
	Msg    string
}

func (e *RuleError) Error() string {
	if e.RuleID == "" {
		return e.Code + ": " + e.Msg
	}
	return "rule " + e.RuleID + ": " + e.Code + ": " + e.Msg
}

func ruleErr(id, code, format string, args ...any) error {
	return &RuleError{RuleID: id, Code: code, Msg: fmt.Sprintf(format, args...)}
}

// Rule error codes.
const (
	CodeMissingRow          = "profile.missing_row"
	CodeDuplicateRow        = "profile.duplicate_row"
	CodeUnknownSideEffect   = "profile.unknown_side_effect"
	CodeUnknownRisk         = "profile.unknown_risk"
	CodeRiskOnlyRule        = "profile.risk_only_rule"
	CodeUnknownCondition    = "profile.unknown_condition"
	CodeInvalidDecision     = "profile.invalid_decision"
	CodeConditionOtherwise  = "profile.condition_otherwise"
	CodeModifications       = "profile.modifications"
	CodeMultipleModifying   = "profile.multiple_modifying_rules"
	CodeDuplicateToolRule   = "profile.duplicate_tool_rule"
	CodeToolRuleShape       = "profile.tool_rule_shape"
	CodeRuleID              = "profile.rule_id"
	CodeExpiry              = "profile.expiry"
	CodeQuorum              = "profile.quorum"
	CodeHardlineDuplicate   = "hardline.duplicate_id"
	CodeHardlineKind        = "hardline.invalid_rule"
	CodeHardlineAppliesTo   = "hardline.applies_to"
	CodeHardlineMessageCode = "hardline.message_code"
	CodeHardlineExample     = "hardline.example"
	CodeHardlineNotBlocked  = "hardline.blocks_example_permitted"
	CodeHardlineNearMiss    = "hardline.near_miss_blocked"
	CodeHardlineEmpty       = "hardline.empty"
)

// condition is a compiled profile condition.
type condition int

const (
	condNone condition = iota
	condPathInsideWorkspace
	condConstructedProviderTarget
	condTargetIsolated
	condCommandOpaque
	condBoundedBrowserScroll
)

func parseCondition(s string) (condition, bool) {
	switch s {
	case "":
		return condNone, true
	case CondPathInsideWorkspace:
		return condPathInsideWorkspace, true
	case CondConstructedProviderTarget:
		return condConstructedProviderTarget, true
	case CondTargetIsolated:
		return condTargetIsolated, true
	case CondCommandOpaque:
		return condCommandOpaque, true
	case CondBoundedBrowserScroll:
		return condBoundedBrowserScroll, true
	}
	return condNone, false
}

// compiledRule is a profile row ready to evaluate. Reason codes and
// explanations are built at load so the allow path allocates nothing.
type compiledRule struct {
	id              string
	reason          string
	layer           Layer
	cond            condition
	decision        PolicyDecisionType
	otherwise       PolicyDecisionType
	isToolRule      bool
	hca             bool
	strictArgs      bool
	mods            *ArgumentModification
	approvalWhen    condition
	explainHeld     string
	explainApproval string
	explainFailed   string
	explainTrust    string
}

// LoadedRuleset is an immutable, compiled profile plus hardline set. There
// is no setter and no reload; accessors return copies.
type LoadedRuleset struct {
	policyVersion  string
	profileName    string
	profileSHA256  string
	hardlineSHA256 string
	profile        Profile
	hardlineRules  []HardlineRule

	rows      [numSideEffects]*compiledRule
	pairRows  [numSideEffects][4]*compiledRule
	toolRules map[string]*compiledRule
	hardline  [numSideEffects][]*compiledHardline
}

// ComputePolicyVersion is {profile}@{sha256(profile)[:12]}+h{sha256(hardline)[:8]}.
func ComputePolicyVersion(name string, profileBytes, hardlineBytes []byte) string {
	return name + "@" + sha256Hex(profileBytes)[:12] + "+h" + sha256Hex(hardlineBytes)[:8]
}

func sha256Hex(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// NewLoadedRuleset validates and compiles a profile and the hardline set and
// freezes them. The bytes are what was read from disk: policy_version hashes
// exactly them. Every hardline rule must block its Blocks example and permit
// its NearMiss example, or the set does not load.
func NewLoadedRuleset(p Profile, profileBytes []byte, hardline []HardlineRule, hardlineBytes []byte) (*LoadedRuleset, error) {
	if p.Name == "" {
		return nil, ruleErr("", CodeRuleID, "profile has no name")
	}
	rs := &LoadedRuleset{
		policyVersion:  ComputePolicyVersion(p.Name, profileBytes, hardlineBytes),
		profileName:    p.Name,
		profileSHA256:  sha256Hex(profileBytes),
		hardlineSHA256: sha256Hex(hardlineBytes),
		profile:        copyProfile(p),
		hardlineRules:  copyHardline(hardline),
		toolRules:      make(map[string]*compiledRule, len(p.ToolRules)),
	}
	if err := rs.compileRows(); err != nil {
		return nil, err
	}
	if err := rs.compileToolRules(); err != nil {
		return nil, err
	}
	if err := rs.compileHardline(); err != nil {
		return nil, err
	}
	for r, d := range p.Expiry {
		if !r.Valid() || d <= 0 {
			return nil, ruleErr("", CodeExpiry, "expiry override %q=%s: needs a known risk and a positive duration", r, d)
		}
	}
	for r, n := range p.Quorum {
		if !r.Valid() || n < 1 || n > MaxQuorum {
			return nil, ruleErr("", CodeQuorum, "quorum %q=%d: needs a known risk and a number of approvers from 1 to %d", r, n, MaxQuorum)
		}
	}
	return rs, nil
}

func (rs *LoadedRuleset) compileRows() error {
	modifying := map[SideEffectClass]string{}
	for i := range rs.profile.Rules {
		row := &rs.profile.Rules[i]
		if row.SideEffect == "" {
			if row.Risk != "" {
				return ruleErr(row.ID, CodeRiskOnlyRule, "a rule may not be keyed on risk alone")
			}
			return ruleErr(row.ID, CodeUnknownSideEffect, "row has no side_effect")
		}
		ci := row.SideEffect.index()
		if ci < 0 {
			return ruleErr(row.ID, CodeUnknownSideEffect, "unknown side_effect %q", row.SideEffect)
		}
		if row.Tool != "" || row.HumanConfirmsArguments || row.ArgumentsMustAuthorize {
			return ruleErr(row.ID, CodeToolRuleShape, "tool, human_confirms_arguments and arguments_must_authorize belong to tool_rules")
		}
		id := "matrix." + string(row.SideEffect)
		if row.Risk != "" {
			if !row.Risk.Valid() {
				return ruleErr(row.ID, CodeUnknownRisk, "unknown risk %q", row.Risk)
			}
			id += "." + string(row.Risk)
		}
		if row.ID != "" && row.ID != id {
			return ruleErr(row.ID, CodeRuleID, "rule id must be %q", id)
		}
		row.ID = id
		cr, err := rs.compileRule(*row, MatrixReason(row.SideEffect), LayerMatrix)
		if err != nil {
			return err
		}
		slot := &rs.rows[ci]
		if row.Risk != "" {
			slot = &rs.pairRows[ci][row.Risk.Rank()]
		}
		if *slot != nil {
			return ruleErr(id, CodeDuplicateRow, "more than one row for %s", strings.TrimPrefix(id, "matrix."))
		}
		*slot = cr
		if cr.mods != nil {
			if prev, dup := modifying[row.SideEffect]; dup {
				return ruleErr(id, CodeMultipleModifying, "%s also modifies %s: at most one modifying rule may match an action", prev, row.SideEffect)
			}
			modifying[row.SideEffect] = id
		}
	}
	for ci, s := range SideEffectClasses() {
		if rs.rows[ci] == nil {
			return ruleErr("matrix."+string(s), CodeMissingRow, "profile %s has no row for side_effect %s", rs.profileName, s)
		}
	}
	return nil
}

func (rs *LoadedRuleset) compileToolRules() error {
	for i := range rs.profile.ToolRules {
		tr := &rs.profile.ToolRules[i]
		if tr.Tool == "" {
			return ruleErr(tr.ID, CodeToolRuleShape, "tool rule names no tool")
		}
		if tr.SideEffect != "" || tr.Risk != "" {
			return ruleErr(tr.ID, CodeToolRuleShape, "a tool rule is keyed on the tool name only")
		}
		id := "tool_rule." + tr.Tool
		if tr.ID != "" && tr.ID != id {
			return ruleErr(tr.ID, CodeRuleID, "rule id must be %q", id)
		}
		tr.ID = id
		if _, dup := rs.toolRules[tr.Tool]; dup {
			return ruleErr(id, CodeDuplicateToolRule, "two entries for tool %s", tr.Tool)
		}
		cr, err := rs.compileRule(*tr, ToolRuleReason(tr.Tool), LayerToolRule)
		if err != nil {
			return err
		}
		cr.isToolRule = true
		cr.hca = tr.HumanConfirmsArguments
		cr.strictArgs = tr.ArgumentsMustAuthorize
		if cr.hca && cr.strictArgs {
			return ruleErr(id, CodeToolRuleShape, "human_confirms_arguments suppresses the argument half that arguments_must_authorize tightens: name one")
		}
		rs.toolRules[tr.Tool] = cr
	}
	return nil
}

func (rs *LoadedRuleset) compileRule(r ProfileRule, reason string, layer Layer) (*compiledRule, error) {
	cond, ok := parseCondition(r.Condition)
	if !ok {
		return nil, ruleErr(r.ID, CodeUnknownCondition, "unknown condition %q", r.Condition)
	}
	if !r.Decision.Valid() {
		return nil, ruleErr(r.ID, CodeInvalidDecision, "invalid decision %q", r.Decision)
	}
	if (cond == condNone) != (r.Otherwise == "") {
		return nil, ruleErr(r.ID, CodeConditionOtherwise, "a condition and an otherwise decision go together")
	}
	approvalWhen, ok := parseCondition(r.ApprovalWhen)
	if !ok {
		return nil, ruleErr(r.ID, CodeUnknownCondition, "unknown approval_when condition %q", r.ApprovalWhen)
	}
	if r.Otherwise != "" && (!r.Otherwise.Valid() || r.Otherwise == DecisionAllowWithModifications) {
		return nil, ruleErr(r.ID, CodeInvalidDecision, "invalid otherwise decision %q", r.Otherwise)
	}
	if (r.Decision == DecisionAllowWithModifications) != (r.Modifications != nil) {
		return nil, ruleErr(r.ID, CodeModifications, "modifications go with decision allow_with_modifications, and only with it")
	}
	if r.Modifications != nil && len(r.Modifications.Set) == 0 && len(r.Modifications.Remove) == 0 {
		return nil, ruleErr(r.ID, CodeModifications, "modifications change nothing")
	}
	cr := &compiledRule{
		id:           r.ID,
		reason:       reason,
		layer:        layer,
		cond:         cond,
		decision:     r.Decision,
		otherwise:    r.Otherwise,
		mods:         copyMods(r.Modifications),
		approvalWhen: approvalWhen,
	}
	prefix := "profile " + rs.profileName + " rule " + r.ID
	if cond == condNone {
		cr.explainHeld = prefix + ": " + string(r.Decision)
	} else {
		cr.explainHeld = prefix + ": condition " + r.Condition + " holds: " + string(r.Decision)
		cr.explainFailed = prefix + ": condition " + r.Condition + " does not hold: " + string(r.Otherwise)
	}
	if approvalWhen != condNone {
		cr.explainApproval = prefix + ": " + r.ApprovalWhen + " holds: require_approval"
	}
	cr.explainTrust = prefix + " allows, raised to require_approval by the trust overlay: an argument or the origin of the action cannot authorize it"
	return cr, nil
}

func (rs *LoadedRuleset) compileHardline() error {
	seen := map[string]bool{}
	for _, r := range rs.hardlineRules {
		if r.ID == "" || !validIdentifier(r.ID) {
			return ruleErr(r.ID, CodeHardlineKind, "hardline rule id must be one [a-z][a-z0-9_]* word")
		}
		if seen[r.ID] {
			return ruleErr(r.ID, CodeHardlineDuplicate, "duplicate hardline rule id")
		}
		seen[r.ID] = true
		code := strings.TrimPrefix(r.MessageCode, HardlineMessagePrefix)
		if code == r.MessageCode || !ValidScopeGrammar("x."+code) {
			return ruleErr(r.ID, CodeHardlineMessageCode, "message_code %q must be policy.hardline.<code>", r.MessageCode)
		}
		if len(r.AppliesTo) == 0 {
			return ruleErr(r.ID, CodeHardlineAppliesTo, "applies_to names no class")
		}
		for _, s := range r.AppliesTo {
			if !s.Valid() {
				return ruleErr(r.ID, CodeHardlineAppliesTo, "unknown class %q in applies_to", s)
			}
		}
		h, err := compileHardline(r)
		if err != nil {
			return ruleErr(r.ID, CodeHardlineKind, "%v", err)
		}
		if err := checkExamples(r, h); err != nil {
			return err
		}
		for _, s := range r.AppliesTo {
			ci := s.index()
			if !slices.Contains(rs.hardline[ci], h) {
				rs.hardline[ci] = append(rs.hardline[ci], h)
			}
		}
	}
	return nil
}

// checkExamples proves the rule's precision at load: it blocks its Blocks
// example and permits its NearMiss. A rule that cannot name a near miss it
// permits is too broad to load.
func checkExamples(r HardlineRule, h *compiledHardline) error {
	fires := func(ex HardlineExample) bool {
		if !slices.Contains(r.AppliesTo, ex.SideEffect) {
			return false
		}
		a := ProposedAction{SideEffect: ex.SideEffect, Arguments: ex.Arguments, Target: ex.Target}
		return h.blocks(&a, &actionFacts{})
	}
	if !r.Blocks.SideEffect.Valid() || !r.NearMiss.SideEffect.Valid() {
		return ruleErr(r.ID, CodeHardlineExample, "blocks and near_miss examples both need a known side_effect")
	}
	if r.Kind != HardlineSideEffect && (len(r.Blocks.Arguments) == 0 || len(r.NearMiss.Arguments) == 0) {
		return ruleErr(r.ID, CodeHardlineExample, "blocks and near_miss examples both need arguments")
	}
	if r.Kind != HardlineSideEffect && !slices.Contains(r.AppliesTo, r.NearMiss.SideEffect) {
		// Otherwise the near miss would pass without ever meeting the pattern.
		return ruleErr(r.ID, CodeHardlineExample, "near_miss must be of a class the rule applies to")
	}
	if !fires(r.Blocks) {
		return ruleErr(r.ID, CodeHardlineNotBlocked, "the rule does not block its blocks example")
	}
	if fires(r.NearMiss) {
		return ruleErr(r.ID, CodeHardlineNearMiss, "the rule blocks its own near_miss")
	}
	return nil
}

// PolicyVersion identifies the whole evaluated ruleset.
func (rs *LoadedRuleset) PolicyVersion() string { return rs.policyVersion }

// ProfileName is the profile's name.
func (rs *LoadedRuleset) ProfileName() string { return rs.profileName }

// ProfileSHA256 is the hex SHA-256 of the profile bytes.
func (rs *LoadedRuleset) ProfileSHA256() string { return rs.profileSHA256 }

// HardlineSHA256 is the hex SHA-256 of the hardline bytes.
func (rs *LoadedRuleset) HardlineSHA256() string { return rs.hardlineSHA256 }

// Profile returns a deep copy of the profile, rule ids filled in.
func (rs *LoadedRuleset) Profile() Profile { return copyProfile(rs.profile) }

// Hardline returns a deep copy of the hardline rules.
func (rs *LoadedRuleset) Hardline() []HardlineRule { return copyHardline(rs.hardlineRules) }

// RuleCount is the number of profile rules: rows, pair rows and tool rules.
func (rs *LoadedRuleset) RuleCount() int { return len(rs.profile.Rules) + len(rs.profile.ToolRules) }

// HardlineCount is the number of hardline rules.
func (rs *LoadedRuleset) HardlineCount() int { return len(rs.hardlineRules) }

// RequireDistinctResolver is approvals.require_distinct_resolver.
func (rs *LoadedRuleset) RequireDistinctResolver() bool { return rs.profile.RequireDistinctResolver }

// MaxQuorum bounds approvals.quorum: a quorum no team can reach would
// only let approvals expire.
const MaxQuorum = 10

// Quorum is how many distinct principals must approve an action of risk
// (approvals.quorum; one when the profile sets none).
func (rs *LoadedRuleset) Quorum(risk RiskLevel) int {
	if n, ok := rs.profile.Quorum[risk]; ok {
		return n
	}
	return 1
}

// AdvisoryEnabled is advisory.enabled.
func (rs *LoadedRuleset) AdvisoryEnabled() bool { return rs.profile.AdvisoryEnabled }

// ExpiryOverrides returns a copy of the profile's expiry overrides by risk.
func (rs *LoadedRuleset) ExpiryOverrides() map[RiskLevel]time.Duration {
	return maps.Clone(rs.profile.Expiry)
}

func copyProfile(p Profile) Profile {
	out := p
	out.Rules = copyRules(p.Rules)
	out.ToolRules = copyRules(p.ToolRules)
	out.Expiry = maps.Clone(p.Expiry)
	out.Quorum = maps.Clone(p.Quorum)
	return out
}

func copyRules(rules []ProfileRule) []ProfileRule {
	if rules == nil {
		return nil
	}
	out := make([]ProfileRule, len(rules))
	for i, r := range rules {
		r.Modifications = copyMods(r.Modifications)
		out[i] = r
	}
	return out
}

func copyMods(m *ArgumentModification) *ArgumentModification {
	if m == nil {
		return nil
	}
	return &ArgumentModification{Set: deepCopyMap(m.Set), Remove: slices.Clone(m.Remove)}
}

func copyHardline(rules []HardlineRule) []HardlineRule {
	if rules == nil {
		return nil
	}
	out := make([]HardlineRule, len(rules))
	for i, r := range rules {
		r.AppliesTo = slices.Clone(r.AppliesTo)
		r.Arguments = slices.Clone(r.Arguments)
		r.Blocks = copyExample(r.Blocks)
		r.NearMiss = copyExample(r.NearMiss)
		out[i] = r
	}
	return out
}

func copyExample(e HardlineExample) HardlineExample {
	e.Arguments = deepCopyMap(e.Arguments)
	return e
}

func deepCopyMap(m map[string]any) map[string]any {
	if m == nil {
		return nil
	}
	out := make(map[string]any, len(m))
	for k, v := range m {
		out[k] = deepCopy(v)
	}
	return out
}

func deepCopy(v any) any {
	switch x := v.(type) {
	case map[string]any:
		return deepCopyMap(x)
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = deepCopy(e)
		}
		return out
	case []string:
		return slices.Clone(x)
	}
	return v
}

package engine

import (
	"encoding/json"
	"errors"
	"go/ast"
	"go/parser"
	"go/token"
	"math"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"
)

// engineDeps are the only packages outside the standard library the engine
// may depend on: pure parsers (shell words, WHATWG URLs, UTS #46 and NFKC)
// with no I/O of their own. A prefix ending in "/" admits its subpackages.
var engineDeps = []string{
	"gatehouse/engine",
	"mvdan.cc/sh/v3/syntax", "mvdan.cc/sh/v3/fileutil",
	"golang.org/x/net/idna",
	"golang.org/x/text/",
	"github.com/nlnwa/whatwg-url/",
	"github.com/bits-and-blooms/bitset",
}

func allowedEngineDep(dep string) bool {
	for _, a := range engineDeps {
		if dep == a || strings.HasSuffix(a, "/") && strings.HasPrefix(dep, a) {
			return true
		}
	}
	return false
}

// TestGate02Determinism's structural half (the behavioural half runs the
// corpus in package rules): the engine depends on the standard library and
// engineDeps only, imports neither os nor net/http, and never reads the
// clock.
func TestGate02Determinism(t *testing.T) {
	t.Parallel()
	out, err := exec.Command("go", "list", "-deps", "-f", "{{if not .Standard}}{{.ImportPath}}{{end}}", ".").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	for _, dep := range strings.Fields(string(out)) {
		if !allowedEngineDep(dep) {
			t.Errorf("engine depends on non-standard package %s", dep)
		}
	}
	for _, dep := range []string{"github.com/jackc/pgx/v5", "net/http", "os/exec", "gopkg.in/yaml.v3", "mvdan.cc/sh/v3/interp", "golang.org/x/net/html"} {
		if allowedEngineDep(dep) {
			t.Errorf("the allowlist admits %s", dep)
		}
	}
	// Nothing the engine pulls in, directly or not, may reach the network,
	// a database or a subprocess.
	all, err := exec.Command("go", "list", "-deps", ".").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	for _, dep := range strings.Fields(string(all)) {
		if dep == "net" || dep == "net/http" || dep == "os/exec" || strings.HasPrefix(dep, "database/") {
			t.Errorf("engine depends on %s", dep)
		}
	}
	files, _ := filepath.Glob("*.go")
	fset := token.NewFileSet()
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		file, err := parser.ParseFile(fset, f, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, imp := range file.Imports {
			if p := strings.Trim(imp.Path.Value, `"`); p == "os" || p == "net/http" || strings.HasPrefix(p, "os/") || p == "math/rand" || p == "math/rand/v2" || p == "crypto/rand" {
				t.Errorf("%s imports %s", f, p)
			}
		}
		for _, c := range clockReads(file) {
			t.Errorf("%s: reads the clock: %s", fset.Position(c.Pos()), c.Sel.Name)
		}
	}
}

// clockReads finds the calls (and method values) of file that read the
// clock, under whatever name file imports the time package: an alias
// (import t "time") is the same package. A dot import is reported whole.
func clockReads(file *ast.File) []*ast.SelectorExpr {
	names := map[string]bool{}
	var out []*ast.SelectorExpr
	for _, imp := range file.Imports {
		if strings.Trim(imp.Path.Value, `"`) != "time" {
			continue
		}
		switch {
		case imp.Name == nil:
			names["time"] = true
		case imp.Name.Name == ".":
			out = append(out, &ast.SelectorExpr{X: imp.Name, Sel: &ast.Ident{Name: "dot import of time", NamePos: imp.Pos()}})
		case imp.Name.Name != "_":
			names[imp.Name.Name] = true
		}
	}
	ast.Inspect(file, func(n ast.Node) bool {
		sel, ok := n.(*ast.SelectorExpr)
		if !ok {
			return true
		}
		if id, ok := sel.X.(*ast.Ident); ok && names[id.Name] && slices.Contains([]string{"Now", "Since", "Until", "Tick", "After", "AfterFunc", "NewTimer", "NewTicker", "Sleep"}, sel.Sel.Name) {
			out = append(out, sel)
		}
		return true
	})
	return out
}

// TestClockScanSeesAliases: the scan TestGate02Determinism relies on finds
// the clock under an alias and through a dot import, and not in a use of a
// time value passed in.
func TestClockScanSeesAliases(t *testing.T) {
	t.Parallel()
	for src, want := range map[string]int{
		"package x\nimport t \"time\"\nvar _ = t.Now()":                              1,
		"package x\nimport clock \"time\"\nvar f = clock.Since":                      1,
		"package x\nimport . \"time\"\nvar _ = Now()":                                1,
		"package x\nimport \"time\"\nfunc f(now time.Time) time.Time { return now }": 0,
	} {
		file, err := parser.ParseFile(token.NewFileSet(), "x.go", src, 0)
		if err != nil {
			t.Fatal(err)
		}
		if got := len(clockReads(file)); got != want {
			t.Errorf("%q: %d clock reads, want %d", src, got, want)
		}
	}
}

func testRuleset(t testing.TB) *LoadedRuleset {
	t.Helper()
	p := Profile{Name: "test"}
	for _, s := range SideEffectClasses() {
		p.Rules = append(p.Rules, ProfileRule{SideEffect: s, Decision: DecisionAllow})
	}
	p.Rules[1] = ProfileRule{SideEffect: SideEffectWorkspaceRead, Condition: CondPathInsideWorkspace, Decision: DecisionAllow, Otherwise: DecisionDeny}
	p.Rules[3] = ProfileRule{SideEffect: SideEffectNetworkRead, Decision: DecisionAllowWithModifications, Modifications: &ArgumentModification{Set: map[string]any{"safe": true}}}
	p.ToolRules = []ProfileRule{{Tool: "sms", Decision: DecisionAllow, HumanConfirmsArguments: true}}
	hl := []HardlineRule{{
		ID: "no_root", Kind: HardlineCommand, AppliesTo: []SideEffectClass{SideEffectCodeExecution},
		Intent: IntentRecursiveDeleteRoot, MessageCode: "policy.hardline.destructive_command",
		Blocks:   HardlineExample{SideEffect: SideEffectCodeExecution, Arguments: map[string]any{"command": "rm -rf /"}},
		NearMiss: HardlineExample{SideEffect: SideEffectCodeExecution, Arguments: map[string]any{"command": "rm -rf ./b"}},
	}}
	rs, err := NewLoadedRuleset(p, []byte("profile"), hl, []byte("hardline"))
	if err != nil {
		t.Fatal(err)
	}
	return rs
}

func action(side SideEffectClass, args map[string]any) ProposedAction {
	_, hash, _ := NormalizeArguments(args)
	return ProposedAction{
		Kind: ActionToolCall, Name: "t", SideEffect: side, Risk: RiskLow, Idempotency: IdempotencyReadOnly,
		Arguments: args, NormalizedArgumentsHash: hash, OriginTrust: TrustUser,
	}
}

func TestGate04Monotonicity(t *testing.T) {
	t.Parallel()
	rs := testRuleset(t)
	var dets []PolicyDecision
	for _, s := range SideEffectClasses() {
		for _, origin := range TrustLevels() {
			a := action(s, map[string]any{"command": "rm -rf /", "path": "a.md"})
			a.OriginTrust = origin
			dets = append(dets, EvaluateDeterministic(a, Principal{}, RunSnapshot{}, rs))
		}
	}
	for _, d := range PolicyDecisionTypes() {
		dets = append(dets, PolicyDecision{Decision: d, ReasonCode: "x", PolicyVersion: "v"})
	}
	verdicts := []AdvisoryVerdict{{Verdict: AdvisoryAbstain}, {Verdict: AdvisoryRequireApproval, Signals: []string{"s1"}}, {Verdict: AdvisoryDeny}, {Verdict: "allow"}, {}}
	seen := map[PolicyDecisionType]bool{}
	for _, det := range dets {
		seen[det.Decision] = true
		for _, v := range verdicts {
			got := ApplyAdvice(det, v)
			if got.Decision.Rank() < det.Decision.Rank() {
				t.Fatalf("advice lowered %s to %s", det.Decision, got.Decision)
			}
			if got.PolicyVersion != det.PolicyVersion {
				t.Fatal("advice changed the policy version")
			}
			if got.ModifiedArguments != nil && !reflect.DeepEqual(got.ModifiedArguments, det.ModifiedArguments) {
				t.Fatal("advice added modifications")
			}
			if v.Verdict == AdvisoryAbstain {
				a, _ := json.Marshal(got)
				b, _ := json.Marshal(det)
				if string(a) != string(b) {
					t.Fatal("abstention changed the decision")
				}
			}
			if got.Decision != det.Decision && got.ReasonCode != ReasonAdvisoryEscalated {
				t.Fatalf("escalation reason %s", got.ReasonCode)
			}
			for _, other := range dets {
				c := Combine(det, other)
				if c.Decision.Rank() != max(det.Decision.Rank(), other.Decision.Rank()) {
					t.Fatal("combine is not max")
				}
				if c.ModifiedArguments != nil && c.Decision != DecisionAllowWithModifications {
					t.Fatal("modifications survived a non-modify decision")
				}
			}
		}
	}
	if len(seen) != 4 {
		t.Fatalf("cross product covers only %v", seen)
	}
	if tie := Combine(PolicyDecision{Decision: DecisionDeny, ReasonCode: "first"}, PolicyDecision{Decision: DecisionDeny, ReasonCode: "second"}); tie.ReasonCode != "first" {
		t.Fatal("ties must keep the first")
	}
	if Combine().Decision != DecisionDeny {
		t.Fatal("combining nothing must deny")
	}
}

func TestGate05LoadedRulesetHasNoExportedState(t *testing.T) {
	t.Parallel()
	typ := reflect.TypeFor[LoadedRuleset]()
	for f := range typ.Fields() {
		if f.IsExported() {
			t.Errorf("LoadedRuleset has exported field %s", f.Name)
		}
	}
	pt := reflect.TypeFor[*LoadedRuleset]()
	for m := range pt.Methods() {
		if strings.HasPrefix(m.Name, "Set") || strings.HasPrefix(m.Name, "Add") || strings.HasPrefix(m.Name, "Reload") || strings.HasPrefix(m.Name, "Remove") {
			t.Errorf("LoadedRuleset has mutator-like method %s", m.Name)
		}
	}
	// Mutating the inputs after construction changes nothing.
	rs := testRuleset(t)
	p := rs.Profile()
	p.Rules[3].Modifications.Set["safe"] = false
	a := action(SideEffectNetworkRead, map[string]any{"q": "x"})
	if d := EvaluateDeterministic(a, Principal{}, RunSnapshot{}, rs); d.ModifiedArguments["safe"] != true {
		t.Fatal("editing a profile copy changed the ruleset")
	}
}

func TestEvaluatePaths(t *testing.T) {
	t.Parallel()
	rs := testRuleset(t)
	eval := func(a ProposedAction) PolicyDecision { return EvaluateDeterministic(a, Principal{}, RunSnapshot{}, rs) }
	if d := eval(action(SideEffectCodeExecution, map[string]any{"command": "rm -rf /"})); d.Layer != LayerHardline || d.RuleID != "no_root" || d.ReasonCode != "policy.hardline.destructive_command" || d.PolicyVersion != rs.PolicyVersion() {
		t.Fatalf("hardline: %+v", d)
	}
	bad := action(SideEffectNone, nil)
	bad.NormalizedArgumentsHash = ""
	if d := eval(bad); d.ReasonCode != ReasonUnclassifiable || d.Decision != DecisionDeny {
		t.Fatalf("missing hash: %+v", d)
	}
	bad = action("teleport", nil)
	if d := eval(bad); d.ReasonCode != ReasonUnclassifiable {
		t.Fatalf("unknown class: %+v", d)
	}
	if d := EvaluateDeterministic(action(SideEffectNone, nil), Principal{}, RunSnapshot{}, nil); d.Decision != DecisionDeny {
		t.Fatal("nil ruleset must deny")
	}
	sms := action(SideEffectExternalMessage, map[string]any{"body": "x"})
	sms.Name = "sms"
	sms.ArgumentTrust = map[string]TrustLevel{"body": TrustExternalUntrusted}
	if d := eval(sms); d.Decision != DecisionAllow || d.ReasonCode != "policy.tool_rule.sms" || d.Layer != LayerToolRule {
		t.Fatalf("sms: %+v", d)
	}
	sms.OriginTrust = TrustInternalTool
	if d := eval(sms); d.Decision != DecisionRequireApproval || d.ReasonCode != ReasonTrustEscalated || d.Layer != LayerTrust {
		t.Fatalf("sms from a tool: %+v", d)
	}
	w := action(SideEffectWorkspaceWrite, map[string]any{"path": "a"})
	w.OriginTrust = TrustExternalUntrusted
	if d := eval(w); d.Decision != DecisionRequireApproval {
		t.Fatalf("untrusted write: %+v", d)
	}
}

func TestPathInsideWorkspace(t *testing.T) {
	t.Parallel()
	for p, want := range map[string]bool{
		"a.md": true, "notes/a.md": true, "a..b/c": true, ".envrc": true,
		"": false, ".": false, "..": false, "../a": false, "a/../b": false, "/a": false, "~/a": false,
		"./a": false, "a//b": false, "a/": false, `a\b`: false, "C:a": false, "a\x00": false, "a\nb": false,
	} {
		if got := PathInsideWorkspace(p); got != want {
			t.Errorf("%q: got %v", p, got)
		}
	}
}

func TestScopeVocabulary(t *testing.T) {
	t.Parallel()
	v := ScopeVocabulary()
	if len(v) != 43 {
		t.Fatalf("vocabulary has %d scopes, want 43", len(v))
	}
	seen := map[string]bool{}
	for _, s := range v {
		if seen[s] || !ValidScopeGrammar(s) {
			t.Errorf("scope %q duplicate or ungrammatical", s)
		}
		seen[s] = true
	}
	v[0] = "mutated"
	if ScopeVocabulary()[0] == "mutated" {
		t.Fatal("vocabulary is shared")
	}
	for _, s := range []string{"run", "Run.read", "run.", ".run", "run..read", "run.read-x", "1run.read", "run.r ead"} {
		if ValidScopeGrammar(s) {
			t.Errorf("%q accepted", s)
		}
	}
	for _, c := range []struct {
		scope, server string
		ok            bool
	}{
		{"run.read", "", true}, {"mcp.files.write", "", false}, {"run.reads", "", false},
		{"mcp.files.write", "files", true}, {"mcp.files.use", "files", true}, {"mcp.other.write", "files", false},
		{"run.cancel", "files", false}, {"mcp.files", "files", false},
	} {
		if err := ValidToolScope(c.scope, c.server); (err == nil) != c.ok {
			t.Errorf("ValidToolScope(%q, %q) = %v", c.scope, c.server, err)
		}
	}
	if m := MissingScopes([]string{"b", "a", "a", "c"}, []string{"c"}); !slices.Equal(m, []string{"a", "b"}) {
		t.Fatal(m)
	}
	if m := MissingScopes(nil, nil); m != nil {
		t.Fatal(m)
	}
	_, err := NewCatalog([]ToolSpec{{Name: "f.w", SideEffect: SideEffectExternalWrite, Risk: RiskHigh, Idempotency: IdempotencyIdempotent, MCPServerID: "f", RequiredScopes: []string{"mcp.f.write"}}})
	if err == nil {
		t.Fatal("MCP tool without mcp.f.use registered")
	}
}

func TestRevalidate(t *testing.T) {
	t.Parallel()
	rs := testRuleset(t)
	other, err := NewLoadedRuleset(Profile{Name: "test", Rules: denyAll()}, []byte("other"), nil, []byte("hardline"))
	if err != nil {
		t.Fatal(err)
	}
	a := action(SideEffectNone, map[string]any{"x": 1})
	snap := ApprovalSnapshot{ArgumentsHash: "h", PrincipalScopes: []string{"run.write", "run.read"}, AgentVersion: "1", PolicyVersion: rs.PolicyVersion(), Action: a}
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	base := ResumeSnapshot{ArgumentsHash: "h", PrincipalScopes: []string{"run.read", "run.write", "extra.scope"}, AgentVersion: "1", Ruleset: rs, Now: now}
	if out := Revalidate(snap, base); !out.Authorized {
		t.Fatalf("unchanged: %+v", out)
	}
	check := func(name string, r ResumeSnapshot, cause, reason string, invalidated bool) {
		t.Helper()
		out := Revalidate(snap, r)
		if out.Authorized || out.Cause != cause || out.ReasonCode != reason || out.Invalidated != invalidated {
			t.Errorf("%s: %+v", name, out)
		}
	}
	r := base
	r.ArgumentsHash = "other"
	r.PrincipalScopes = nil // the hash is checked first
	check("arguments", r, VoidArgumentsChanged, ReasonApprovalInvalidated, true)
	r = base
	r.PrincipalScopes = []string{"run.write"}
	check("scopes", r, VoidScopesNarrowed, ReasonApprovalInvalidated, true)
	r = base
	r.AgentVersion = "2"
	check("agent", r, VoidAgentVersionChanged, ReasonApprovalInvalidated, true)
	r = base
	r.Ruleset = other
	check("policy", r, VoidPolicyEscalated, ReasonRevalidationEscalated, false)
	r = base
	deadline := now
	r.Run.Deadline = &deadline
	check("deadline", r, VoidDeadlineExceeded, ReasonApprovalExpired, false)
	// The deadline outranks every other refusal.
	r.ArgumentsHash, r.Ruleset = "other", other
	check("deadline with changed arguments and policy", r, VoidDeadlineExceeded, ReasonApprovalExpired, false)
	// A changed policy that still allows proceeds, with the re-evaluation.
	same, _ := NewLoadedRuleset(testRuleset(t).Profile(), []byte("edited"), nil, []byte("hardline"))
	r = base
	r.Ruleset = same
	if out := Revalidate(snap, r); !out.Authorized || out.Decision == nil || out.Decision.Decision != DecisionAllow {
		t.Fatalf("policy changed but still allows: %+v", out)
	}
}

// A tool the catalog reclassified since the approval is re-evaluated
// under its current class, though the policy version is the same; a tool
// the catalog dropped, or whose arguments it no longer declares, cannot be.
func TestRevalidateReclassifiedTool(t *testing.T) {
	t.Parallel()
	rs := testRuleset(t)
	a := action(SideEffectNone, map[string]any{"x": 1})
	a.Version = "1"
	snap := ApprovalSnapshot{ArgumentsHash: "h", AgentVersion: "1", PolicyVersion: rs.PolicyVersion(), Action: a}
	catalog := func(se SideEffectClass, args ...string) *Catalog {
		t.Helper()
		c, err := NewCatalog([]ToolSpec{{Name: "t", Version: "1", SideEffect: se, Risk: RiskLow, Idempotency: IdempotencyReadOnly, Arguments: args}})
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	now := ResumeSnapshot{ArgumentsHash: "h", AgentVersion: "1", Ruleset: rs, Now: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	now.Catalog = catalog(SideEffectNone, "x")
	if out := Revalidate(snap, now); !out.Authorized || out.Decision != nil {
		t.Fatalf("unchanged classification: %+v", out)
	}
	// workspace_read is allowed only inside the workspace: x is no path.
	now.Catalog = catalog(SideEffectWorkspaceRead, "x")
	if out := Revalidate(snap, now); out.Authorized || out.Cause != VoidToolReclassified || out.ReasonCode != ReasonRevalidationEscalated {
		t.Fatalf("reclassified to a class that denies: %+v", out)
	}
	now.Catalog = catalog(SideEffectNone, "y")
	if out := Revalidate(snap, now); out.Authorized || out.ReasonCode != ReasonRevalidationEscalated {
		t.Fatalf("argument no longer declared: %+v", out)
	}
	now.Catalog, _ = NewCatalog(nil)
	if out := Revalidate(snap, now); out.Authorized || out.ReasonCode != ReasonRevalidationEscalated {
		t.Fatalf("tool dropped: %+v", out)
	}
}

func denyAll() []ProfileRule {
	var rules []ProfileRule
	for _, s := range SideEffectClasses() {
		rules = append(rules, ProfileRule{SideEffect: s, Decision: DecisionDeny})
	}
	return rules
}

func TestApprovalExpiry(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for risk, want := range map[RiskLevel]time.Duration{RiskLow: 24 * time.Hour, RiskMedium: 24 * time.Hour, RiskHigh: 4 * time.Hour, RiskCritical: time.Hour, "bogus": time.Hour} {
		if got := ApprovalExpiry(risk, at, nil, nil); !got.Equal(at.Add(want)) {
			t.Errorf("%s: %s", risk, got)
		}
	}
	if got := ApprovalExpiry(RiskCritical, at, nil, map[RiskLevel]time.Duration{RiskCritical: 30 * time.Minute}); !got.Equal(at.Add(30 * time.Minute)) {
		t.Error("override ignored")
	}
	dl := at.Add(10 * time.Minute)
	if got := ApprovalExpiry(RiskLow, at, &dl, nil); !got.Equal(dl) {
		t.Error("deadline cap ignored")
	}
}

func normalized(t *testing.T, args map[string]any) ([]byte, string) {
	t.Helper()
	b, h, err := NormalizeArguments(args)
	if err != nil {
		t.Fatalf("normalize: %v", err)
	}
	return b, h
}

func TestNormalizeArguments(t *testing.T) {
	t.Parallel()
	a, ha := normalized(t, map[string]any{"b": json.Number("1.0"), "a": []any{float64(2), int64(3), json.Number("1e2")}, "s": "é\"\n<"})
	want := `{"a":[2,3,100],"b":1,"s":"é\"\n<"}`
	if string(a) != want {
		t.Fatalf("got %s want %s", a, want)
	}
	b, hb := normalized(t, map[string]any{"s": "é\"\n<", "a": []any{json.Number("2"), 3, 100.0}, "b": 1})
	if string(a) != string(b) || ha != hb || len(ha) != 64 {
		t.Fatal("equal values normalize differently")
	}
	big, _ := normalized(t, map[string]any{"id": json.Number("123456789012345678901234567890")})
	if string(big) != `{"id":123456789012345678901234567890}` {
		t.Fatalf("big integer lost precision: %s", big)
	}
	typed, _ := normalized(t, map[string]any{"typed": []string{"x"}, "st": struct{ A int }{1}})
	if string(typed) != `{"st":{"A":1},"typed":["x"]}` {
		t.Fatalf("typed values: %s", typed)
	}
	if e, _ := normalized(t, nil); string(e) != "{}" {
		t.Fatal(string(e))
	}
	// Values JSON cannot carry are refused, never collapsed into a form
	// another value shares (null, or the string "NaN").
	for name, v := range map[string]any{
		"chan": make(chan int), "func": func() {}, "nan number": json.Number("NaN"),
		"nan float": math.NaN(), "infinity": math.Inf(1),
	} {
		b, h, err := NormalizeArguments(map[string]any{"v": v})
		if !errors.Is(err, ErrUnrepresentableArguments) || b != nil || h != "" {
			t.Errorf("%s: %s %q %v, want ErrUnrepresentableArguments", name, b, h, err)
		}
	}
}

// nest wraps leaf in depth single-key maps.
func nest(depth int, leaf any) map[string]any {
	m := map[string]any{"k": leaf}
	for range depth - 1 {
		m = map[string]any{"k": m}
	}
	return m
}

// Two argument sets that differ only 70 levels down must never share a
// hash: normalization refuses them, the view marks the cut, and the gate
// denies them unclassifiable.
func TestDeepArgumentsAreRefusedNotCollapsed(t *testing.T) {
	t.Parallel()
	a, b := nest(70, "rm -rf /"), nest(70, "harmless")
	for _, args := range []map[string]any{a, b} {
		if _, h, err := NormalizeArguments(args); !errors.Is(err, ErrUnrepresentableArguments) || h != "" {
			t.Fatalf("70 deep: hash %q err %v", h, err)
		}
	}
	if _, _, err := NormalizeArguments(nest(MaxArgumentDepth, "x")); err != nil {
		t.Fatalf("%d deep is allowed: %v", MaxArgumentDepth, err)
	}
	view, _ := RedactedView(a)
	leaf := any(view)
	for {
		m, ok := leaf.(map[string]any)
		if !ok {
			break
		}
		leaf = m["k"]
	}
	if leaf != Unrepresentable {
		t.Fatalf("view leaf = %v, want %q", leaf, Unrepresentable)
	}

	rs := testRuleset(t)
	cat, err := NewCatalog([]ToolSpec{{Name: "workspace.write_text", Version: "1.0.0", Kind: ActionToolCall,
		SideEffect: SideEffectWorkspaceWrite, Risk: RiskMedium, Idempotency: IdempotencyIdempotent,
		RequiredScopes: []string{"workspace.write"}}})
	if err != nil {
		t.Fatal(err)
	}
	for _, args := range []map[string]any{a, b} {
		req := ActionRequest{
			ActionID: "00000000-0000-4000-8000-000000000001", Kind: ActionToolCall, Name: "workspace.write_text",
			Summary: "deep", Arguments: args, OriginTrust: TrustUser,
		}
		out := Gate(req, cat, RunSnapshot{PrincipalScopes: []string{"workspace.write"}}, Principal{}, rs, time.Time{})
		if out.Decision.Decision != DecisionDeny || out.Decision.ReasonCode != ReasonUnclassifiable {
			t.Fatalf("gate on 70-deep arguments: %+v", out.Decision)
		}
	}
}

func TestDenialMessages(t *testing.T) {
	t.Parallel()
	d := Denial("a", ReasonScopeMissing, []string{"run.read", "not a scope <script>"})
	if d.Message != "Not performed. The run lacks a required scope: run.read." {
		t.Fatal(d.Message)
	}
	if Denial("a", "policy.matrix.workspace_write", nil).Remediation != RemediationModifyArguments {
		t.Fatal("conditioned row remediation")
	}
	if Denial("a", "policy.hardline.x", nil).Retryable {
		t.Fatal("hardline is not retryable")
	}
}

// corpusSeeds are argument shapes the fuzzers start from.
func corpusSeeds() []string {
	return []string{
		`{"path":"notes/todo.md","text":"hi"}`,
		`{"url":"http://169.254.169.254/latest","n":1.50,"big":123456789012345678901234567890}`,
		`{"body":"key AKIAIOSFODNN7EXAMPLE","nested":{"token":"x","list":[1,"eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N"]}}`,
		`{"a":-0,"b":1e-7,"c":1e21,"d":"\u2028\ud800","e":[true,false,null]}`,
	}
}

func decodeArgs(b []byte) (map[string]any, bool) {
	var m map[string]any
	if err := DecodeStrict(b, &m); err != nil {
		return nil, false
	}
	return m, true
}

func FuzzNormalize(f *testing.F) {
	for _, s := range corpusSeeds() {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		args, ok := decodeArgs(b)
		if !ok {
			return
		}
		first, h1, err := NormalizeArguments(args)
		if err != nil {
			return // refused: nothing to be stable
		}
		again, ok := decodeArgs(first)
		if !ok {
			t.Fatalf("normalized output is not JSON: %s", first)
		}
		second, h2, err := NormalizeArguments(again)
		if err != nil {
			t.Fatalf("normalized output refused: %v", err)
		}
		if string(first) != string(second) || h1 != h2 {
			t.Fatalf("not stable:\n%s\n%s", first, second)
		}
	})
}

func FuzzRedact(f *testing.F) {
	for _, s := range corpusSeeds() {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		args, ok := decodeArgs(b)
		if !ok {
			return
		}
		view, digests := RedactedView(args)
		var walk func(v any)
		walk = func(v any) {
			switch x := v.(type) {
			case string:
				if ContainsCredential(x) {
					t.Fatalf("view leaks %q", x)
				}
			case json.Number:
				if ContainsCredential(string(x)) {
					t.Fatalf("view leaks %q", x)
				}
			case map[string]any:
				for k, e := range x {
					if ContainsCredential(k) {
						t.Fatalf("view leaks key %q", k)
					}
					walk(e)
				}
			case []any:
				for _, e := range x {
					walk(e)
				}
			}
		}
		walk(view)
		for k := range digests {
			if s, _ := view[k].(string); IsRedactedMarker(s) {
				t.Fatalf("redacted value %q digested", k)
			}
		}
	})
}

// arguments_must_authorize belongs to tool rules, and not beside
// human_confirms_arguments, which suppresses the half it tightens.
func TestArgumentsMustAuthorizeShape(t *testing.T) {
	t.Parallel()
	base := func() Profile {
		p := Profile{Name: "p"}
		for _, s := range SideEffectClasses() {
			p.Rules = append(p.Rules, ProfileRule{SideEffect: s, Decision: DecisionAllow})
		}
		return p
	}
	row := base()
	row.Rules[0].ArgumentsMustAuthorize = true
	both := base()
	both.ToolRules = []ProfileRule{{Tool: "t", Decision: DecisionAllow, HumanConfirmsArguments: true, ArgumentsMustAuthorize: true}}
	for name, p := range map[string]Profile{"on a matrix row": row, "with human_confirms_arguments": both} {
		var re *RuleError
		if _, err := NewLoadedRuleset(p, nil, nil, nil); !errors.As(err, &re) || re.Code != CodeToolRuleShape {
			t.Errorf("%s: err = %v, want %s", name, err, CodeToolRuleShape)
		}
	}
}

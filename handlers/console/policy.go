package console

import (
	"net/http"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"gatehouse/engine"
	"gatehouse/rules"
	"gatehouse/service"
	"gatehouse/web/templates"
)

// PolicyShow is what this process loaded: the default profile's version
// and matrix, the hardline rule ids and every tool's effective decision.
// It needs run.read, as GET /v1/tools does.
func (cn *Console) PolicyShow(c echo.Context) error {
	page, err := cn.page(c, "policy", "Policy")
	if err != nil {
		return err
	}
	m := policyView(cn.policy, cn.now())
	m.Page = page
	st := cn.svc.AdvisoryState(cn.policy.DefaultProfile())
	m.Advisory = templates.AdvisoryView{Mode: st.Mode, AdvisorVersion: st.AdvisorVersion, Unconfigured: st.Unconfigured}
	if cn.mcpTools != nil {
		m.MCPTools = cn.mcpTools()
	}
	return cn.render(c, http.StatusOK, templates.Policy(m))
}

// policyView describes the default profile. A tool's effective decision is
// the gate's answer for a representative clean proposal from the user, by
// a principal holding the tool's scopes: what an agent gets when nothing
// about the arguments is suspicious.
func policyView(set *rules.Set, now time.Time) templates.PolicyPage {
	rs := set.DefaultRuleset()
	prof := rs.Profile()
	m := templates.PolicyPage{
		PolicyVersion: rs.PolicyVersion(),
		Profile:       set.DefaultProfile(),
		Profiles:      set.Profiles(),
	}
	for _, r := range append(prof.ToolRules, prof.Rules...) {
		subject := r.Tool
		if subject == "" {
			subject = string(r.SideEffect)
			if r.Risk != "" {
				subject += " · " + string(r.Risk)
			}
		}
		m.Matrix = append(m.Matrix, templates.MatrixRow{
			ID:        r.ID,
			Subject:   subject,
			Condition: r.Condition,
			Decision:  string(r.Decision),
			Otherwise: string(r.Otherwise),
		})
	}
	for _, h := range rs.Hardline() {
		m.HardlineRules = append(m.HardlineRules, templates.HardlineRow{ID: h.ID, Description: hardlineDescription(h)})
	}
	cat := set.Catalog()
	for _, t := range cat.Tools() {
		out := service.DryRun(cat, rs, sampleRequest(t), t.RequiredScopes, now)
		scopes := strings.Join(t.RequiredScopes, ", ")
		if scopes == "" {
			scopes = "—"
		}
		m.Tools = append(m.Tools, templates.ToolRow{
			Name:       t.Name,
			SideEffect: string(t.SideEffect),
			Risk:       string(t.Risk),
			Scopes:     scopes,
			Decision:   string(out.Decision.Decision),
			Reason:     out.Decision.ReasonCode,
		})
	}
	return m
}

// sampleValues are benign values for the argument names the catalog
// declares; an undeclared name gets "example".
var sampleValues = map[string]any{
	"path": "notes/plan.md", "text": "Draft notes", "body": "Hello", "url": "https://example.com/",
	"command": "ls", "query": "weather", "to": "someone@example.com", "subject": "Hello",
	"manager": "pip", "package": "requests", "when": "2030-01-01T09:00:00Z", "action": "click",
	"selector": "#submit", "name": "report.pdf", "amount_cents": 1000, "currency": "USD",
	"title": "Hello", "image": "alpine", "diff": "+ one line", "destination": "archive",
}

func sampleRequest(t engine.ToolSpec) engine.ActionRequest {
	args := make(map[string]any, len(t.Arguments))
	for _, a := range t.Arguments {
		v, ok := sampleValues[a]
		if !ok {
			v = "example"
		}
		args[a] = v
	}
	req := engine.ActionRequest{
		ActionID:    "00000000-0000-4000-8000-000000000003",
		Kind:        t.Kind,
		Name:        t.Name,
		Summary:     "policy page sample",
		Arguments:   args,
		OriginTrust: engine.TrustUser,
	}
	if t.Target == "" && t.MCPServerID == "" {
		req.Target = &engine.ExecutionTarget{Kind: engine.TargetSandbox, Isolated: true}
	}
	return req
}

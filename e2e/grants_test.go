package e2e

import (
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/google/uuid"

	"gatehouse/api"
	"gatehouse/engine"
)

// startGrantServer starts a server whose tenant acme may be offered task
// grants on https://shop.example/cart.
func startGrantServer(t *testing.T) *server {
	t.Helper()
	sites := filepath.Join(t.TempDir(), "sites.yaml")
	yml := "tenants:\n  acme:\n    - {origin: \"https://shop.example\", path_prefix: /cart}\n"
	if err := os.WriteFile(sites, []byte(yml), 0o600); err != nil {
		t.Fatal(err)
	}
	return startServer(t, serverOptions{Env: []string{"CONSOLE_BROWSER_GRANT_SITES=" + sites}})
}

func browseAction(url string) engine.ActionRequest {
	return engine.ActionRequest{
		ActionID: uuid.NewString(), Kind: engine.ActionToolCall, Name: "browser.act", Summary: "click next on " + url,
		StepNumber: 1, OriginTrust: engine.TrustUser,
		Arguments: map[string]any{"action": "click", "url": url, "selector": "#next"},
	}
}

// The browser test of issue 12: approve for task on the card; the agent's
// next in-scope actions proceed without a card and the grant's counter
// moves.
func TestBrowserApproveForTask(t *testing.T) {
	srv := startGrantServer(t)
	a := startRun(t, srv.Client("alice"), nil)
	first := browseAction("https://shop.example/cart/1")
	res := a.propose(t, first)
	if res.Decision != engine.DecisionRequireApproval {
		t.Fatalf("first browser.act: %+v, want require_approval", res)
	}

	ctx := newBrowser(t)
	login(t, ctx, srv, "gina")
	card := "#card-" + res.ApprovalID
	label := get(t, ctx, "read the approve for task button", chromedp.Text(css(card+` [data-testid="approve-for-task"]`)))
	if label = strings.Join(strings.Fields(label), " "); !strings.Contains(label, "200 actions on https://shop.example/cart within 30 minutes") {
		t.Fatalf("approve for task button: %q", label)
	}
	screenshot(t, ctx, "card-task-grant.png", "")
	do(t, ctx, "approve for task",
		chromedp.Click(css(card+` [data-testid="approve-for-task"]`)),
		chromedp.WaitVisible(css(card+` [data-testid="outcome"]`)),
	)
	if got := get(t, ctx, "read the outcome", chromedp.Text(css(card+` [data-testid="outcome"]`))); got != "Approved by you" {
		t.Fatalf("outcome: %q", got)
	}

	// The agent resumes the approved action, then browses on: no card.
	resumed := claim(t, a.c, a.run.ID)
	rr, err := resumed.c.Resume(testContext(t), a.run.ID, res.InvocationID, resumed.lease,
		api.ResumeInput{Arguments: first.Arguments, AgentVersion: a.run.AgentVersion})
	if err != nil || !rr.Authorized {
		t.Fatalf("resume: %+v, %v", rr, err)
	}
	for i, url := range []string{"https://shop.example/cart/2", "https://shop.example/cart/checkout"} {
		next := browseAction(url)
		next.StepNumber = int32(i + 2)
		r := resumed.propose(t, next)
		if r.Decision != engine.DecisionAllow || r.TaskGrantID == "" {
			t.Fatalf("%s: %+v, want allow by the task grant", url, r)
		}
		if _, err := resumed.c.Result(testContext(t), a.run.ID, r.InvocationID, resumed.lease, api.InvocationSucceeded); err != nil {
			t.Fatal(err)
		}
	}

	// The run page shows the grant's counter, and the queue no card.
	do(t, ctx, "open the run page",
		chromedp.Navigate(srv.BaseURL+"/runs/"+a.run.ID),
		chromedp.WaitVisible(css(`[data-testid="grant"]`)),
	)
	if got := get(t, ctx, "read uses left", chromedp.Text(css(`[data-testid="grant-uses-left"]`))); got != "198 of 200" {
		t.Fatalf("uses left: %q", got)
	}
	screenshot(t, ctx, "run-task-grant.png", "")
	st, page := rawCall(t, "GET", srv.BaseURL+"/v1/approvals?status=pending", srv.Token("gina"), "")
	if items, _ := page["items"].([]any); st != http.StatusOK || len(items) != 0 {
		t.Fatalf("pending approvals: %d %v", st, page)
	}
}

// The grant routes and approve_for_task over the API: refusals, the
// cross-tenant 404 on every new route, list and revoke.
func TestAPITaskGrants(t *testing.T) {
	srv := startGrantServer(t)
	a := startRun(t, srv.Client("alice"), nil)
	res := a.propose(t, browseAction("https://shop.example/cart/1"))
	resolve := srv.BaseURL + "/v1/approvals/" + res.ApprovalID + "/resolve"
	offer := `{"origin": "https://shop.example", "path_prefix": "/cart"}`

	st, body := rawCall(t, "GET", srv.BaseURL+"/v1/approvals/"+res.ApprovalID, srv.Token("gina"), "")
	if o, _ := body["task_grant_offer"].(map[string]any); st != http.StatusOK || o["origin"] != "https://shop.example" || o["action_budget"] != float64(200) {
		t.Fatalf("offer: %d %v", st, body)
	}
	for _, tc := range []struct {
		who, body string
		status    int
	}{
		{"bob", `{"resolution": "approve_for_task", "task_grant": ` + offer + `}`, http.StatusForbidden},
		{"gina", `{"resolution": "approve_for_task", "task_grant": {"origin": "https://shop.example", "path_prefix": "/"}}`, http.StatusBadRequest},
		{"gina", `{"resolution": "approve_for_task"}`, http.StatusBadRequest},
		{"gina", `{"resolution": "approve_once", "task_grant": ` + offer + `}`, http.StatusBadRequest},
		{"gus", `{"resolution": "approve_for_task", "task_grant": ` + offer + `}`, http.StatusNotFound},
	} {
		if st, body := rawCall(t, "POST", resolve, srv.Token(tc.who), tc.body); st != tc.status {
			t.Errorf("%s %s: %d %v, want %d", tc.who, tc.body, st, body, tc.status)
		}
	}
	st, body = rawCall(t, "POST", resolve, srv.Token("gina"), `{"resolution": "approve_for_task", "task_grant": `+offer+`}`)
	grantID, _ := body["task_grant_id"].(string)
	if st != http.StatusOK || body["status"] != "approved" || grantID == "" {
		t.Fatalf("approve for task: %d %v", st, body)
	}

	list := fmt.Sprintf("%s/v1/sessions/%s/browser-grants", srv.BaseURL, a.run.SessionID)
	revoke := srv.BaseURL + "/v1/browser-grants/" + grantID + "/revoke"
	if st, _ := rawCall(t, "GET", list, srv.Token("gus"), ""); st != http.StatusNotFound {
		t.Errorf("list from another tenant: %d, want 404", st)
	}
	if st, _ := rawCall(t, "POST", revoke, srv.Token("gus"), ""); st != http.StatusNotFound {
		t.Errorf("revoke from another tenant: %d, want 404", st)
	}
	if st, _ := rawCall(t, "GET", list, srv.Token("bob"), ""); st != http.StatusForbidden {
		t.Errorf("list without browser.grant.read: %d, want 403", st)
	}
	st, body = rawCall(t, "GET", list, srv.Token("gina"), "")
	items, _ := body["items"].([]any)
	if st != http.StatusOK || len(items) != 1 {
		t.Fatalf("list: %d %v", st, body)
	}
	if g := items[0].(map[string]any); g["uses_left"] != float64(200) || g["status"] != "active" || g["seconds_left"] != float64(1800) && g["seconds_left"] != float64(1799) {
		t.Errorf("grant: %v", g)
	}
	if st, body := rawCall(t, "POST", revoke, srv.Token("gina"), ""); st != http.StatusOK || body["status"] != "revoked" {
		t.Fatalf("revoke: %d %v", st, body)
	}
}

// Owner consent: the agent's own token cannot record one; the owner signed
// in to the console records consent to one exact action on the run page,
// and the agent's proposal of exactly it is resolved without a card.
func TestBrowserOwnerConsent(t *testing.T) {
	srv := startServer(t, serverOptions{})
	a := startRun(t, srv.Client("alice"), nil)
	args := `{"record": "42", "field": "status", "value": "won"}`
	consents := fmt.Sprintf("%s/v1/sessions/%s/consents", srv.BaseURL, a.run.SessionID)
	body := `{"tool_name": "demo.external_write", "arguments": ` + args + `}`
	if st, _ := rawCall(t, "POST", consents, srv.Token("agent"), body); st != http.StatusForbidden {
		t.Fatalf("agent records consent: %d, want 403", st)
	}
	if st, _ := rawCall(t, "POST", consents, srv.Token("alice"), body); st != http.StatusForbidden {
		t.Fatalf("the session's own token records consent: %d, want 403", st)
	}
	if st, _ := rawCall(t, "POST", consents, srv.Token("carol"), body); st != http.StatusNotFound {
		t.Fatalf("another tenant records consent: %d, want 404", st)
	}
	if st, _ := rawCall(t, "GET", consents, srv.Token("carol"), ""); st != http.StatusNotFound {
		t.Fatalf("another tenant lists consents: %d, want 404", st)
	}

	ctx := newBrowser(t)
	login(t, ctx, srv, "alice")
	do(t, ctx, "record consent on the run page",
		chromedp.Navigate(srv.BaseURL+"/runs/"+a.run.ID),
		chromedp.WaitVisible(css(`[data-testid="consent-form"]`)),
		chromedp.SendKeys(css(`[data-testid="consent-tool"]`), "demo.external_write"),
		chromedp.SendKeys(css(`[data-testid="consent-arguments"]`), args),
		chromedp.Click(css(`[data-testid="consent-submit"]`)),
		chromedp.WaitVisible(css(`[data-testid="consent"][data-status="live"]`)),
	)

	req := parkingAction()
	req.Arguments = map[string]any{"record": "42", "field": "status", "value": "won"}
	res := a.propose(t, req)
	if res.Decision != engine.DecisionRequireApproval || res.RunStatus != api.RunQueued {
		t.Fatalf("consented proposal: %+v, want its approval resolved and the run queued", res)
	}
	st, ap := rawCall(t, "GET", srv.BaseURL+"/v1/approvals/"+res.ApprovalID, srv.Token("alice"), "")
	if st != http.StatusOK || ap["status"] != "approved" || ap["resolved_by"] != "alice" || ap["resolution_reason"] != "owner_action" {
		t.Fatalf("approval: %d %v", st, ap)
	}
	resumed := claim(t, a.c, a.run.ID)
	rr, err := resumed.c.Resume(testContext(t), a.run.ID, res.InvocationID, resumed.lease,
		api.ResumeInput{Arguments: req.Arguments, AgentVersion: a.run.AgentVersion})
	if err != nil || !rr.Authorized {
		t.Fatalf("resume: %+v, %v", rr, err)
	}
}

package e2e

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"gatehouse/api"
	"gatehouse/client"
	"gatehouse/engine"
)

// rawCall sends a request with an exact body and returns the status and
// the decoded JSON body (nil when there is none).
func rawCall(t testing.TB, method, url, token, body string, header ...string) (int, map[string]any) {
	t.Helper()
	var r io.Reader
	if body != "" {
		r = strings.NewReader(body)
	}
	req, err := http.NewRequestWithContext(testContext(t), method, url, r)
	if err != nil {
		t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	var out map[string]any
	if len(raw) > 0 {
		if err := json.Unmarshal(raw, &out); err != nil {
			t.Fatalf("%s %s: %d, body is not a JSON object: %q", method, url, resp.StatusCode, raw)
		}
	}
	return resp.StatusCode, out
}

// errorCode is the code of an error body.
func errorCode(body map[string]any) string {
	e, _ := body["error"].(map[string]any)
	code, _ := e["code"].(string)
	return code
}

func errorMessage(body map[string]any) string {
	e, _ := body["error"].(map[string]any)
	msg, _ := e["message"].(string)
	return msg
}

// agent is a claimed run of one principal.
type agent struct {
	c     *client.Client
	run   api.Run
	lease api.Lease
}

// startRun submits a run and claims it.
func startRun(t testing.TB, c *client.Client, deadline *time.Time) *agent {
	t.Helper()
	ctx := testContext(t)
	run, err := c.SubmitRun(ctx, api.SubmitRunInput{SessionID: uuid.NewString(), AgentID: "agent-1", AgentVersion: "1.0.0", Deadline: deadline})
	if err != nil {
		t.Fatalf("submit: %v", err)
	}
	return claim(t, c, run.ID)
}

// claim takes the lease on a specific run.
func claim(t testing.TB, c *client.Client, runID string) *agent {
	t.Helper()
	worker := "w-" + randomHex(t, 4)
	claimed, ok, err := c.Claim(testContext(t), api.ClaimInput{WorkerID: worker, LeaseSeconds: 60, RunID: runID})
	if err != nil || !ok {
		t.Fatalf("claim %s: ok=%v err=%v", runID, ok, err)
	}
	return &agent{c: c, run: claimed, lease: api.Lease{WorkerID: worker, FencingToken: claimed.FencingToken}}
}

func (a *agent) propose(t testing.TB, req engine.ActionRequest) api.ProposeResult {
	t.Helper()
	res, err := a.c.Propose(testContext(t), a.run.ID, a.lease, req)
	if err != nil {
		t.Fatalf("propose %s: %v", req.Name, err)
	}
	return res
}

// parkingAction (a fresh action id each call) needs approval under the
// default profile (external_write).
func parkingAction() engine.ActionRequest {
	return engine.ActionRequest{
		ActionID: uuid.NewString(), Kind: engine.ActionToolCall, Name: "demo.external_write",
		Summary: "set the status of record 42", StepNumber: 1,
		Arguments:   map[string]any{"record": "42", "field": "status", "value": "shipped"},
		OriginTrust: engine.TrustUser,
	}
}

// allowedAction is allowed under the default profile (a workspace read).
func allowedAction() engine.ActionRequest {
	return engine.ActionRequest{
		ActionID: uuid.NewString(), Kind: engine.ActionToolCall, Name: "workspace.read_text",
		Summary: "read the notes", StepNumber: 1,
		Arguments:   map[string]any{"path": "notes/todo.txt"},
		OriginTrust: engine.TrustUser,
		Target:      &engine.ExecutionTarget{Kind: engine.TargetSandbox, Isolated: true},
	}
}

// park submits and claims a run and proposes an action that parks it.
func park(t testing.TB, c *client.Client) (*agent, api.ProposeResult) {
	t.Helper()
	a := startRun(t, c, nil)
	res := a.propose(t, parkingAction())
	if res.Decision != engine.DecisionRequireApproval || res.ApprovalID == "" {
		t.Fatalf("parking action: %+v", res)
	}
	return a, res
}

var csrfField = regexp.MustCompile(`name="_csrf" value="([^"]+)"`)

// consoleLogin signs a principal in through the console's sign-in form over
// plain HTTP and returns the session cookie the browser would hold.
func consoleLogin(t testing.TB, srv *server, id string) *http.Cookie {
	t.Helper()
	jar, err := cookiejar.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	hc := &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := hc.Get(srv.BaseURL + "/login")
	if err != nil {
		t.Fatal(err)
	}
	page, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	m := csrfField.FindSubmatch(page)
	if m == nil {
		t.Fatalf("no form token on the sign-in page (%d)", resp.StatusCode)
	}
	resp, err = hc.PostForm(srv.BaseURL+"/login", url.Values{"_csrf": {string(m[1])}, "id": {id}, "password": {srv.Password(id)}})
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("console sign-in as %s: %d", id, resp.StatusCode)
	}
	u, _ := url.Parse(srv.BaseURL)
	for _, c := range jar.Cookies(u) {
		if c.Name == "gh_session" {
			return c
		}
	}
	t.Fatal("no gh_session cookie after signing in")
	return nil
}

package e2e

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"gatehouse/engine"
)

// requestIDShape is what withRequestID hands out: 12 random bytes in hex.
var requestIDShape = regexp.MustCompile(`^[0-9a-f]{24}$`)

// TestLogsCarryNoSecrets drives traffic full of distinctive secrets through
// the API and the console, then reads the server's log as an operator would:
// every line JSON, every request line with a request id, and none of the
// secrets anywhere.
func TestLogsCarryNoSecrets(t *testing.T) {
	srv := startServer(t, serverOptions{})
	ctx := testContext(t)
	tag := randomHex(t, 8)
	// secret names each value the log must not hold, for the failure message.
	secret := map[string]string{}
	for _, p := range testPrincipals {
		secret["bearer token of "+p.id] = srv.Token(p.id)
		secret["password of "+p.id] = srv.Password(p.id)
	}

	// An approved action whose arguments carry distinctive values, resolved
	// over the API with a distinctive reason.
	argValue, argRecord := "argvalue-"+tag, "argrecord-"+tag
	secret["argument value"], secret["argument record"] = argValue, argRecord
	apiReason := "apireason-" + tag
	secret["API resolution reason"] = apiReason
	req := parkingAction()
	req.Arguments = map[string]any{"record": argRecord, "field": "status", "value": argValue}
	approved := startRun(t, srv.Client("alice"), nil).propose(t, req)
	if approved.Decision != engine.DecisionRequireApproval {
		t.Fatalf("want require_approval, got %+v", approved)
	}
	if ap, err := srv.Client("bob").Resolve(ctx, approved.ApprovalID, engine.ResolutionApproveOnce, apiReason); err != nil || ap.Status != engine.ApprovalApproved {
		t.Fatalf("approve over the API: %+v, %v", ap, err)
	}

	// Credential-shaped arguments: whatever the gate decides, the values
	// stay out of the log.
	awsKey := "AKIA" + strings.ToUpper(randomHex(t, 8))
	ghToken := "ghp_" + randomHex(t, 18)
	secret["AWS key id"], secret["GitHub token"] = awsKey, ghToken
	req = parkingAction()
	req.Arguments = map[string]any{"record": "42", "field": "note", "value": "aws " + awsKey + " github " + ghToken}
	credential := startRun(t, srv.Client("alice"), nil).propose(t, req)
	t.Logf("credential-shaped arguments: %s", credential.Decision)

	// Secrets where a careless logger would catch them: a URL path, a query
	// value, a malformed body and an unknown bearer token.
	badToken := "badtoken-" + tag
	secret["unknown bearer token"] = badToken
	pathSecret, querySecret, bodySecret := "pathsecret-"+tag, "querysecret-"+tag, "bodysecret-"+tag
	secret["URL path value"], secret["query value"], secret["malformed body"] = pathSecret, querySecret, bodySecret
	for _, c := range []struct {
		method, path, token, body string
		want                      int
	}{
		{"GET", "/v1/runs/" + pathSecret, srv.Token("alice"), "", http.StatusNotFound},
		{"GET", "/v1/approvals?run_id=" + querySecret + "&cursor=" + querySecret, srv.Token("bob"), "", http.StatusBadRequest},
		{"POST", "/v1/runs", srv.Token("alice"), `{"session_id": "` + bodySecret, http.StatusBadRequest},
		{"GET", "/v1/policy", badToken, "", http.StatusUnauthorized},
	} {
		if st, _ := rawCall(t, c.method, srv.BaseURL+c.path, c.token, c.body); st != c.want {
			t.Errorf("%s %s: %d, want %d", c.method, c.path, st, c.want)
		}
	}

	// The console: a wrong password, the right one, and a denial through the
	// resolve form with a distinctive reason.
	wrongPassword := "wrongpw-" + tag
	secret["wrong password"] = wrongPassword
	if st := consoleSignIn(t, srv, "bob", wrongPassword); st != http.StatusUnauthorized {
		t.Errorf("sign-in with a wrong password: %d, want 401", st)
	}
	session := consoleLogin(t, srv, "bob")
	secret["session cookie"] = session.Value
	_, denied := park(t, srv.Client("alice"))
	formToken := consoleFormToken(t, srv, session)
	secret["form token"] = formToken
	consoleReason := "consolereason-" + tag
	secret["console resolution reason"] = consoleReason
	if st := consolePost(t, srv, session, "/approvals/"+denied.ApprovalID+"/resolve", url.Values{
		"_csrf": {formToken}, "resolution": {"deny"}, "reason": {consoleReason}, "next": {"/"},
	}); st != http.StatusSeeOther {
		t.Fatalf("deny through the console form: %d, want 303", st)
	}
	if ap, err := srv.Client("bob").GetApproval(ctx, denied.ApprovalID); err != nil || ap.Status != engine.ApprovalDenied {
		t.Fatalf("approval after the console denial: %+v, %v", ap, err)
	}

	// The request line is written after the response, so wait for the last
	// request's line before reading: then every earlier line is there too.
	lastID := requestIDOf(t, srv.BaseURL+"/v1/runs/"+pathSecret, srv.Token("alice"))
	raw := waitForLog(t, srv.LogPath, `"request_id":"`+lastID+`"`)

	for what, v := range secret {
		if bytes.Contains(raw, []byte(v)) {
			t.Errorf("the log carries the %s", what)
		}
	}
	checkLogLines(t, raw)
}

// checkLogLines asserts every line is a JSON object and every line about a
// request carries a request id of the server's shape.
func checkLogLines(t *testing.T, raw []byte) {
	t.Helper()
	requests := 0
	sc := bufio.NewScanner(bytes.NewReader(raw))
	sc.Buffer(make([]byte, 0, 64*1024), 1<<20)
	for n := 1; sc.Scan(); n++ {
		line := sc.Bytes()
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		var rec map[string]any
		if err := json.Unmarshal(line, &rec); err != nil {
			t.Errorf("line %d is not a JSON object (%v): %s", n, err, line)
			continue
		}
		_, aboutRequest := rec["route"]
		if rec["msg"] == "request" || rec["msg"] == "console sign-in" || aboutRequest {
			requests++
			if id, _ := rec["request_id"].(string); !requestIDShape.MatchString(id) {
				t.Errorf("line %d is about a request but has request_id %q: %s", n, rec["request_id"], line)
			}
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatalf("reading the log: %v", err)
	}
	// The traffic above is over twenty requests; fewer request lines would
	// mean some requests went unlogged.
	if requests < 20 {
		t.Errorf("only %d request lines in the log", requests)
	}
}

// requestIDOf GETs url with a bearer token and returns its X-Request-Id.
func requestIDOf(t *testing.T, url, token string) string {
	t.Helper()
	req, err := http.NewRequestWithContext(testContext(t), http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	id := resp.Header.Get("X-Request-Id")
	if !requestIDShape.MatchString(id) {
		t.Fatalf("X-Request-Id %q", id)
	}
	return id
}

// waitForLog reads the log until it holds want.
func waitForLog(t *testing.T, path, want string) []byte {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		raw, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if bytes.Contains(raw, []byte(want)) {
			return raw
		}
		if time.Now().After(deadline) {
			t.Fatalf("the log never showed %s:\n%s", want, tail(path))
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// noRedirects is an HTTP client that reports redirects instead of
// following them, with a cookie jar for the sign-in form's token.
func noRedirects(t *testing.T) *http.Client {
	t.Helper()
	jar, err := cookiejar.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	return &http.Client{Jar: jar, Timeout: 30 * time.Second,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
}

// consoleSignIn posts the sign-in form with a given password and returns
// the status.
func consoleSignIn(t *testing.T, srv *server, id, password string) int {
	t.Helper()
	hc := noRedirects(t)
	page := fetch(t, hc, srv.BaseURL+"/login", nil)
	m := csrfField.FindSubmatch(page)
	if m == nil {
		t.Fatal("no form token on the sign-in page")
	}
	resp, err := hc.PostForm(srv.BaseURL+"/login", url.Values{"_csrf": {string(m[1])}, "id": {id}, "password": {password}})
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

// consoleFormToken reads the session's form token off the queue page.
func consoleFormToken(t *testing.T, srv *server, session *http.Cookie) string {
	t.Helper()
	m := csrfField.FindSubmatch(fetch(t, noRedirects(t), srv.BaseURL+"/", session))
	if m == nil {
		t.Fatal("no form token on the queue page")
	}
	return string(m[1])
}

// fetch GETs a page, with a cookie when one is given, and returns its body.
func fetch(t *testing.T, hc *http.Client, url string, c *http.Cookie) []byte {
	t.Helper()
	req, err := http.NewRequestWithContext(testContext(t), http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	if c != nil {
		req.AddCookie(c)
	}
	resp, err := hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %d, %v", url, resp.StatusCode, err)
	}
	return body
}

// consolePost posts a console form with the session cookie and returns the
// status.
func consolePost(t *testing.T, srv *server, session *http.Cookie, path string, form url.Values) int {
	t.Helper()
	req, err := http.NewRequestWithContext(testContext(t), http.MethodPost, srv.BaseURL+path, strings.NewReader(form.Encode()))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.AddCookie(session)
	resp, err := noRedirects(t).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

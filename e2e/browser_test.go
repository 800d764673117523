package e2e

import (
	"context"
	"flag"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"
	"github.com/google/uuid"

	"gatehouse/api"
	"gatehouse/engine"
)

// updateDocs also writes the queue screenshots into docs/ for the README.
var updateDocs = flag.Bool("update-docs", false, "write docs/queue.png, docs/queue-phone.png, docs/queue-dark.png and docs/queue-list.png")

// chromiumPath is CHROMIUM or Debian's /usr/bin/chromium. The browser tests
// never skip: a missing browser fails them with what to install.
func chromiumPath(t testing.TB) string {
	t.Helper()
	p := os.Getenv("CHROMIUM")
	if p == "" {
		p = "/usr/bin/chromium"
	}
	if _, err := os.Stat(p); err != nil {
		t.Fatalf("headless Chromium not found at %s: install it (apt-get install chromium chromium-driver) or set CHROMIUM; `make e2e` does both", p)
	}
	return p
}

// newBrowser starts a fresh headless Chromium (its own profile directory)
// and returns its first tab; the browser ends with the test.
func newBrowser(t testing.TB) context.Context {
	t.Helper()
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(chromiumPath(t)),
		chromedp.Flag("headless", true),
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.NoFirstRun,
		chromedp.Flag("disable-quic", true),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(1280, 1000),
	}
	alloc, cancelAlloc := chromedp.NewExecAllocator(testContext(t), opts...)
	t.Cleanup(cancelAlloc)
	ctx, cancel := chromedp.NewContext(alloc)
	t.Cleanup(cancel)
	if err := chromedp.Do(ctx); err != nil {
		t.Fatalf("starting Chromium: %v", err)
	}
	return ctx
}

// browserTimeout bounds one step of a browser test.
const browserTimeout = 30 * time.Second

// do runs browser steps with a bound, failing the test with what was being
// done.
func do(t testing.TB, ctx context.Context, what string, steps ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	ctx, cancel := context.WithTimeout(ctx, browserTimeout)
	defer cancel()
	if err := chromedp.Do(ctx, steps...); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

// get runs one browser action that returns a value.
func get[T any](t testing.TB, ctx context.Context, what string, a chromedp.Action[T]) T {
	t.Helper()
	ctx, cancel := context.WithTimeout(ctx, browserTimeout)
	defer cancel()
	v, err := chromedp.Run(ctx, a)
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	return v
}

// css is a CSS selector.
func css(sel string) chromedp.CSS { return chromedp.CSS(sel) }

// login signs a principal in through the form and lands on the queue.
func login(t testing.TB, ctx context.Context, srv *server, id string) {
	t.Helper()
	do(t, ctx, "sign in as "+id,
		chromedp.Navigate(srv.BaseURL+"/login"),
		chromedp.WaitVisible(css(`#login-id`)),
		chromedp.SendKeys(css(`#login-id`), id),
		chromedp.SendKeys(css(`#login-password`), srv.Password(id)),
		chromedp.Click(css(`[data-testid="login-submit"]`)),
		chromedp.WaitVisible(css(`[data-testid="queue"]`)),
	)
}

// screenshot saves a full-page PNG under $ARTIFACTS/screenshots and, with
// -update-docs, as docs/<doc>.
func screenshot(t testing.TB, ctx context.Context, name, doc string) {
	t.Helper()
	png := get(t, ctx, "screenshot "+name, chromedp.FullScreenshot(100))
	dir := filepath.Join(artifacts, "screenshots")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, name), png, 0o644); err != nil {
		t.Fatal(err)
	}
	if *updateDocs && doc != "" {
		if err := os.WriteFile(filepath.Join("..", "docs", doc), png, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// parkTool submits a run and parks it on one action of tool.
func parkTool(t testing.TB, srv *server, req engine.ActionRequest) (*agent, api.ProposeResult) {
	t.Helper()
	a := startRun(t, srv.Client("alice"), nil)
	req.ActionID, req.StepNumber, req.OriginTrust = uuid.NewString(), 1, engine.TrustUser
	if req.Kind == "" {
		req.Kind = engine.ActionToolCall
	}
	res := a.propose(t, req)
	if res.Decision != engine.DecisionRequireApproval {
		t.Fatalf("%s: want require_approval, got %+v", req.Name, res)
	}
	return a, res
}

// The queue's mix, proposed least consequential first so that queue order
// (critical first, then oldest) differs from arrival order.
var queueMix = []engine.ActionRequest{
	{Kind: engine.ActionArtifactExport, Name: "artifact.export", Summary: "Export the churn chart to the shared drive",
		Arguments: map[string]any{"artifact_id": "art_77", "destination": "drive://team/analysis"}},
	{Name: "email.send", Summary: "Email the Q3 summary to dana@example.com",
		Arguments: map[string]any{"to": "dana@example.com", "subject": "Q3 summary", "body": "Hi Dana,\n\nRevenue is up 12%.\n\nBest"}},
	{Name: "blog.publish", Summary: "Publish \"Release notes 0.1\"",
		Arguments: map[string]any{"title": "Release notes 0.1", "body": strings.Repeat("Gatehouse 0.1 ships the approval console. ", 20)}},
	{Name: "payments.charge", Summary: "Charge Acme Corp $49.00 for the Pro plan",
		Arguments: map[string]any{"customer": "cus_8812", "amount_cents": 4900, "currency": "USD"}},
}

// cardRisks lists the risk of each queue card in page order.
func cardRisks(t testing.TB, ctx context.Context) []string {
	t.Helper()
	return get(t, ctx, "read the queue order", chromedp.Evaluate[[]string](
		`Array.from(document.querySelectorAll('#queue-cards > [data-testid="approval-card"]')).map(c => c.dataset.risk)`))
}

// resolveCard clicks approve or deny on a card and returns what the swapped
// card says.
func resolveCard(t testing.TB, ctx context.Context, approvalID, button, reason string) string {
	t.Helper()
	card := "#card-" + approvalID
	steps := []chromedp.Action[chromedp.Void]{}
	switch button {
	case "deny":
		// Deny opens the panel of reasons first.
		steps = append(steps, chromedp.Click(css(card+` [data-testid="deny-open"]`)))
	case "approve":
		// A critical card needs its confirmation box ticked.
		steps = append(steps, chromedp.Evaluate[chromedp.Void](`(() => { const b = document.querySelector(`+strconv.Quote(card+` [data-testid="confirm-critical"]`)+`); if (b && !b.checked) b.click(); })()`))
	}
	if reason != "" {
		steps = append(steps, chromedp.SendKeys(css(card+` input[name="reason"]`), reason))
	}
	steps = append(steps,
		chromedp.Click(css(card+` [data-testid="`+button+`"]`)),
		chromedp.WaitVisible(css(card+` [data-testid="outcome"]`)),
	)
	do(t, ctx, button+" "+approvalID, steps...)
	return get(t, ctx, "read the outcome", chromedp.Text(css(card+` [data-testid="outcome"]`)))
}

func TestBrowserQueueApproveResume(t *testing.T) {
	srv := startServer(t, serverOptions{})
	var critical *agent
	var criticalRes api.ProposeResult
	for _, req := range queueMix {
		a, res := parkTool(t, srv, req)
		if req.Name == "payments.charge" {
			critical, criticalRes = a, res
		}
	}
	ctx := newBrowser(t)
	login(t, ctx, srv, "bob")

	if got, want := strings.Join(cardRisks(t, ctx), ","), "critical,high,high,medium"; got != want {
		t.Fatalf("queue order: got %s, want %s", got, want)
	}
	if title := get(t, ctx, "read the title", chromedp.Title()); title != "(4) Gatehouse" {
		t.Errorf("title: got %q, want (4) Gatehouse", title)
	}
	screenshot(t, ctx, "queue-desktop.png", "queue.png")

	if got := resolveCard(t, ctx, criticalRes.ApprovalID, "approve", ""); got != "Approved by you" {
		t.Errorf("outcome: got %q, want Approved by you", got)
	}

	// The agent resumes through the client: revalidation authorizes it.
	resumed := claim(t, critical.c, critical.run.ID)
	rr, err := resumed.c.Resume(testContext(t), resumed.run.ID, criticalRes.InvocationID, resumed.lease,
		api.ResumeInput{Arguments: queueMix[3].Arguments, AgentVersion: critical.run.AgentVersion})
	if err != nil || !rr.Authorized {
		t.Fatalf("resume after approval: %+v, %v", rr, err)
	}
}

func TestBrowserConflictingResolutions(t *testing.T) {
	srv := startServer(t, serverOptions{})
	_, res := park(t, srv.Client("alice"))
	// Two browsers: two humans on two devices, each with its own cookies.
	alice, bob := newBrowser(t), newBrowser(t)
	login(t, alice, srv, "alice")
	login(t, bob, srv, "bob")
	// Bob works from the detail page, which has no live poll: his card stays
	// pending on screen until he acts, as on a phone that lost its network.
	do(t, bob, "bob opens the approval",
		chromedp.Navigate(srv.BaseURL+"/approvals/"+res.ApprovalID),
		chromedp.WaitVisible(css(`[data-testid="deny"]`)),
	)

	if got := resolveCard(t, alice, res.ApprovalID, "approve", ""); got != "Approved by you" {
		t.Errorf("alice sees %q, want Approved by you", got)
	}
	// Bob still sees the pending card and denies it.
	if got := resolveCard(t, bob, res.ApprovalID, "deny", "looks wrong"); !strings.HasPrefix(got, "Already approved by alice at ") {
		t.Errorf("bob sees %q, want Already approved by alice at …", got)
	}
	ap, err := srv.Client("bob").GetApproval(testContext(t), res.ApprovalID)
	if err != nil || ap.Status != engine.ApprovalApproved || ap.ResolvedBy != "alice" {
		t.Fatalf("stored approval: %+v, %v", ap, err)
	}
}

func TestBrowserLiveQueue(t *testing.T) {
	srv := startServer(t, serverOptions{})
	ctx := newBrowser(t)
	login(t, ctx, srv, "bob")
	if n := len(cardRisks(t, ctx)); n != 0 {
		t.Fatalf("queue starts with %d cards", n)
	}
	_, res := park(t, srv.Client("alice"))
	do(t, ctx, "the new approval appears without a reload",
		chromedp.WaitVisible(css("#card-"+res.ApprovalID)),
	)
	titled := get(t, ctx, "the title counts it",
		chromedp.Poll[bool](`document.title === "(1) Gatehouse"`, chromedp.WithPollingTimeout(10*time.Second)))
	if !titled {
		t.Errorf("title: %q", get(t, ctx, "title", chromedp.Title()))
	}
}

func TestBrowserPhoneLayout(t *testing.T) {
	srv := startServer(t, serverOptions{})
	var parked api.ProposeResult
	var run string
	for _, req := range queueMix {
		a, res := parkTool(t, srv, req)
		if req.Name == "blog.publish" { // the longest arguments
			parked, run = res, a.run.ID
		}
	}
	ctx := newBrowser(t)
	login(t, ctx, srv, "bob")
	do(t, ctx, "phone viewport", chromedp.EmulateViewport(360, 780, chromedp.EmulateMobile, chromedp.EmulateScale(2)))

	// Tap targets: every visible link, button, summary and form control.
	const tooSmall = `Array.from(document.querySelectorAll('a, button, summary, select, input:not([type=hidden])'))
		.filter(e => e.offsetParent !== null && !e.classList.contains('skip'))
		.filter(e => e.getBoundingClientRect().height < 44)
		.map(e => e.tagName + ' ' + (e.textContent || e.name || '').trim().slice(0, 40) + ' ' + Math.round(e.getBoundingClientRect().height) + 'px')`
	check := func(page string) {
		t.Helper()
		do(t, ctx, "phone "+page, chromedp.Navigate(srv.BaseURL+page), chromedp.WaitVisible(css(`main`)))
		if width := get(t, ctx, "scroll width", chromedp.Evaluate[int](`document.documentElement.scrollWidth`)); width > 360 {
			t.Errorf("%s: horizontal overflow, scrollWidth %d > 360", page, width)
		}
		if small := get(t, ctx, "tap targets", chromedp.Evaluate[[]string](tooSmall)); len(small) > 0 {
			t.Errorf("%s: tap targets under 44px: %v", page, small)
		}
	}
	for _, page := range []string{"/", "/history", "/overview", "/policy", "/approvals/" + parked.ApprovalID, "/runs/" + run} {
		check(page)
		if page == "/" {
			screenshot(t, ctx, "queue-phone.png", "queue-phone.png")
		}
	}
	// The sign-in form, as a signed-out visitor sees it.
	if _, err := chromedp.Call(ctx, network.ClearBrowserCookies, cdp.Empty{}); err != nil {
		t.Fatalf("clearing cookies: %v", err)
	}
	check("/login")
}

func TestBrowserArgumentsAreInert(t *testing.T) {
	srv := startServer(t, serverOptions{})
	_, res := parkTool(t, srv, engine.ActionRequest{
		Name: "http.post", Summary: `<script>window.__pwned = "summary"</script> post <img src=x onerror="window.__pwned='img'">`,
		Arguments: map[string]any{
			"url":  "javascript:window.__pwned='href'",
			"body": `<script>window.__pwned = "body"</script><a href="javascript:window.__pwned='link'">click</a>`,
		},
	})
	ctx := newBrowser(t)
	login(t, ctx, srv, "bob")
	do(t, ctx, "open the detail page",
		chromedp.Navigate(srv.BaseURL+"/approvals/"+res.ApprovalID),
		chromedp.WaitVisible(css(`[data-testid="arguments"]`)),
	)
	if get(t, ctx, "scripts ran?", chromedp.Evaluate[bool](`window.__pwned !== undefined`)) {
		t.Error("a script in an argument or summary ran")
	}
	jsURLs := get(t, ctx, "javascript: URLs", chromedp.Evaluate[int](
		`document.querySelectorAll('[href*="javascript:" i], [src*="javascript:" i], [action*="javascript:" i]').length`))
	if jsURLs != 0 {
		t.Errorf("%d javascript: URLs in the page", jsURLs)
	}
	scripts := get(t, ctx, "scripts", chromedp.Evaluate[int](
		`Array.from(document.scripts).filter(s => !/\/static\/(htmx\.min|console)\.js$/.test(s.src)).length`))
	if scripts != 0 {
		t.Errorf("%d scripts other than htmx and console.js", scripts)
	}
	text := get(t, ctx, "argument text", chromedp.Text(css(`[data-testid="arguments"]`)))
	if !strings.Contains(text, `<script>window.__pwned = "body"</script>`) {
		t.Errorf("the argument is not shown as text: %q", text)
	}
}

func TestBrowserCrossOriginPostRefused(t *testing.T) {
	srv := startServer(t, serverOptions{})
	_, res := park(t, srv.Client("alice"))
	target := srv.BaseURL + "/approvals/" + res.ApprovalID + "/resolve"
	// Another origin (another port) hosts a form that posts to the console.
	evil := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, `<!doctype html><form id="f" method="post" action="%s"><input name="resolution" value="approve_once"></form><script>document.getElementById("f").submit()</script>`, target)
	}))
	defer evil.Close()

	ctx := newBrowser(t)
	login(t, ctx, srv, "bob")
	do(t, ctx, "visit the other origin", chromedp.Navigate(evil.URL))
	landed := get(t, ctx, "the forged post lands on the console", chromedp.Poll[bool](
		`location.href === `+strconv.Quote(target)+` && document.readyState === "complete"`, chromedp.WithPollingTimeout(15*time.Second)))
	if !landed {
		t.Fatal("the cross-origin form post never reached the console")
	}
	status := get(t, ctx, "status", chromedp.Evaluate[int](`performance.getEntriesByType("navigation")[0].responseStatus`))
	if status != http.StatusForbidden {
		t.Errorf("cross-origin form post answered %d, want 403", status)
	}
	ap, err := srv.Client("bob").GetApproval(testContext(t), res.ApprovalID)
	if err != nil || ap.Status != engine.ApprovalPending {
		t.Fatalf("approval after the forged post: %+v, %v", ap, err)
	}
}

func TestBrowserLogoutEndsSession(t *testing.T) {
	srv := startServer(t, serverOptions{})
	ctx := newBrowser(t)
	login(t, ctx, srv, "bob")
	cookies, err := chromedp.Call(ctx, network.GetCookies, network.GetCookiesParams{URLs: []string{srv.BaseURL}})
	if err != nil {
		t.Fatal(err)
	}
	var session *http.Cookie
	for _, c := range cookies.Cookies {
		if c.Name == "gh_session" {
			session = &http.Cookie{Name: c.Name, Value: c.Value}
			if !c.HTTPOnly || c.SameSite != network.CookieSameSiteLax {
				t.Errorf("session cookie flags: httpOnly=%v sameSite=%v", c.HTTPOnly, c.SameSite)
			}
		}
	}
	if session == nil {
		t.Fatalf("no gh_session cookie among %d cookies", len(cookies.Cookies))
	}
	if st := getWithCookie(t, srv.BaseURL+"/", session); st != http.StatusOK {
		t.Fatalf("the live cookie gets %d, want 200", st)
	}
	do(t, ctx, "sign out",
		chromedp.Click(css(`[data-testid="logout"]`)),
		chromedp.WaitVisible(css(`[data-testid="login-form"]`)),
	)
	if st := getWithCookie(t, srv.BaseURL+"/", session); st != http.StatusSeeOther {
		t.Fatalf("the old cookie after logout gets %d, want 303 to /login", st)
	}
}

// getWithCookie GETs url with one cookie, not following redirects.
func getWithCookie(t testing.TB, url string, c *http.Cookie) int {
	t.Helper()
	req, err := http.NewRequestWithContext(testContext(t), http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.AddCookie(c)
	hc := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

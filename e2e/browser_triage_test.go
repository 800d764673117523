package e2e

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"gatehouse/api"
	"gatehouse/client"
	"gatehouse/engine"
)

// Triage in the browser (issue 10, part B): the list view, the phone
// layout, deny presets, the critical confirmation, batches, what a viewer
// without resolve sees, the live clock and the history export.

// count is the number of elements matching sel.
func count(t testing.TB, ctx context.Context, sel string) int {
	t.Helper()
	return get(t, ctx, "count "+sel, chromedp.Evaluate[int](`document.querySelectorAll(`+jsString(sel)+`).length`))
}

func jsString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// formToken is the page's form token, as a forged request would lift it.
const formTokenJS = `document.querySelector('input[name="_csrf"]').value`

// postFromPage posts a form body from the page (same origin, the page's
// cookie and form token) and returns the status: what a hand-made request
// from a signed-in browser gets.
func postFromPage(t testing.TB, ctx context.Context, path, body string) int {
	t.Helper()
	return get(t, ctx, "POST "+path, chromedp.Evaluate[int](`fetch(`+jsString(path)+`, {method: "POST", redirect: "manual",
		headers: {"Content-Type": "application/x-www-form-urlencoded", "HX-Request": "true"},
		body: "_csrf=" + encodeURIComponent(`+formTokenJS+`) + "&" + `+jsString(body)+`}).then(r => r.status)`,
		chromedp.EvalAwaitPromise))
}

func TestBrowserTriageListView(t *testing.T) {
	srv := startServer(t, serverOptions{})
	queueAll(t, srv)
	ctx := newBrowser(t)
	login(t, ctx, srv, "bob")
	do(t, ctx, "switch to the list",
		chromedp.Click(css(`[data-testid="view-list"]`)),
		chromedp.WaitVisible(css(`#queue-rows [data-testid="queue-row"]`)))
	if n := count(t, ctx, `#queue-rows [data-testid="queue-row"]`); n != len(queueMix) {
		t.Fatalf("the list shows %d rows, want %d", n, len(queueMix))
	}
	rows := get(t, ctx, "read the rows", chromedp.Evaluate[[]string](`Array.from(document.querySelectorAll('#queue-rows [data-testid="queue-row"]')).map(r =>
		r.dataset.risk + "|" + r.querySelector('[data-testid="row-agent"]').textContent + "|" + (r.querySelector('[data-testid="expires-in"]') ? "clock" : ""))`))
	if !strings.HasPrefix(rows[0], "critical|agent-1|clock") {
		t.Errorf("first row %q: want the critical one, its agent and its time left", rows[0])
	}
	if n := count(t, ctx, `#queue-rows [data-testid="batch-pick"]`); n != len(queueMix)-1 {
		t.Errorf("%d rows offer a batch box, want every one but the critical: %d", n, len(queueMix)-1)
	}
	// Ticking a box brings up the batch bar.
	do(t, ctx, "select a row",
		chromedp.Click(css(`#queue-rows [data-testid="batch-pick"]`)),
		chromedp.WaitVisible(css(`[data-testid="batch-approve"]`)))
	screenshot(t, ctx, "queue-list.png", "queue-list.png")

	// Remembered: the queue opens as a list until the cards are chosen.
	do(t, ctx, "reload the queue", chromedp.Navigate(srv.BaseURL+"/"), chromedp.WaitVisible(css(`[data-testid="queue"]`)))
	if count(t, ctx, `#queue-rows [data-testid="queue-row"]`) != len(queueMix) || count(t, ctx, `[data-testid="approval-card"]`) != 0 {
		t.Error("the list view is not remembered")
	}
	do(t, ctx, "back to cards",
		chromedp.Click(css(`[data-testid="view-cards"]`)),
		chromedp.WaitVisible(css(`#queue-cards [data-testid="approval-card"]`)),
		chromedp.Navigate(srv.BaseURL+"/"), chromedp.WaitVisible(css(`#queue-cards [data-testid="approval-card"]`)))
}

func TestBrowserTriagePhoneFirstScreen(t *testing.T) {
	srv := startServer(t, serverOptions{})
	queueAll(t, srv)
	ctx := newBrowser(t)
	login(t, ctx, srv, "bob")
	do(t, ctx, "phone viewport", chromedp.EmulateViewport(360, 640, chromedp.EmulateMobile, chromedp.EmulateScale(2)),
		chromedp.Navigate(srv.BaseURL+"/"), chromedp.WaitVisible(css(`[data-testid="queue"]`)))
	type layout struct {
		Header, Tap, Bottom, Height, Width float64
	}
	l := get(t, ctx, "measure", chromedp.Evaluate[layout](`(() => {
		const b = document.querySelector('#queue-cards > .card [data-testid="approve"]').getBoundingClientRect();
		return {header: document.querySelector('header.top').getBoundingClientRect().height, tap: 44,
			bottom: b.bottom, height: window.innerHeight, width: document.documentElement.scrollWidth};
	})()`))
	if l.Header > l.Tap+8 {
		t.Errorf("the header is %.0f px high: more than one row of 44 px tap targets", l.Header)
	}
	if l.Bottom > l.Height {
		t.Errorf("the first card's Approve button ends at %.0f px, below the first screen (%.0f px)", l.Bottom, l.Height)
	}
	if l.Width > 360 {
		t.Errorf("horizontal overflow: %.0f px", l.Width)
	}
	screenshot(t, ctx, "queue-phone-first-screen.png", "")
}

func TestBrowserTriageDenyWithPreset(t *testing.T) {
	srv := startServer(t, serverOptions{})
	_, res := parkTool(t, srv, queueMix[1])
	ctx := newBrowser(t)
	login(t, ctx, srv, "bob")
	card := "#card-" + res.ApprovalID
	if visible := get(t, ctx, "reason hidden", chromedp.Evaluate[bool](`document.querySelector(`+jsString(card+` input[name="reason"]`)+`).checkVisibility()`)); visible {
		t.Error("the reason field shows before Deny is chosen")
	}
	do(t, ctx, "deny with a preset",
		chromedp.Click(css(card+` [data-testid="deny-open"]`)),
		chromedp.WaitVisible(css(card+` [data-testid="deny-preset"]`)),
		chromedp.Click(css(card+` label.preset:nth-of-type(2) input`)),
		chromedp.SendKeys(css(card+` input[name="reason"]`), "dana left"),
		chromedp.Click(css(card+` [data-testid="deny"]`)),
		chromedp.WaitVisible(css(card+` [data-testid="outcome"]`)))
	a, err := srv.Client("bob").GetApproval(testContext(t), res.ApprovalID)
	if err != nil {
		t.Fatal(err)
	}
	if a.Status != engine.ApprovalDenied || a.ResolutionReason != "Wrong recipient or target: dana left" {
		t.Errorf("stored %s with reason %q", a.Status, a.ResolutionReason)
	}
}

func TestBrowserTriageCriticalConfirmation(t *testing.T) {
	srv := startServer(t, serverOptions{})
	_, res := parkTool(t, srv, queueMix[3])
	ctx := newBrowser(t)
	login(t, ctx, srv, "bob")
	card := "#card-" + res.ApprovalID
	// Past the page (no box ticked) the server refuses.
	if status := postFromPage(t, ctx, "/approvals/"+res.ApprovalID+"/resolve", "resolution=approve_once"); status != 400 {
		t.Errorf("an unconfirmed critical approval posted by hand: %d, want 400", status)
	}
	// On the page the button does nothing until the box is ticked.
	do(t, ctx, "approve unconfirmed", chromedp.Click(css(card+` [data-testid="approve"]`)))
	if missing := get(t, ctx, "validity", chromedp.Evaluate[bool](`document.querySelector(`+jsString(card+` [data-testid="confirm-critical"]`)+`).validity.valueMissing`)); !missing {
		t.Error("the confirmation box is not required")
	}
	if st := approvalStatus(t, srv, res.ApprovalID); st != engine.ApprovalPending {
		t.Fatalf("an unconfirmed critical approval became %s", st)
	}
	do(t, ctx, "confirm and approve",
		chromedp.Click(css(card+` [data-testid="confirm-critical"]`)),
		chromedp.Click(css(card+` [data-testid="approve"]`)),
		chromedp.WaitVisible(css(card+` [data-testid="outcome"]`)))
	if st := approvalStatus(t, srv, res.ApprovalID); st != engine.ApprovalApproved {
		t.Errorf("confirmed critical approval: %s", st)
	}
}

func TestBrowserTriageBatchReportsWhatChangedMeanwhile(t *testing.T) {
	srv := startServer(t, serverOptions{})
	var ids []string
	for _, req := range queueMix {
		_, res := parkTool(t, srv, req)
		ids = append(ids, res.ApprovalID)
	}
	critical, gone := ids[3], ids[1]
	ctx := newBrowser(t)
	login(t, ctx, srv, "bob")
	do(t, ctx, "select every offered card",
		chromedp.Evaluate[chromedp.Void](`document.querySelectorAll('[data-testid="batch-pick"]').forEach(b => b.click())`))
	if n := count(t, ctx, `[data-testid="batch-pick"]:checked`); n != 3 {
		t.Fatalf("%d cards selected, want the 3 non-critical", n)
	}
	if n := count(t, ctx, "#card-"+critical+` [data-testid="batch-pick"]`); n != 0 {
		t.Error("the critical card is offered to the batch")
	}
	// Alice denies one of them while bob's page still shows it pending.
	if _, err := srv.Client("alice").Resolve(testContext(t), gone, engine.ResolutionDeny, "not now"); err != nil {
		t.Fatal(err)
	}
	do(t, ctx, "approve the selection",
		chromedp.Click(css(`[data-testid="batch-approve"]`)),
		chromedp.WaitVisible(css(`[data-testid="batch-report"]`)))
	report := get(t, ctx, "read the report", chromedp.Evaluate[map[string]string](`Object.fromEntries(Array.from(
		document.querySelectorAll('[data-testid="batch-item"]')).map(i => [i.dataset.approvalId, i.querySelector('[data-testid="batch-outcome"]').textContent]))`))
	if len(report) != 3 {
		t.Fatalf("the report lists %d items, want 3: %v", len(report), report)
	}
	if !strings.HasPrefix(report[gone], "Already denied by alice") {
		t.Errorf("the card denied meanwhile reads %q", report[gone])
	}
	for _, id := range []string{ids[0], ids[2]} {
		if report[id] != "Approved by you" {
			t.Errorf("%s reads %q", id, report[id])
		}
	}
	for id, want := range map[string]engine.ApprovalStatus{ids[0]: engine.ApprovalApproved, gone: engine.ApprovalDenied, ids[2]: engine.ApprovalApproved, critical: engine.ApprovalPending} {
		if st := approvalStatus(t, srv, id); st != want {
			t.Errorf("%s: %s, want %s", id, st, want)
		}
	}
}

func TestBrowserTriageViewerWithoutResolve(t *testing.T) {
	srv := startServer(t, serverOptions{})
	_, res := parkTool(t, srv, queueMix[1])
	ctx := newBrowser(t)
	login(t, ctx, srv, "viewer")
	if count(t, ctx, `[data-testid="approval-card"]`) != 1 {
		t.Fatal("the viewer does not see the card")
	}
	for _, sel := range []string{`[data-testid="approve"]`, `[data-testid="deny"]`, `[data-testid="resolve-form"]`, `[data-testid="batch-form"]`, `[data-testid="run-link"]`} {
		if n := count(t, ctx, sel); n != 0 {
			t.Errorf("a viewer without approval.resolve or run.read sees %d %s", n, sel)
		}
	}
	if status := postFromPage(t, ctx, "/approvals/"+res.ApprovalID+"/resolve", "resolution=approve_once"); status != 403 {
		t.Errorf("a forged resolve by the viewer: %d, want 403", status)
	}
	if st := approvalStatus(t, srv, res.ApprovalID); st != engine.ApprovalPending {
		t.Errorf("the forged post changed the approval to %s", st)
	}
}

func TestBrowserTriageCountdownTicks(t *testing.T) {
	srv := startServer(t, serverOptions{})
	deadline := time.Now().Add(10 * time.Minute)
	a := startRun(t, srv.Client("alice"), &deadline)
	req := parkingAction()
	if res := a.propose(t, req); res.Decision != engine.DecisionRequireApproval {
		t.Fatalf("want require_approval, got %+v", res)
	}
	ctx := newBrowser(t)
	login(t, ctx, srv, "bob")
	const clock = `#queue-cards [data-testid="expires-in"]`
	do(t, ctx, "mark the page", chromedp.Evaluate[chromedp.Void](`window.__samePage = true`))
	first := get(t, ctx, "read the clock", chromedp.Text(css(clock)))
	ticked := get(t, ctx, "wait for a tick", chromedp.Poll[bool](`document.querySelector(`+jsString(clock)+`).textContent !== `+jsString(first), chromedp.WithPollingTimeout(10*time.Second)))
	if !ticked {
		t.Fatalf("the clock still reads %q", first)
	}
	if same := get(t, ctx, "no reload", chromedp.Evaluate[bool](`window.__samePage === true`)); !same {
		t.Error("the page reloaded")
	}
	if amber := get(t, ctx, "colour", chromedp.Evaluate[bool](`document.querySelector(`+jsString(clock)+`).classList.contains("expires-soon")`)); !amber {
		t.Error("ten minutes left is not marked soon")
	}
	if n := count(t, ctx, `[data-testid="expiring-soon"] [data-testid="queue-row"]`); n != 1 {
		t.Fatalf("the expiring-soon group holds %d rows, want 1", n)
	}
	// Decided, it leaves the group.
	id := get(t, ctx, "card id", chromedp.Evaluate[string](`document.querySelector('#queue-cards > .card').dataset.approvalId`))
	resolveCard(t, ctx, id, "approve", "")
	if left := get(t, ctx, "wait for the group to empty", chromedp.Poll[bool](`document.querySelectorAll('[data-testid="expiring-soon"] [data-testid="queue-row"]').length === 0`, chromedp.WithPollingTimeout(5*time.Second))); !left {
		t.Errorf("the decided approval stays in the expiring-soon group")
	}
}

func TestBrowserTriageHistoryExportMatchesTheAPI(t *testing.T) {
	srv := startServer(t, serverOptions{})
	alice := srv.Client("alice")
	for i, req := range queueMix {
		_, res := parkTool(t, srv, req)
		resolution := engine.ResolutionDeny
		if i%2 == 1 {
			resolution = engine.ResolutionApproveOnce
		}
		if _, err := alice.Resolve(testContext(t), res.ApprovalID, resolution, ""); err != nil {
			t.Fatal(err)
		}
	}
	ctx := newBrowser(t)
	login(t, ctx, srv, "bob")
	do(t, ctx, "filter the history",
		chromedp.Navigate(srv.BaseURL+"/history?status=denied"),
		chromedp.WaitVisible(css(`[data-testid="export-json"]`)))
	if n := count(t, ctx, `[data-testid="history-row"]`); n != 2 {
		t.Fatalf("the filter shows %d rows, want 2", n)
	}
	exported := get(t, ctx, "fetch the export", chromedp.Evaluate[string](
		`fetch(document.querySelector('[data-testid="export-json"]').href).then(r => r.text())`, chromedp.EvalAwaitPromise))
	var got []api.Approval
	if err := json.Unmarshal([]byte(exported), &got); err != nil {
		t.Fatalf("export: %v: %.200s", err, exported)
	}
	page, err := srv.Client("bob").ListApprovals(testContext(t), client.ApprovalQuery{Status: "denied"})
	if err != nil {
		t.Fatal(err)
	}
	gotJSON, _ := json.Marshal(got)
	wantJSON, _ := json.Marshal(page.Items)
	if len(got) != 2 || string(gotJSON) != string(wantJSON) {
		t.Errorf("the export differs from GET /v1/approvals?status=denied:\n%s\n%s", gotJSON, wantJSON)
	}
	// The text search (the form's q) narrows the page the same way.
	do(t, ctx, "search",
		chromedp.Navigate(srv.BaseURL+"/history?status=denied&q=RELEASE+notes"),
		chromedp.WaitVisible(css(`[data-testid="history-search"]`)))
	if n := count(t, ctx, `[data-testid="history-row"]`); n != 1 {
		t.Errorf("searching the denied for the release notes shows %d rows, want 1", n)
	}
}

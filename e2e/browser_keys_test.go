package e2e

import (
	"context"
	"math"
	"regexp"
	"strconv"
	"testing"

	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"

	"gatehouse/engine"
)

// queueAll parks every action of queueMix and returns their summaries by
// approval id.
func queueAll(t *testing.T, srv *server) map[string]string {
	t.Helper()
	summaries := map[string]string{}
	for _, req := range queueMix {
		_, res := parkTool(t, srv, req)
		summaries[res.ApprovalID] = req.Summary
	}
	return summaries
}

// cardIDs lists the approval ids of the queue cards in page order.
func cardIDs(t *testing.T, ctx context.Context) []string {
	t.Helper()
	return get(t, ctx, "read the card ids", chromedp.Evaluate[[]string](
		`Array.from(document.querySelectorAll('#queue-cards > [data-testid="approval-card"]')).map(c => c.dataset.approvalId)`))
}

// selectedCard is the approval id of the card the shortcuts act on, or "".
func selectedCard(t *testing.T, ctx context.Context) string {
	t.Helper()
	return get(t, ctx, "read the selected card", chromedp.Evaluate[string](
		`Array.from(document.querySelectorAll('#queue-cards > .card.selected')).map(c => c.dataset.approvalId).join(",")`))
}

// press types one key into the page.
func press(t *testing.T, ctx context.Context, key string) {
	t.Helper()
	do(t, ctx, "press "+strconv.Quote(key), chromedp.KeyEvent(key))
}

// pressAndAnswer presses a key that opens a JavaScript confirmation,
// accepts or dismisses it, and returns the dialog. The dialog blocks the
// page, so it is answered from another goroutine while the key press waits.
func pressAndAnswer(t *testing.T, ctx context.Context, key string, accept bool) page.EventJavascriptDialogOpening {
	t.Helper()
	dctx, cancel := context.WithTimeout(ctx, browserTimeout)
	defer cancel()
	// Events subscribes now, before the key can open the dialog.
	opening := chromedp.Events(dctx, page.JavascriptDialogOpening)
	answered := make(chan page.EventJavascriptDialogOpening, 1)
	failed := make(chan error, 1)
	go func() {
		for ev, err := range opening {
			if err == nil {
				_, err = chromedp.Call(dctx, page.HandleJavaScriptDialog, page.HandleJavaScriptDialogParams{Accept: accept})
			}
			if err != nil {
				failed <- err
				return
			}
			answered <- ev
			return
		}
	}()
	press(t, ctx, key)
	var ev page.EventJavascriptDialogOpening
	select {
	case ev = <-answered:
	case err := <-failed:
		t.Fatalf("answering the confirmation of %q: %v", key, err)
	case <-dctx.Done():
		t.Fatalf("%q opened no confirmation", key)
	}
	if ev.Type != page.DialogTypeConfirm {
		t.Fatalf("%q opened a %s dialog, want confirm", key, ev.Type)
	}
	return ev
}

// countSubmits counts form submissions from now on, so a test can tell
// that a dismissed confirmation sent nothing (button.click() submits
// synchronously, before confirm's caller returns).
const countSubmits = `window.__submits = 0; document.addEventListener("submit", () => window.__submits++, true); true`

func submits(t *testing.T, ctx context.Context) int {
	t.Helper()
	return get(t, ctx, "count submissions", chromedp.Evaluate[int](`window.__submits`))
}

func approvalStatus(t *testing.T, srv *server, id string) engine.ApprovalStatus {
	t.Helper()
	ap, err := srv.Client("bob").GetApproval(testContext(t), id)
	if err != nil {
		t.Fatalf("get approval %s: %v", id, err)
	}
	return ap.Status
}

func TestBrowserKeyboardShortcuts(t *testing.T) {
	srv := startServer(t, serverOptions{})
	summaries := queueAll(t, srv)
	ctx := newBrowser(t)
	login(t, ctx, srv, "bob")
	order := cardIDs(t, ctx)
	if len(order) != len(queueMix) {
		t.Fatalf("queue shows %d cards, want %d", len(order), len(queueMix))
	}
	get(t, ctx, "count submissions", chromedp.Evaluate[bool](countSubmits))

	// j and k walk the queue in its order and stop at either end.
	if got := selectedCard(t, ctx); got != "" {
		t.Fatalf("a card is selected before any key: %s", got)
	}
	last := len(order) - 1
	type step struct {
		key  string
		want int // index into order
	}
	var walk []step
	for i := 0; i <= last; i++ {
		walk = append(walk, step{"j", i})
	}
	walk = append(walk, step{"j", last})
	for i := last - 1; i >= 0; i-- {
		walk = append(walk, step{"k", i})
	}
	walk = append(walk, step{"k", 0})
	for i, step := range walk {
		press(t, ctx, step.key)
		if got := selectedCard(t, ctx); got != order[step.want] {
			t.Fatalf("step %d (%s): selected %q, want card %d %q", i, step.key, got, step.want, order[step.want])
		}
	}

	// Dismissing either confirmation changes nothing.
	target := order[0]
	for _, c := range []struct{ key, verb string }{{"a", "Approve"}, {"d", "Deny"}} {
		key := c.key
		ev := pressAndAnswer(t, ctx, key, false)
		if want := c.verb + ": " + summaries[target] + "?"; ev.Message != want {
			t.Errorf("%s asks %q, want %q", key, ev.Message, want)
		}
		if n := submits(t, ctx); n != 0 {
			t.Fatalf("dismissing the %s confirmation submitted %d forms", key, n)
		}
		if st := get(t, ctx, "card status", chromedp.Evaluate[string](`document.getElementById("card-`+target+`").dataset.status`)); st != "pending" {
			t.Errorf("after dismissing %s the card is %q", key, st)
		}
		if st := approvalStatus(t, srv, target); st != engine.ApprovalPending {
			t.Errorf("after dismissing %s the approval is %s", key, st)
		}
		if got := selectedCard(t, ctx); got != target {
			t.Errorf("after dismissing %s the selection moved to %q", key, got)
		}
	}

	// The first card is critical: approving it needs its confirmation box
	// ticked by hand, besides the dialog.
	do(t, ctx, "tick the critical confirmation", chromedp.Click(css("#card-"+target+` [data-testid="confirm-critical"]`)))

	// Accepting resolves the selected card: a approves, d denies. Then the
	// selection moves on to the next pending card, so a run of a/d works
	// down the queue.
	for _, c := range []struct {
		key, outcome string
		card, next   string
		status       engine.ApprovalStatus
	}{
		{"a", "Approved by you", order[0], order[1], engine.ApprovalApproved},
		{"d", "Denied by you", order[1], order[2], engine.ApprovalDenied},
	} {
		if got := selectedCard(t, ctx); got != c.card {
			t.Fatalf("before %s: selected %q, want %q", c.key, got, c.card)
		}
		before := submits(t, ctx)
		pressAndAnswer(t, ctx, c.key, true)
		if n := submits(t, ctx); n != before+1 {
			t.Errorf("accepting %s submitted %d forms, want 1", c.key, n-before)
		}
		sel := "#card-" + c.card + ` [data-testid="outcome"]`
		do(t, ctx, "wait for the outcome of "+c.key, chromedp.WaitVisible(css(sel)))
		if got := get(t, ctx, "read the outcome", chromedp.Text(css(sel))); got != c.outcome {
			t.Errorf("%s: card says %q, want %q", c.key, got, c.outcome)
		}
		if st := approvalStatus(t, srv, c.card); st != c.status {
			t.Errorf("%s: the API reports %s, want %s", c.key, st, c.status)
		}
		do(t, ctx, "wait for the selection to move on after "+c.key, chromedp.WaitVisible(css("#card-"+c.next+".selected")))
	}
	// The cards nobody resolved are untouched.
	for _, id := range order[2:] {
		if st := approvalStatus(t, srv, id); st != engine.ApprovalPending {
			t.Errorf("card %s: %s, want pending", id, st)
		}
	}
}

// rgbChannels reads the channels of a computed CSS color (rgb() or rgba()).
var rgbChannels = regexp.MustCompile(`^rgba?\((\d+(?:\.\d+)?),\s*(\d+(?:\.\d+)?),\s*(\d+(?:\.\d+)?)`)

// luminance is the WCAG relative luminance of a computed CSS color.
func luminance(t *testing.T, color string) float64 {
	t.Helper()
	m := rgbChannels.FindStringSubmatch(color)
	if m == nil {
		t.Fatalf("not an rgb() color: %q", color)
	}
	var l float64
	for i, weight := range []float64{0.2126, 0.7152, 0.0722} {
		v, err := strconv.ParseFloat(m[i+1], 64)
		if err != nil {
			t.Fatal(err)
		}
		v /= 255
		if v <= 0.03928 {
			v /= 12.92
		} else {
			v = math.Pow((v+0.055)/1.055, 2.4)
		}
		l += weight * v
	}
	return l
}

// contrast is the WCAG contrast ratio of two luminances.
func contrast(a, b float64) float64 {
	return (math.Max(a, b) + 0.05) / (math.Min(a, b) + 0.05)
}

// schemeColors are the computed colors that make a scheme.
type schemeColors struct {
	Page     string `json:"page"`
	Text     string `json:"text"`
	Card     string `json:"card"`
	CardText string `json:"cardText"`
}

const readSchemeColors = `(() => {
	const body = getComputedStyle(document.body);
	const card = document.querySelector('#queue-cards > .card');
	const title = card.querySelector('h2 a');
	return {page: body.backgroundColor, text: body.color,
		card: getComputedStyle(card).backgroundColor, cardText: getComputedStyle(title).color};
})()`

func emulateScheme(t *testing.T, ctx context.Context, scheme string) schemeColors {
	t.Helper()
	if _, err := chromedp.Call(ctx, emulation.SetEmulatedMedia, emulation.SetEmulatedMediaParams{
		Features: []*emulation.MediaFeature{{Name: "prefers-color-scheme", Value: scheme}},
	}); err != nil {
		t.Fatalf("emulating prefers-color-scheme: %s: %v", scheme, err)
	}
	return get(t, ctx, "read the "+scheme+" colors", chromedp.Evaluate[schemeColors](readSchemeColors))
}

func TestBrowserDarkScheme(t *testing.T) {
	srv := startServer(t, serverOptions{})
	queueAll(t, srv)
	ctx := newBrowser(t)
	login(t, ctx, srv, "bob")

	// The light scheme first, so the dark checks below prove the media
	// query switched something rather than a page that is always dark.
	light := emulateScheme(t, ctx, "light")
	if l := luminance(t, light.Page); l < 0.5 {
		t.Errorf("light scheme: page background %s (luminance %.2f) is not light", light.Page, l)
	}

	dark := emulateScheme(t, ctx, "dark")
	for _, c := range []struct{ what, bg, fg string }{
		{"page", dark.Page, dark.Text},
		{"card", dark.Card, dark.CardText},
	} {
		bg, fg := luminance(t, c.bg), luminance(t, c.fg)
		if bg > 0.05 {
			t.Errorf("dark scheme: %s background %s (luminance %.3f) is not dark", c.what, c.bg, bg)
		}
		if fg < 0.5 {
			t.Errorf("dark scheme: %s text %s (luminance %.3f) is not light", c.what, c.fg, fg)
		}
		// WCAG AA for body text.
		if r := contrast(bg, fg); r < 4.5 {
			t.Errorf("dark scheme: %s text contrast %.1f:1, want at least 4.5:1", c.what, r)
		}
	}
	screenshot(t, ctx, "queue-dark.png", "queue-dark.png")
}

// focusStyle is how the focused element draws its focus.
type focusStyle struct {
	TestID       string `json:"testid"`
	FocusVisible bool   `json:"focusVisible"`
	OutlineStyle string `json:"outlineStyle"`
	OutlineWidth string `json:"outlineWidth"`
	BoxShadow    string `json:"boxShadow"`
}

func (f focusStyle) visible() bool {
	width, _ := strconv.ParseFloat(regexp.MustCompile(`^[\d.]+`).FindString(f.OutlineWidth), 64)
	return (f.OutlineStyle != "none" && width > 0) || (f.BoxShadow != "" && f.BoxShadow != "none")
}

const readFocusStyle = `(() => {
	const e = document.activeElement, s = getComputedStyle(e);
	return {testid: e.dataset.testid || "", focusVisible: e.matches(":focus-visible"),
		outlineStyle: s.outlineStyle, outlineWidth: s.outlineWidth, boxShadow: s.boxShadow};
})()`

func TestBrowserFocusVisible(t *testing.T) {
	srv := startServer(t, serverOptions{})
	queueAll(t, srv)
	ctx := newBrowser(t)
	login(t, ctx, srv, "bob")

	// An Approve button at rest draws no outline, so the one seen below
	// comes from focus.
	rest := get(t, ctx, "read an unfocused Approve button", chromedp.Evaluate[focusStyle](
		`(() => { const s = getComputedStyle(document.querySelector('[data-testid="approve"]'));
			return {outlineStyle: s.outlineStyle, outlineWidth: s.outlineWidth, boxShadow: s.boxShadow}; })()`))

	// Tab until the first Approve button has the focus; the header, the
	// first card's links and its reason field come before it.
	var focused focusStyle
	for i := 0; ; i++ {
		if i == 60 {
			t.Fatalf("60 tabs never reached an Approve button; last focus: %+v", focused)
		}
		press(t, ctx, "\t")
		focused = get(t, ctx, "read the focus", chromedp.Evaluate[focusStyle](readFocusStyle))
		if focused.TestID == "approve" {
			break
		}
	}
	if !focused.FocusVisible {
		t.Errorf("the tabbed-to Approve button does not match :focus-visible")
	}
	if !focused.visible() {
		t.Errorf("the focused Approve button draws no focus: %+v", focused)
	}
	if rest.visible() {
		t.Errorf("an unfocused Approve button already draws an outline or shadow: %+v", rest)
	}
	screenshot(t, ctx, "queue-focus.png", "")
}

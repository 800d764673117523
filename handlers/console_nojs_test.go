package handlers

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"gatehouse/engine"
)

// With JavaScript off a resolve is a plain form post: it redirects back to
// the page it came from, and that page tells the human the outcome. A
// second human's post then reads what won, and how.
func TestResolveWorksWithoutJavaScript(t *testing.T) {
	t.Parallel()
	b := setup(t)
	a := b.park()
	alice, other := b.signedIn("full"), b.signedIn("full")
	queue := b.get(alice, "/")
	if !strings.Contains(queue.Body, a.ID) {
		t.Fatalf("the queue does not show the approval: %.300s", queue.Body)
	}
	r := b.postForm(alice, "/approvals/"+a.ID+"/resolve", url.Values{
		"_csrf": {b.formToken(queue)}, "next": {"/"}, "resolution": {"deny"}, "reason": {"not today"},
	})
	if r.Status != http.StatusSeeOther || r.Header.Get("Location") != "/" {
		t.Fatalf("resolve without JavaScript: %d to %q, want 303 to /", r.Status, r.Header.Get("Location"))
	}
	if back := b.get(alice, "/"); !strings.Contains(back.Body, "Denied by you") {
		t.Errorf("the page after the redirect does not say the outcome: %.500s", back.Body)
	}
	p, _ := b.s.cfg.Directory.ByID(b.id("full"))
	if got, err := b.svc.GetApproval(context.Background(), p, a.ID); err != nil || got.Status != engine.ApprovalDenied || got.ResolutionReason != "not today" {
		t.Fatalf("stored: %+v %v", got, err)
	}

	page := b.get(other, "/approvals/"+a.ID)
	r = b.postForm(other, "/approvals/"+a.ID+"/resolve", url.Values{
		"_csrf": {b.formToken(page)}, "next": {"/approvals/" + a.ID}, "resolution": {"approve_once"},
	})
	if r.Status != http.StatusSeeOther {
		t.Fatalf("a late resolve without JavaScript: %d, want 303", r.Status)
	}
	if back := b.get(other, r.Header.Get("Location")); !strings.Contains(back.Body, "Already denied by") {
		t.Errorf("the late resolver is not told what won: %.500s", back.Body)
	}
}

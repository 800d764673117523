package handlers

import (
	"net/http"
	"net/url"
	"strings"
	"testing"
)

// Console forms refuse NUL characters as the API does: a 400 naming the
// field, never a database error.
func TestConsoleFormsRefuseNUL(t *testing.T) {
	t.Parallel()
	b := setup(t)
	anon := b.browser()
	r := b.postForm(anon, "/login", url.Values{"_csrf": {b.loginToken(anon)}, "id": {"a\x00b"}, "password": {"x"}})
	if r.Status != http.StatusBadRequest || !strings.Contains(r.Body, "id") {
		t.Errorf("NUL in the sign-in id: %d %.200s, want 400 naming id", r.Status, r.Body)
	}
	hc := b.signedIn("full")
	a := b.park()
	tok := b.formToken(b.get(hc, "/approvals/"+a.ID))
	r = b.postForm(hc, "/approvals/"+a.ID+"/resolve", url.Values{"_csrf": {tok}, "resolution": {"deny"}, "reason": {"no\x00"}})
	if r.Status != http.StatusBadRequest || !strings.Contains(r.Body, "reason") {
		t.Errorf("NUL in the reason: %d %.200s, want 400 naming reason", r.Status, r.Body)
	}
	if r := b.get(hc, "/history?resolver=a%00b"); r.Status != http.StatusBadRequest {
		t.Errorf("NUL in a history filter: %d, want 400", r.Status)
	}
}

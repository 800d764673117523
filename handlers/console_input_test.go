package handlers

import (
	"net/http"
	"net/url"
	"strings"
	"testing"

	"gatehouse/handlers/internal/httpx"
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

// Invalid UTF-8 in a resolution reason is a 400 naming the field, and the
// approval stays pending: the bytes are never replaced and stored.
func TestConsoleFormsRefuseInvalidUTF8(t *testing.T) {
	t.Parallel()
	b := setup(t)
	hc := b.signedIn("full")
	a := b.park()
	tok := b.formToken(b.get(hc, "/approvals/"+a.ID))
	r := b.postForm(hc, "/approvals/"+a.ID+"/resolve", url.Values{"_csrf": {tok}, "resolution": {"approve"}, "reason": {"pay \xff"}})
	if r.Status != http.StatusBadRequest || !strings.Contains(r.Body, "reason") || !strings.Contains(r.Body, "UTF-8") {
		t.Fatalf("invalid UTF-8 in the reason: %d %.200s, want 400 naming reason", r.Status, r.Body)
	}
	if r := b.get(hc, "/approvals/"+a.ID); !strings.Contains(r.Body, "pending") {
		t.Fatalf("the approval is no longer pending after a refused resolution: %.300s", r.Body)
	}
}

// Console writes take urlencoded forms of at most 1 MiB: a bigger body is
// 413 and any other type 415, before a session or form token is looked at.
func TestConsoleFormsAreBounded(t *testing.T) {
	t.Parallel()
	b := setup(t)
	hc := b.signedIn("full")
	a := b.park()
	big := url.Values{"reason": {strings.Repeat("x", httpx.MaxBody)}}.Encode()
	for _, path := range []string{"/login", "/logout", "/logout-everywhere", "/approvals/" + a.ID + "/resolve"} {
		if r := b.do(hc, http.MethodPost, path, "application/x-www-form-urlencoded", strings.NewReader(big)); r.Status != http.StatusRequestEntityTooLarge {
			t.Errorf("POST %s with a %d-byte form: %d, want 413", path, len(big), r.Status)
		}
		for _, ct := range []string{"application/json", "multipart/form-data; boundary=x", "text/plain"} {
			if r := b.do(hc, http.MethodPost, path, ct, strings.NewReader("x=1")); r.Status != http.StatusUnsupportedMediaType {
				t.Errorf("POST %s as %s: %d, want 415", path, ct, r.Status)
			}
		}
	}
	// A small form still goes through.
	tok := b.formToken(b.get(hc, "/approvals/"+a.ID))
	if r := b.postForm(hc, "/approvals/"+a.ID+"/resolve", url.Values{"_csrf": {tok}, "resolution": {"deny"}}); r.Status != http.StatusSeeOther {
		t.Errorf("resolve form: %d %.200s, want 303", r.Status, r.Body)
	}
}

package handlers

import (
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"
)

// The queue tab polls every few seconds on its own; that is no sign of a
// human, so the session still ends after 30 idle minutes. Page views do
// keep it alive.
func TestIdleTimeoutIgnoresThePoll(t *testing.T) {
	t.Parallel()
	b := setup(t)
	polled, browsed := b.signedIn("full"), b.signedIn("full")
	for _, step := range []time.Duration{10 * time.Minute, 10 * time.Minute, 9 * time.Minute} {
		b.clock.Advance(step)
		if r := b.get(polled, "/queue/updates?after=0", "HX-Request", "true"); r.Status != http.StatusOK {
			t.Fatalf("poll within the idle timeout: %d", r.Status)
		}
		if r := b.get(browsed, "/"); r.Status != http.StatusOK {
			t.Fatalf("page view within the idle timeout: %d", r.Status)
		}
	}
	b.clock.Advance(2 * time.Minute) // 31 minutes after the last page view of polled
	if r := b.get(polled, "/"); r.Status != http.StatusSeeOther || !strings.HasPrefix(r.Header.Get("Location"), "/login") {
		t.Errorf("page view after 31 minutes of only polling: %d %s, want 303 to /login", r.Status, r.Header.Get("Location"))
	}
	if r := b.get(polled, "/queue/updates?after=0"); r.Status == http.StatusOK {
		t.Error("the poll still answers after the session ended")
	}
	if r := b.get(browsed, "/"); r.Status != http.StatusOK {
		t.Errorf("page view 2 minutes after the last one: %d, want 200", r.Status)
	}
}

// Signing in again over a live session ends the old one: its cookie,
// copied before, no longer opens the console.
func TestSignInAgainEndsTheOldSession(t *testing.T) {
	t.Parallel()
	b := setup(t)
	hc := b.signedIn("full")
	old := b.sessionCookie(hc)
	// The cookie holds a session, not the sign-in form's token: htmx's
	// header is the write's second check.
	r := b.postForm(hc, "/login", url.Values{"id": {b.id("full")}, "password": {testPassword}}, "HX-Request", "true")
	if r.Header.Get("HX-Redirect") != "/" {
		t.Fatalf("second sign-in: %d %.200s", r.Status, r.Body)
	}
	if fresh := b.sessionCookie(hc); fresh.Value == old.Value {
		t.Fatal("the second sign-in kept the cookie")
	}
	if r := b.get(hc, "/"); r.Status != http.StatusOK {
		t.Fatalf("the new session: %d, want 200", r.Status)
	}
	if r := b.get(b.withCookie(old), "/"); r.Status != http.StatusSeeOther {
		t.Errorf("the old session's cookie: %d, want 303 to /login", r.Status)
	}
}

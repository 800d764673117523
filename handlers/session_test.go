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

// "Sign out everywhere" ends every session of the principal, on every
// device, and no one else's.
func TestSignOutEverywhere(t *testing.T) {
	t.Parallel()
	b := setup(t)
	phone, laptop, other := b.signedIn("full"), b.signedIn("full"), b.signedIn("reader")
	tok := b.formToken(b.get(phone, "/"))
	if r := b.postForm(phone, "/logout-everywhere", url.Values{"_csrf": {tok}}); r.Status != http.StatusSeeOther {
		t.Fatalf("sign out everywhere: %d %.200s", r.Status, r.Body)
	}
	for name, hc := range map[string]*http.Client{"phone": phone, "laptop": laptop} {
		if r := b.get(hc, "/"); r.Status != http.StatusSeeOther {
			t.Errorf("%s after signing out everywhere: %d, want 303 to /login", name, r.Status)
		}
	}
	if r := b.get(other, "/"); r.Status != http.StatusOK {
		t.Errorf("another principal's session: %d, want 200", r.Status)
	}
}

// Every console answer (page, sign-in form, error page, static file)
// carries the security headers: a CSP without inline script or style, no
// framing, no referrer.
func TestConsoleSecurityHeaders(t *testing.T) {
	t.Parallel()
	b := setup(t)
	hc := b.signedIn("full")
	for _, path := range []string{"/", "/login", "/policy", "/approvals/00000000-0000-4000-8000-000000000000", "/static/console.css",
		"/settings/notifications", "/sw.js", "/manifest.webmanifest"} {
		r := b.get(hc, path)
		csp := r.Header.Get("Content-Security-Policy")
		if csp == "" || strings.Contains(csp, "'unsafe-inline'") || strings.Contains(csp, "'unsafe-eval'") ||
			!strings.Contains(csp, "frame-ancestors 'none'") || !strings.Contains(csp, "script-src 'self'") {
			t.Errorf("GET %s (%d): Content-Security-Policy %q", path, r.Status, csp)
		}
		if got := r.Header.Get("Referrer-Policy"); got != "no-referrer" {
			t.Errorf("GET %s: Referrer-Policy %q, want no-referrer", path, got)
		}
		if got := r.Header.Get("X-Content-Type-Options"); got != "nosniff" {
			t.Errorf("GET %s: X-Content-Type-Options %q, want nosniff", path, got)
		}
	}
}

package handlers

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/oauth2-proxy/mockoidc"

	"gatehouse/auth"
	"gatehouse/engine"
	"gatehouse/handlers/console"
)

// idp is a real OpenID Connect provider (mockoidc: discovery, JWKS,
// authorize, token, RS256 ID tokens, PKCE checked) for one test. Its
// handlers share unsynchronized state, so every request and every change
// the test makes runs under mu.
type idp struct {
	m  *mockoidc.MockOIDC
	mu sync.Mutex
	// authorize is the query of the last authorization request.
	authorize url.Values
	// forgeNonce makes the provider sign the next ID token with another
	// nonce than the client asked for.
	forgeNonce bool
}

func startIDP(t *testing.T) *idp {
	t.Helper()
	m, err := mockoidc.NewServer(nil)
	if err != nil {
		t.Fatal(err)
	}
	p := &idp{m: m}
	err = m.AddMiddleware(func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			p.mu.Lock()
			defer p.mu.Unlock()
			if strings.HasSuffix(r.URL.Path, mockoidc.AuthorizationEndpoint) {
				q := r.URL.Query()
				p.authorize = q
				if p.forgeNonce {
					q.Set("nonce", "forged-"+q.Get("nonce"))
					r.URL.RawQuery = q.Encode()
					p.forgeNonce = false
				}
			}
			next.ServeHTTP(w, r)
		})
	})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Start(ln, nil); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = m.Shutdown() })
	return p
}

// person is who signs in at the provider next; authAgo dates auth_time
// (zero: the provider authenticates now, as after prompt=login).
type person struct {
	sub, email string
	verified   bool
	groups     []string
	authAgo    time.Duration
}

func (u person) ID() string                        { return u.sub }
func (u person) Userinfo([]string) ([]byte, error) { return []byte(`{"sub":"` + u.sub + `"}`), nil }

// idClaims are the ID token's claims: mockoidc's own (iss, aud, exp,
// nonce...) and the person's.
type idClaims struct {
	*mockoidc.IDTokenClaims
	Email         string   `json:"email,omitempty"`
	EmailVerified bool     `json:"email_verified"`
	Groups        []string `json:"groups,omitempty"`
	AuthTime      int64    `json:"auth_time"`
}

func (u person) Claims(_ []string, c *mockoidc.IDTokenClaims) (jwt.Claims, error) {
	return idClaims{IDTokenClaims: c, Email: u.email, EmailVerified: u.verified, Groups: u.groups,
		AuthTime: c.IssuedAt.Add(-u.authAgo).Unix()}, nil
}

// next queues the person the provider signs in next.
func (p *idp) next(u person) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.m.QueueUser(u)
}

// advance moves the provider's clock with the bundle's.
func (p *idp) advance(d time.Duration) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.m.FastForward(d)
}

func (p *idp) lastAuthorize() url.Values {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.authorize
}

// setupSSO is a bundle whose principals file signs in through p: full by
// its subject, reader by a verified email, canceller by a group. extra
// adds lines to the oidc section.
func setupSSO(t *testing.T, extra ...string) (*bundle, *idp) {
	t.Helper()
	p := startIDP(t)
	b := setupWith(t, bundleOptions{
		oidc: fmt.Sprintf("oidc:\n  issuer: %s\n  client_id: %s\n  client_secret_env: GATEHOUSE_TEST_OIDC_SECRET\n  scopes: [email, groups]\n%s",
			p.m.Issuer(), p.m.ClientID, strings.Join(extra, "")),
		mapping: map[string]string{
			"full":      "{subject: sub-full}",
			"reader":    "{email: Reader@Example.com}",
			"canceller": "{groups: [cancellers]}",
		},
		sso: func(b *bundle, dir *auth.Directory) *console.OIDC {
			o, _ := dir.OIDC()
			rp, err := console.NewOIDC(context.Background(), o, p.m.ClientSecret, b.base+console.OIDCCallbackPath, b.clock.Now)
			if err != nil {
				t.Fatal(err)
			}
			return rp
		},
	})
	return b, p
}

// ssoStart follows the console's sign-in link to the provider and returns
// the provider's redirect back (the callback path on the console).
func (b *bundle) ssoStart(hc *http.Client, query string) string {
	b.t.Helper()
	r := b.get(hc, "/login/oidc?"+query)
	if r.Status != http.StatusSeeOther {
		b.t.Fatalf("start single sign-on: %d %.300s", r.Status, r.Body)
	}
	resp, err := (&http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}).Get(r.Header.Get("Location"))
	if err != nil {
		b.t.Fatal(err)
	}
	resp.Body.Close()
	back := resp.Header.Get("Location")
	if resp.StatusCode != http.StatusFound || !strings.HasPrefix(back, b.base+console.OIDCCallbackPath) {
		b.t.Fatalf("provider's answer: %d %q", resp.StatusCode, back)
	}
	return strings.TrimPrefix(back, b.base)
}

// ssoSignIn signs u in through the provider and returns the callback's reply.
func (b *bundle) ssoSignIn(p *idp, hc *http.Client, u person, query string) reply {
	b.t.Helper()
	p.next(u)
	return b.get(hc, b.ssoStart(hc, query))
}

// Single sign-on end to end against a real provider: the code flow with
// PKCE (S256), a nonce and a state; the identity maps to a principal by
// subject, verified email or group, and the session is an ordinary one.
func TestOIDCSignInMapsClaimsToPrincipals(t *testing.T) {
	t.Parallel()
	b, p := setupSSO(t)
	page := b.get(b.browser(), "/login?next=%2Fhistory")
	if !strings.Contains(page.Body, `data-testid="login-sso"`) || !strings.Contains(page.Body, "/login/oidc?next=%2Fhistory") {
		t.Fatalf("sign-in page without the single sign-on button: %.500s", page.Body)
	}
	cases := []struct {
		who  string
		u    person
		name string
	}{
		{"subject", person{sub: "sub-full"}, "full"},
		{"verified email", person{sub: "sub-r", email: "reader@example.com", verified: true}, "reader"},
		{"group", person{sub: "sub-c", groups: []string{"staff", "cancellers"}}, "canceller"},
	}
	for _, c := range cases {
		hc := b.browser()
		r := b.ssoSignIn(p, hc, c.u, "next=%2Fhistory")
		if r.Status != http.StatusSeeOther || r.Header.Get("Location") != "/history" {
			t.Fatalf("%s: callback %d %q %.300s, want 303 to /history", c.who, r.Status, r.Header.Get("Location"), r.Body)
		}
		q := p.lastAuthorize()
		if q.Get("code_challenge_method") != "S256" || q.Get("code_challenge") == "" || q.Get("nonce") == "" ||
			q.Get("state") == "" || !strings.Contains(q.Get("scope"), "openid") || q.Get("prompt") != "" {
			t.Fatalf("%s: authorization request %v: want S256 PKCE, a nonce, a state, openid and no prompt", c.who, q)
		}
		if page := b.get(hc, "/history"); page.Status != http.StatusOK || !strings.Contains(page.Body, b.id(c.name)) {
			t.Fatalf("%s: history as the signed-in principal: %d, want the page of %s", c.who, page.Status, b.id(c.name))
		}
	}
	// The mapped principal's scopes apply: reader may not resolve.
	hc := b.browser()
	b.ssoSignIn(p, hc, cases[1].u, "next=%2F")
	a := b.park()
	tok := b.formToken(b.get(hc, "/"))
	if r := b.postForm(hc, "/approvals/"+a.ID+"/resolve", url.Values{"_csrf": {tok}, "resolution": {"deny"}}); r.Status != http.StatusForbidden {
		t.Fatalf("reader resolving: %d, want 403", r.Status)
	}
}

// Identities the file does not map are refused with a page that says so:
// an unknown subject, and an email the provider has not verified.
func TestOIDCRefusesUnknownIdentity(t *testing.T) {
	t.Parallel()
	b, p := setupSSO(t)
	for _, u := range []person{{sub: "stranger"}, {sub: "sub-x", email: "reader@example.com", verified: false}} {
		hc := b.browser()
		r := b.ssoSignIn(p, hc, u, "next=%2F")
		if r.Status != http.StatusForbidden || !strings.Contains(r.Body, "no Gatehouse principal is mapped") ||
			!strings.Contains(r.Body, u.sub) {
			t.Fatalf("%s: %d %.400s, want 403 naming the unmapped subject", u.sub, r.Status, r.Body)
		}
		if page := b.get(hc, "/"); page.Status != http.StatusSeeOther {
			t.Fatalf("%s: refused sign-in left a session: %d", u.sub, page.Status)
		}
	}
}

// With password sign-in turned off the sign-in page offers only the
// provider, the form's endpoint is gone, and the step-up goes through the
// provider too; a provider's refusal is shown, not followed.
func TestOIDCWithPasswordLoginOff(t *testing.T) {
	t.Parallel()
	b, p := setupSSO(t, "  password_login: false\n")
	hc := b.browser()
	page := b.get(hc, "/login")
	if strings.Contains(page.Body, `data-testid="login-password"`) || !strings.Contains(page.Body, `data-testid="login-sso"`) {
		t.Fatalf("sign-in page with passwords off: %.500s", page.Body)
	}
	// The page has no form, so no form token: htmx's header stands in.
	form := url.Values{"id": {b.id("full")}, "password": {testPassword}}
	if r := b.postForm(hc, "/login", form, "HX-Request", "true"); r.Status != http.StatusNotFound {
		t.Fatalf("password sign-in while off: %d, want 404", r.Status)
	}

	back := b.ssoStart(hc, "next=%2F")
	u, _ := url.Parse(back)
	q := u.Query()
	q.Del("code")
	q.Set("error", "access_denied")
	if r := b.get(hc, u.Path+"?"+q.Encode()); r.Status != http.StatusUnauthorized || !strings.Contains(r.Body, "did not sign you in (access_denied)") {
		t.Fatalf("provider's refusal: %d %.300s, want 401 quoting it", r.Status, r.Body)
	}

	if r := b.ssoSignIn(p, hc, person{sub: "sub-full"}, "next=%2F"); r.Status != http.StatusSeeOther {
		t.Fatalf("sign in: %d %.300s", r.Status, r.Body)
	}
	b.clock.Advance(11 * time.Minute)
	page = b.get(hc, "/reauth?next=%2F")
	if strings.Contains(page.Body, `data-testid="step-up-password"`) || !strings.Contains(page.Body, `data-testid="step-up-sso"`) {
		t.Fatalf("step-up page with passwords off: %.500s", page.Body)
	}
	form = url.Values{"_csrf": {b.formToken(b.get(hc, "/"))}, "next": {"/"}, "password": {testPassword}}
	if r := b.postForm(hc, "/reauth", form); r.Status != http.StatusNotFound {
		t.Fatalf("password step-up while off: %d, want 404", r.Status)
	}
}

// A callback is honoured once, in the browser that started it, with an ID
// token carrying that sign-in's nonce: a state from elsewhere (login
// CSRF), a replayed callback and a token with another nonce are refused.
func TestOIDCRefusesForgedOrReplayedStateAndNonce(t *testing.T) {
	t.Parallel()
	b, p := setupSSO(t)
	full := person{sub: "sub-full"}

	// The attacker's own callback pushed into the victim's browser.
	p.next(full)
	attacker := b.ssoStart(b.browser(), "next=%2F")
	victim := b.browser()
	b.get(victim, "/login")
	if r := b.get(victim, attacker); r.Status != http.StatusBadRequest || !strings.Contains(r.Body, "not started in this browser") {
		t.Fatalf("another browser's callback: %d %.300s, want 400", r.Status, r.Body)
	}

	// A forged state in the browser that started a sign-in.
	hc := b.browser()
	p.next(full)
	back := b.ssoStart(hc, "next=%2F")
	u, _ := url.Parse(back)
	q := u.Query()
	q.Set("state", "forged")
	if r := b.get(hc, u.Path+"?"+q.Encode()); r.Status != http.StatusBadRequest {
		t.Fatalf("forged state: %d, want 400", r.Status)
	}

	// Replayed: the same callback with the cookie as it was before use.
	hc = b.browser()
	p.next(full)
	back = b.ssoStart(hc, "next=%2F")
	before := b.sessionCookie(hc)
	if r := b.get(hc, back); r.Status != http.StatusSeeOther {
		t.Fatalf("first use: %d %.300s", r.Status, r.Body)
	}
	if r := b.get(b.withCookie(before), back); r.Status != http.StatusBadRequest || !strings.Contains(r.Body, "already used") {
		t.Fatalf("replayed callback: %d %.300s, want 400", r.Status, r.Body)
	}

	// An ID token whose nonce is not this sign-in's (PKCE and state fine).
	p.mu.Lock()
	p.forgeNonce = true
	p.mu.Unlock()
	hc = b.browser()
	if r := b.ssoSignIn(p, hc, full, "next=%2F"); r.Status != http.StatusUnauthorized || !strings.Contains(r.Body, "could not be verified") {
		t.Fatalf("forged nonce: %d %.300s, want 401", r.Status, r.Body)
	}
	if page := b.get(hc, "/"); page.Status != http.StatusSeeOther {
		t.Fatalf("a refused sign-in left a session: %d", page.Status)
	}
}

// approve posts the confirmed approval of a critical card.
func (b *bundle) approveCritical(hc *http.Client, a string, hash string) reply {
	b.t.Helper()
	tok := b.formToken(b.get(hc, "/approvals/"+a))
	return b.postForm(hc, "/approvals/"+a+"/resolve", url.Values{
		"_csrf": {tok}, "resolution": {"approve_once"}, "arguments_hash": {hash}, "confirm": {"critical"},
	})
}

// Step-up by password: past the window a session cannot approve a
// critical action; the card says so before the click, the server refuses
// and sends the human to re-enter the password, and back on the card the
// approval goes through. A non-critical approval needs no step-up.
func TestStepUpPasswordForCriticalApproval(t *testing.T) {
	t.Parallel()
	b := setup(t)
	crit, plain := b.charge(), b.park()
	hc := b.signedIn("full")
	card := b.get(hc, "/approvals/"+crit.ID)
	if !strings.Contains(card.Body, `data-testid="step-up-note"`) || !strings.Contains(card.Body, "within the last 10 minutes") ||
		strings.Contains(card.Body, `data-testid="step-up"`) {
		t.Fatalf("a fresh session's critical card: want the note and Approve, got %.300s", card.Body)
	}

	b.clock.Advance(11 * time.Minute)
	card = b.get(hc, "/approvals/"+crit.ID)
	if !strings.Contains(card.Body, `data-testid="step-up"`) || strings.Contains(card.Body, `data-testid="approve"`) {
		t.Fatal("a stale session's critical card still offers Approve rather than the re-authentication")
	}
	r := b.approveCritical(hc, crit.ID, crit.ArgumentsHash)
	want := "/reauth?next=%2Fapprovals%2F" + crit.ID
	if r.Status != http.StatusSeeOther || r.Header.Get("Location") != want {
		t.Fatalf("stale approve: %d %q, want 303 to %s", r.Status, r.Header.Get("Location"), want)
	}
	if b.approvalOf(crit.ID).Status != engine.ApprovalPending {
		t.Fatal("a stale session approved a critical action")
	}
	tok := b.formToken(b.get(hc, "/"))
	if r := b.postForm(hc, "/approvals/"+plain.ID+"/resolve", url.Values{"_csrf": {tok}, "resolution": {"approve_once"}}); r.Status != http.StatusSeeOther ||
		b.approvalOf(plain.ID).Status != engine.ApprovalApproved {
		t.Fatalf("a stale session approving a non-critical action: %d", r.Status)
	}

	page := b.get(hc, want)
	if page.Status != http.StatusOK || !strings.Contains(page.Body, `data-testid="step-up-password"`) {
		t.Fatalf("step-up page: %d %.300s", page.Status, page.Body)
	}
	form := url.Values{"_csrf": {b.formToken(page)}, "next": {"/approvals/" + crit.ID}, "password": {"wrong"}}
	if r := b.postForm(hc, "/reauth", form); r.Status != http.StatusUnauthorized || b.approvalOf(crit.ID).Status != engine.ApprovalPending {
		t.Fatalf("wrong password: %d, want 401", r.Status)
	}
	b.clock.Advance(time.Second) // past the one-typo backoff
	form.Set("password", testPassword)
	if r := b.postForm(hc, "/reauth", form); r.Status != http.StatusSeeOther || r.Header.Get("Location") != "/approvals/"+crit.ID {
		t.Fatalf("right password: %d %q, want 303 back to the card", r.Status, r.Header.Get("Location"))
	}
	if r := b.approveCritical(hc, crit.ID, crit.ArgumentsHash); r.Status != http.StatusSeeOther || b.approvalOf(crit.ID).Status != engine.ApprovalApproved {
		t.Fatalf("approve after the step-up: %d, status %s", r.Status, b.approvalOf(crit.ID).Status)
	}
}

// Step-up by single sign-on: the re-authentication asks the provider for
// a fresh login (prompt=login, max_age) and returns to the card; a
// provider that answers with an old authentication does not count.
func TestStepUpOIDCForCriticalApproval(t *testing.T) {
	t.Parallel()
	b, p := setupSSO(t)
	crit := b.charge()
	hc := b.browser()
	if r := b.ssoSignIn(p, hc, person{sub: "sub-full"}, "next=%2F"); r.Status != http.StatusSeeOther {
		t.Fatalf("sign in: %d %.300s", r.Status, r.Body)
	}
	b.clock.Advance(11 * time.Minute)
	p.advance(11 * time.Minute)
	r := b.approveCritical(hc, crit.ID, crit.ArgumentsHash)
	if r.Status != http.StatusSeeOther || !strings.HasPrefix(r.Header.Get("Location"), "/reauth?") {
		t.Fatalf("stale approve: %d %q, want 303 to the step-up", r.Status, r.Header.Get("Location"))
	}
	page := b.get(hc, r.Header.Get("Location"))
	start := "/login/oidc?next=%2Fapprovals%2F" + crit.ID + "&amp;step_up=1"
	if !strings.Contains(page.Body, start) {
		t.Fatalf("step-up page without the single sign-on link %s: %.500s", start, page.Body)
	}
	query := "next=%2Fapprovals%2F" + crit.ID + "&step_up=1"

	// The provider skipped the login: auth_time is its 20-minute-old one.
	if r := b.ssoSignIn(p, hc, person{sub: "sub-full", authAgo: 20 * time.Minute}, query); r.Status != http.StatusUnauthorized ||
		!strings.Contains(r.Body, "did not ask for your credentials again") {
		t.Fatalf("an old authentication as a step-up: %d %.300s, want 401", r.Status, r.Body)
	}
	if q := p.lastAuthorize(); q.Get("prompt") != "login" || q.Get("max_age") != "600" {
		t.Fatalf("step-up authorization request %v: want prompt=login and max_age=600", q)
	}
	if r := b.approveCritical(hc, crit.ID, crit.ArgumentsHash); r.Status != http.StatusSeeOther || b.approvalOf(crit.ID).Status != engine.ApprovalPending {
		t.Fatalf("approve after a refused step-up: %d, status %s", r.Status, b.approvalOf(crit.ID).Status)
	}

	r = b.ssoSignIn(p, hc, person{sub: "sub-full"}, query)
	if r.Status != http.StatusSeeOther || r.Header.Get("Location") != "/approvals/"+crit.ID {
		t.Fatalf("fresh login: %d %q %.300s, want 303 back to the card", r.Status, r.Header.Get("Location"), r.Body)
	}
	if r := b.approveCritical(hc, crit.ID, crit.ArgumentsHash); r.Status != http.StatusSeeOther || b.approvalOf(crit.ID).Status != engine.ApprovalApproved {
		t.Fatalf("approve after the step-up: %d, status %s", r.Status, b.approvalOf(crit.ID).Status)
	}
}

// Starting a sign-in needs no session and writes a row, so one client
// address may start a burst of them and then one every few seconds; the
// refusal says when to come back, and other addresses are not held up.
func TestOIDCStartIsRateLimitedPerAddress(t *testing.T) {
	t.Parallel()
	b, _ := setupSSO(t)
	hc := b.browser()
	for i := range 10 {
		if r := b.get(hc, "/login/oidc"); r.Status != http.StatusSeeOther {
			t.Fatalf("start %d within the burst: %d", i+1, r.Status)
		}
	}
	r := b.get(hc, "/login/oidc")
	if r.Status != http.StatusTooManyRequests || r.Header.Get("Retry-After") == "" {
		t.Fatalf("start past the burst: %d, Retry-After %q", r.Status, r.Header.Get("Retry-After"))
	}
	if r := b.get(hc, "/login/oidc", testPeerHeader, "10.200.0.1"); r.Status != http.StatusSeeOther {
		t.Fatalf("another address: %d", r.Status)
	}
	b.clock.Advance(5 * time.Second)
	if r := b.get(hc, "/login/oidc"); r.Status != http.StatusSeeOther {
		t.Fatalf("after the refill: %d", r.Status)
	}
}

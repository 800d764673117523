package console

import (
	"context"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/coreos/go-oidc/v3/oidc"
	"github.com/labstack/echo/v4"
	"golang.org/x/oauth2"

	"gatehouse/auth"
	"gatehouse/handlers/internal/httpx"
	"gatehouse/service"
	"gatehouse/web/templates"
)

// oidcStartLimit is how many sign-ins one client address may start: a
// burst for a few people behind one address, then one every five seconds.
var oidcStartLimit = httpx.RateLimit{PerSecond: 0.2, Burst: 10}

// OIDCCallbackPath is where the identity provider sends the browser back;
// the redirect URL registered at the provider ends with it.
const OIDCCallbackPath = "/login/oidc/callback"

// oidcStartPath starts a single sign-on; ?step_up=1 asks the provider to
// authenticate the human again (prompt=login, max_age).
const oidcStartPath = "/login/oidc"

// cookieKeyOIDCState binds a sign-in in flight to the browser that started
// it: a callback whose state is not this browser's is someone else's
// sign-in being pushed into this browser (login CSRF), and is refused.
const cookieKeyOIDCState = "oidc_state"

// oidcTimeout bounds the code exchange at the provider.
const oidcTimeout = 10 * time.Second

// maxProviderError bounds the provider's error code quoted back to the
// human: it arrives in the URL, from anyone.
const maxProviderError = 64

// OIDC is the console's OpenID Connect relying party: the authorization
// code flow with PKCE (S256), a nonce, and ID tokens verified against the
// provider's discovered keys, issuer and this client's id.
type OIDC struct {
	oauth       oauth2.Config
	verifier    *oidc.IDTokenVerifier
	groupsClaim string
	label       string
}

// NewOIDC discovers the provider of s (its issuer's
// /.well-known/openid-configuration) and prepares the client. Discovery
// happens here, once, so a wrong issuer refuses the start rather than
// the first sign-in. redirectURL is where the provider returns
// (OIDCCallbackPath on the console's base URL unless s names one); now is
// the clock ID tokens are checked against (nil: time.Now).
func NewOIDC(ctx context.Context, s auth.OIDC, clientSecret, redirectURL string, now func() time.Time) (*OIDC, error) {
	p, err := oidc.NewProvider(ctx, s.Issuer)
	if err != nil {
		return nil, fmt.Errorf("oidc: discovering %s: %w", s.Issuer, err)
	}
	if s.RedirectURL != "" {
		redirectURL = s.RedirectURL
	}
	return &OIDC{
		oauth: oauth2.Config{
			ClientID:     s.ClientID,
			ClientSecret: clientSecret,
			Endpoint:     p.Endpoint(),
			RedirectURL:  redirectURL,
			Scopes:       append([]string{oidc.ScopeOpenID}, s.Scopes...),
		},
		verifier:    p.Verifier(&oidc.Config{ClientID: s.ClientID, Now: now}),
		groupsClaim: s.GroupsClaim,
		label:       s.ButtonLabel,
	}, nil
}

// ssoButton is the sign-in page's single sign-on button, or none.
func (cn *Console) ssoButton(next string, stepUp bool) templates.SSOButton {
	if cn.oidc == nil {
		return templates.SSOButton{}
	}
	q := url.Values{"next": {next}}
	label := cn.oidc.label
	if stepUp {
		q.Set("step_up", "1")
		label = "Sign in again with single sign-on"
	}
	return templates.SSOButton{Label: label, URL: oidcStartPath + "?" + q.Encode()}
}

// OIDCStart sends the browser to the provider. The state, the nonce and
// the PKCE verifier are new random values; the verifier and the nonce stay
// in the database under the state, and the state also goes into this
// browser's signed cookie.
func (cn *Console) OIDCStart(c echo.Context) error {
	if cn.oidc == nil {
		return httpx.NewError(http.StatusNotFound, httpx.CodeNotFound, "Single sign-on is not configured.")
	}
	if wait, ok := cn.oidcStarts.Allow(c.RealIP()); !ok {
		c.Response().Header().Set("Retry-After", strconv.Itoa(max(int(wait.Round(time.Second)/time.Second), 1)))
		return httpx.NewError(http.StatusTooManyRequests, httpx.CodeRateLimited, "Too many sign-ins started from this address: wait a moment and try again.")
	}
	login := service.OIDCLogin{
		Nonce:    randomToken(),
		Verifier: oauth2.GenerateVerifier(),
		Next:     safeNext(c.QueryParam("next")),
		// With the step-up off there is no window to ask the provider for.
		StepUp: c.QueryParam("step_up") == "1" && cn.stepUpWindow > 0,
	}
	state := randomToken()
	if err := cn.store.OIDCLoginStart(c.Request().Context(), state, login, cn.now()); err != nil {
		return err
	}
	sess := cn.cookie(c)
	sess.Values[cookieKeyOIDCState] = state
	if err := cn.saveCookie(c, sess); err != nil {
		return err
	}
	opts := []oauth2.AuthCodeOption{oauth2.S256ChallengeOption(login.Verifier), oidc.Nonce(login.Nonce)}
	if login.StepUp {
		// The provider must ask for the credentials again and report when
		// it did (auth_time), however recent its own session is.
		opts = append(opts, oauth2.SetAuthURLParam("prompt", "login"),
			oauth2.SetAuthURLParam("max_age", strconv.Itoa(int(cn.stepUpWindow/time.Second))))
	}
	return c.Redirect(http.StatusSeeOther, cn.oidc.oauth.AuthCodeURL(state, opts...))
}

// idClaims are the ID token's claims the console reads besides the ones
// the verifier checks (iss, aud, exp, signature).
type idClaims struct {
	Nonce         string `json:"nonce"`
	AuthTime      int64  `json:"auth_time"`
	Email         string `json:"email"`
	EmailVerified *bool  `json:"email_verified"`
}

// OIDCCallback completes a sign-in: the state must be this browser's and
// still unused, the code is exchanged with the PKCE verifier, the ID token
// is verified and must carry the nonce of this sign-in, and its identity
// must map to a principal. Every refusal is a sign-in page saying why;
// nothing of the refused attempt stays usable.
func (cn *Console) OIDCCallback(c echo.Context) error {
	if cn.oidc == nil {
		return httpx.NewError(http.StatusNotFound, httpx.CodeNotFound, "Single sign-on is not configured.")
	}
	ctx := c.Request().Context()
	sess := cn.cookie(c)
	want, _ := sess.Values[cookieKeyOIDCState].(string)
	state := c.QueryParam("state")
	if want != "" {
		delete(sess.Values, cookieKeyOIDCState)
		if err := cn.saveCookie(c, sess); err != nil {
			return err
		}
	}
	if want == "" || subtle.ConstantTimeCompare([]byte(state), []byte(want)) != 1 {
		return cn.oidcRefused(c, http.StatusBadRequest, "/", "This sign-in was not started in this browser, or it has already finished. Start again.")
	}
	now := cn.now()
	login, ok, err := cn.store.OIDCLoginTake(ctx, state, now)
	if err != nil {
		return err
	}
	if !ok {
		return cn.oidcRefused(c, http.StatusBadRequest, "/", "This sign-in has expired or was already used. Start again.")
	}
	if e := c.QueryParam("error"); e != "" {
		if len(e) > maxProviderError {
			e = e[:maxProviderError]
		}
		return cn.oidcRefused(c, http.StatusUnauthorized, login.Next, "The identity provider did not sign you in ("+e+").")
	}
	id, authTime, err := cn.oidcIdentity(ctx, c.QueryParam("code"), login, now)
	if err != nil {
		cn.log.WarnContext(ctx, "console single sign-on refused", "request_id", httpx.RequestID(c), "error", err)
		return cn.oidcRefused(c, http.StatusUnauthorized, login.Next, "The identity provider's answer could not be verified. Start again.")
	}
	if login.StepUp && (authTime.IsZero() || now.Sub(authTime) > cn.stepUpWindow) {
		return cn.oidcRefused(c, http.StatusUnauthorized, login.Next,
			"The identity provider did not ask for your credentials again, so this does not count as a fresh sign-in.")
	}
	if authTime.IsZero() {
		authTime = now
	}
	p, err := cn.dir.OIDCPrincipal(id)
	switch {
	case errors.Is(err, auth.ErrAmbiguous):
		return cn.oidcRefused(c, http.StatusForbidden, login.Next, "Your groups map to more than one Gatehouse principal. Ask an operator to fix the principals file.")
	case err != nil:
		return cn.oidcRefused(c, http.StatusForbidden, login.Next,
			fmt.Sprintf("You signed in at the identity provider as %q, but no Gatehouse principal is mapped to that identity. Ask an operator to add it to the principals file.", id.Subject))
	}
	if cur, ok, err := cn.currentSession(c, true); err != nil {
		return err
	} else if ok && login.StepUp && cur.Principal.ID == p.ID && cur.Principal.TenantID == p.TenantID {
		if err := cn.store.SteppedUp(ctx, cur.ID, authTime); err != nil {
			return err
		}
		return redirect(c, login.Next)
	}
	if _, err := cn.signIn(c, p, authTime); err != nil {
		return err
	}
	cn.log.InfoContext(ctx, "console sign-in", "request_id", httpx.RequestID(c), "principal", p.ID, "tenant", p.TenantID, "method", "oidc")
	return redirect(c, login.Next)
}

// oidcIdentity exchanges the code and verifies the ID token: signature,
// issuer, audience and expiry (go-oidc), then the nonce of this sign-in.
// authTime is the token's auth_time, zero when it has none.
func (cn *Console) oidcIdentity(ctx context.Context, code string, login service.OIDCLogin, now time.Time) (id auth.Identity, authTime time.Time, err error) {
	if code == "" {
		return id, authTime, errors.New("no code in the callback")
	}
	ctx, cancel := context.WithTimeout(ctx, oidcTimeout)
	defer cancel()
	tok, err := cn.oidc.oauth.Exchange(ctx, code, oauth2.VerifierOption(login.Verifier))
	if err != nil {
		return id, authTime, fmt.Errorf("code exchange: %w", err)
	}
	raw, ok := tok.Extra("id_token").(string)
	if !ok || raw == "" {
		return id, authTime, errors.New("the token response has no id_token")
	}
	idt, err := cn.oidc.verifier.Verify(ctx, raw)
	if err != nil {
		return id, authTime, fmt.Errorf("id token: %w", err)
	}
	var cl idClaims
	if err := idt.Claims(&cl); err != nil {
		return id, authTime, fmt.Errorf("id token claims: %w", err)
	}
	if cl.Nonce == "" || subtle.ConstantTimeCompare([]byte(cl.Nonce), []byte(login.Nonce)) != 1 {
		return id, authTime, errors.New("id token: the nonce is not this sign-in's")
	}
	groups, err := cn.groups(idt)
	if err != nil {
		return id, authTime, err
	}
	id = auth.Identity{Subject: idt.Subject, Email: cl.Email, EmailVerified: cl.EmailVerified != nil && *cl.EmailVerified, Groups: groups}
	if cl.AuthTime > 0 {
		// A provider's clock a little ahead must not date a sign-in in
		// the future, where it would stay fresh for longer.
		if authTime = time.Unix(cl.AuthTime, 0); authTime.After(now) {
			authTime = now
		}
	}
	return id, authTime, nil
}

// groups reads the configured groups claim: a list of strings, or one
// string; absent is no groups.
func (cn *Console) groups(idt *oidc.IDToken) ([]string, error) {
	var all map[string]json.RawMessage
	if err := idt.Claims(&all); err != nil {
		return nil, fmt.Errorf("id token claims: %w", err)
	}
	raw, ok := all[cn.oidc.groupsClaim]
	if !ok || string(raw) == "null" {
		return nil, nil
	}
	var list []string
	if err := json.Unmarshal(raw, &list); err == nil {
		return list, nil
	}
	var one string
	if err := json.Unmarshal(raw, &one); err != nil {
		return nil, fmt.Errorf("id token: claim %q is neither a string nor a list of strings", cn.oidc.groupsClaim)
	}
	return []string{one}, nil
}

// oidcRefused is the sign-in page with why single sign-on did not sign the
// human in, and the way to try again.
func (cn *Console) oidcRefused(c echo.Context, status int, next, why string) error {
	tok, err := cn.ensureLoginToken(c)
	if err != nil {
		return err
	}
	return cn.renderLogin(c, status, templates.LoginPage{Next: next, Error: why}, tok)
}

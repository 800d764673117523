package e2e

import (
	"os"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/oauth2-proxy/mockoidc"

	"gatehouse/engine"
)

// oidcSecretEnv is the variable the test principals file names for the
// client secret.
const oidcSecretEnv = "GATEHOUSE_E2E_OIDC_SECRET"

// startSSOServer starts the binary with single sign-on through a real
// OpenID Connect provider (mockoidc, in this process): alice is mapped by
// her subject at the provider.
func startSSOServer(t *testing.T) (*server, *mockoidc.MockOIDC) {
	t.Helper()
	m, err := mockoidc.Run()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = m.Shutdown() })
	srv := newServer(t, "")
	raw, err := os.ReadFile(srv.principals)
	if err != nil {
		t.Fatal(err)
	}
	yml := "oidc:\n  issuer: " + m.Issuer() + "\n  client_id: " + m.ClientID + "\n  client_secret_env: " + oidcSecretEnv +
		"\n  scopes: [email]\n  button_label: Sign in with Example SSO\n" +
		strings.Replace(string(raw), "  - id: alice\n", "  - id: alice\n    oidc: {subject: sub-alice}\n", 1)
	if err := os.WriteFile(srv.principals, []byte(yml), 0o600); err != nil {
		t.Fatal(err)
	}
	p := srv.spawn(t, serverOptions{Env: []string{oidcSecretEnv + "=" + m.ClientSecret}})
	srv.waitReady(t, p)
	return srv, m
}

// A deep link to a card, opened signed out, goes through the sign-in
// page's single sign-on button to the provider and back to that card.
func TestBrowserOIDCSignInReturnsToTheCard(t *testing.T) {
	srv, m := startSSOServer(t)
	_, res := parkTool(t, srv, engine.ActionRequest{Name: "payments.charge", Summary: "Charge Acme Corp $49.00",
		Arguments: map[string]any{"customer": "cus_8812", "amount_cents": 4900, "currency": "USD"}})
	m.QueueUser(&mockoidc.MockUser{Subject: "sub-alice", Email: "alice@example.com", EmailVerified: true})

	ctx := newBrowser(t)
	card := srv.BaseURL + "/approvals/" + res.ApprovalID
	do(t, ctx, "open the deep link signed out",
		chromedp.Navigate(card),
		chromedp.WaitVisible(css(`[data-testid="login-sso"]`)),
	)
	if label := get(t, ctx, "read the button", chromedp.Text(css(`[data-testid="login-sso"]`))); label != "Sign in with Example SSO" {
		t.Fatalf("sign-in button: %q", label)
	}
	do(t, ctx, "sign in with single sign-on",
		chromedp.Click(css(`[data-testid="login-sso"]`)),
		chromedp.WaitVisible(css(`#card-`+res.ApprovalID)),
	)
	if loc := get(t, ctx, "read the location", chromedp.Location()); loc != card {
		t.Fatalf("after sign-in: at %s, want the card %s", loc, card)
	}
	// A fresh sign-in: the critical card offers Approve under the step-up note.
	do(t, ctx, "see the step-up note and Approve",
		chromedp.WaitVisible(css(`[data-testid="step-up-note"]`)),
		chromedp.WaitVisible(css(`#card-`+res.ApprovalID+` [data-testid="approve"]`)),
	)
	if user := get(t, ctx, "read the user", chromedp.Text(css(`header`))); !strings.Contains(user, "Alice") {
		t.Fatalf("header %q does not name Alice", user)
	}
}

package e2e

import (
	"context"
	"crypto/ecdh"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/browser"
	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/cdproto/serviceworker"
	"github.com/chromedp/chromedp"
	"github.com/jackc/pgx/v5/pgxpool"
)

// pushStandIn replaces PushManager's subscribe and getSubscription in the
// page, and only them. Headless Chromium here has no push service it could
// reach (no internet; Chromium's is Google's FCM), so a real subscribe
// fails. The stand-in answers what a real one would: an object shaped like
// a PushSubscription whose endpoint is a test server on loopback and whose
// keys the test generated. Everything else is real: the permission prompt
// (granted through CDP), the service worker registration, the page's
// script, its POST and the server. It records the applicationServerKey the
// page passed, so the test can check the page used the server's VAPID key.
const pushStandIn = `(() => {
  const sub = %s;
  const b64url = (buf) => btoa(String.fromCharCode(...new Uint8Array(buf))).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
  const make = () => ({
    endpoint: sub.endpoint,
    expirationTime: null,
    options: { userVisibleOnly: true },
    toJSON: () => ({ endpoint: sub.endpoint, expirationTime: null, keys: { p256dh: sub.p256dh, auth: sub.auth } }),
    unsubscribe: () => { sessionStorage.removeItem("push-stand-in"); return Promise.resolve(true); },
  });
  PushManager.prototype.subscribe = function (opts) {
    sessionStorage.setItem("push-stand-in", JSON.stringify({ userVisibleOnly: opts.userVisibleOnly, key: b64url(opts.applicationServerKey) }));
    return Promise.resolve(make());
  };
  PushManager.prototype.getSubscription = function () {
    return Promise.resolve(sessionStorage.getItem("push-stand-in") ? make() : null);
  };
})();`

// pushRow is a stored push subscription as the test reads it.
type pushRow struct{ principal, endpoint, p256dh, auth string }

func pushRows(t *testing.T, pool *pgxpool.Pool, tenant string) []pushRow {
	t.Helper()
	rows, err := pool.Query(testContext(t), `SELECT principal_id, endpoint, p256dh, auth FROM push_subscriptions WHERE tenant_id = $1`, tenant)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []pushRow
	for rows.Next() {
		var r pushRow
		if err := rows.Scan(&r.principal, &r.endpoint, &r.p256dh, &r.auth); err != nil {
			t.Fatal(err)
		}
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// registrationID is the id CDP knows the service worker of scope by.
func registrationID(t *testing.T, ctx context.Context, scope string) serviceworker.RegistrationID {
	t.Helper()
	found := make(chan serviceworker.RegistrationID, 1)
	lctx, cancel := context.WithCancel(ctx)
	defer cancel()
	if err := chromedp.Listen(lctx, func(ev any) {
		if e, ok := ev.(*serviceworker.EventWorkerRegistrationUpdated); ok {
			for _, r := range e.Registrations {
				if r.ScopeURL == scope && !r.IsDeleted {
					select {
					case found <- r.RegistrationID:
					default:
					}
				}
			}
		}
	}); err != nil {
		t.Fatal(err)
	}
	if _, err := chromedp.Call(ctx, serviceworker.Enable, cdp.Empty{}); err != nil {
		t.Fatalf("enable the service worker domain: %v", err)
	}
	select {
	case id := <-found:
		return id
	case <-time.After(browserTimeout):
		t.Fatalf("no service worker registration for %s", scope)
		return ""
	}
}

// shownNotifications are the service worker's notifications on show, as
// title|body|tag|url lines.
const shownNotifications = `navigator.serviceWorker.ready.then(r => r.getNotifications()).then(ns => ns.map(n => [n.title, n.body, n.tag, n.data && n.data.url].join("|")).join("\n"))`

// deliverUntilShown delivers a push to the service worker until the shown
// notifications are want, and fails the test with what is shown when they
// never become so. A push can reach a worker that is still starting or was
// just stopped, as it can from a real push service, which delivers again;
// the notification's tag makes a repeat replace, never add.
func deliverUntilShown(t *testing.T, ctx context.Context, deliver func(), want string) {
	t.Helper()
	deadline := time.Now().Add(browserTimeout)
	for {
		deliver()
		wctx, cancel := context.WithTimeout(ctx, 3*time.Second)
		_, err := chromedp.Run(wctx, chromedp.Poll[bool](shownNotifications+`.then(s => s === `+strconv.Quote(want)+`)`))
		cancel()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			got := get(t, ctx, "read the shown notifications", chromedp.Evaluate[string](shownNotifications, chromedp.EvalAwaitPromise))
			t.Fatalf("shown notifications %q, want %q (%v)", got, want, err)
		}
	}
}

// An approver turns notifications on in the console: the browser asks for
// permission, registers the service worker, subscribes with the server's
// VAPID key and posts the subscription, which the server stores under the
// approver. Turning them off removes it.
func TestBrowserPushSubscribe(t *testing.T) {
	srv := startServer(t, serverOptions{})
	pushService := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusCreated) }))
	defer pushService.Close()

	key, err := ecdh.P256().GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	secret := make([]byte, 16)
	if _, err := rand.Read(secret); err != nil {
		t.Fatal(err)
	}
	want := pushRow{
		principal: "bob",
		endpoint:  pushService.URL + "/push/v1/bob-phone",
		p256dh:    base64.RawURLEncoding.EncodeToString(key.PublicKey().Bytes()),
		auth:      base64.RawURLEncoding.EncodeToString(secret),
	}
	sub, err := json.Marshal(map[string]string{"endpoint": want.endpoint, "p256dh": want.p256dh, "auth": want.auth})
	if err != nil {
		t.Fatal(err)
	}

	ctx := newBrowser(t)
	if _, err := chromedp.CallBrowser(ctx, browser.SetPermission, browser.SetPermissionParams{
		Permission: &browser.PermissionDescriptor{Name: "notifications"}, Setting: browser.PermissionSettingGranted, Origin: srv.BaseURL,
	}); err != nil {
		t.Fatalf("grant notifications: %v", err)
	}
	if _, err := chromedp.Call(ctx, page.AddScriptToEvaluateOnNewDocument, page.AddScriptToEvaluateOnNewDocumentParams{
		Source: strings.Replace(pushStandIn, "%s", string(sub), 1),
	}); err != nil {
		t.Fatalf("install the push stand-in: %v", err)
	}
	login(t, ctx, srv, "bob")

	do(t, ctx, "open this device's notifications from the header's Notifications page",
		chromedp.Click(css(`.nav a[href="/notifications"]`)),
		chromedp.Click(css(`[data-testid="this-device"]`)),
		chromedp.WaitVisible(css(`[data-testid="push-enable"]`)),
	)
	if st := get(t, ctx, "state before", chromedp.Evaluate[string](`document.getElementById("push-control").dataset.state`)); st != "off" {
		t.Fatalf("state before enabling: %q, want off", st)
	}
	do(t, ctx, "enable notifications",
		chromedp.Click(css(`[data-testid="push-enable"]`)),
		chromedp.WaitVisible(css(`[data-testid="push-disable"]`)),
	)
	if got := get(t, ctx, "read the state", chromedp.Text(css(`[data-testid="push-state"]`))); got != "Notifications are on for this device." {
		t.Fatalf("state after enabling: %q", got)
	}

	pool, err := pgxpool.New(testContext(t), srv.dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	if rows := pushRows(t, pool, "acme"); len(rows) != 1 || rows[0] != want {
		t.Fatalf("stored subscriptions %+v, want %+v", rows, want)
	}

	// The service worker is really registered and active, at the root.
	scope := get(t, ctx, "read the service worker", chromedp.Evaluate[string](
		`navigator.serviceWorker.ready.then(r => r.active && r.active.scriptURL.endsWith("/sw.js") ? r.scope : "")`, chromedp.EvalAwaitPromise))
	if scope != srv.BaseURL+"/" {
		t.Fatalf("service worker scope %q, want %s/", scope, srv.BaseURL)
	}
	// The page subscribed with the server's VAPID public key.
	var vapid string
	if err := pool.QueryRow(testContext(t), `SELECT public_key FROM push_vapid_keys`).Scan(&vapid); err != nil {
		t.Fatal(err)
	}
	var asked struct {
		UserVisibleOnly bool
		Key             string
	}
	raw := get(t, ctx, "read what the page asked for", chromedp.Evaluate[string](`sessionStorage.getItem("push-stand-in")`))
	if err := json.Unmarshal([]byte(raw), &asked); err != nil || !asked.UserVisibleOnly || asked.Key != vapid {
		t.Fatalf("the page subscribed with %s (%v), want userVisibleOnly and the server's key %s", raw, err, vapid)
	}

	// A push reaches the real service worker (CDP delivers it as the push
	// service would, unencrypted): it shows the notification with its tag
	// and link, a later push with the same tag replaces it, and a link to
	// another origin is not followed.
	reg := registrationID(t, ctx, srv.BaseURL+"/")
	cardURL := srv.BaseURL + "/approvals/00000000-0000-4000-8000-000000000009"
	deliver := func(payload string) func() {
		return func() {
			t.Helper()
			if _, err := chromedp.Call(ctx, serviceworker.DeliverPushMessage, serviceworker.DeliverPushMessageParams{
				Origin: srv.BaseURL, RegistrationID: reg, Data: payload,
			}); err != nil {
				t.Fatalf("deliver a push: %v", err)
			}
		}
	}
	deliverUntilShown(t, ctx, deliver(`{"title":"Approval needed: http.post","body":"high risk, 59 min left","tag":"approval-9","url":"`+cardURL+`","kind":"requested"}`),
		"Approval needed: http.post|high risk, 59 min left|approval-9|"+cardURL)
	deliverUntilShown(t, ctx, deliver(`{"title":"Approved by Alice","body":"http.post","tag":"approval-9","url":"https://evil.example/x","kind":"resolved"}`),
		"Approved by Alice|http.post|approval-9|"+srv.BaseURL+"/")

	do(t, ctx, "disable notifications",
		chromedp.Click(css(`[data-testid="push-disable"]`)),
		chromedp.WaitVisible(css(`[data-testid="push-enable"]`)),
	)
	if rows := pushRows(t, pool, "acme"); len(rows) != 0 {
		t.Fatalf("subscriptions after disabling: %+v", rows)
	}
}

// A notification's link is CONSOLE_BASE_URL/approvals/{id}; tapped on a
// device without a session it goes through sign-in and lands on the card.
func TestBrowserDeepLinkAfterSignIn(t *testing.T) {
	srv := startServer(t, serverOptions{})
	_, res := park(t, srv.Client("alice"))
	link := srv.BaseURL + "/approvals/" + res.ApprovalID

	ctx := newBrowser(t)
	do(t, ctx, "open the deep link signed out",
		chromedp.Navigate(link),
		chromedp.WaitVisible(css(`[data-testid="login-form"]`)),
	)
	loc := get(t, ctx, "read the sign-in URL", chromedp.Location())
	if u, err := url.Parse(loc); err != nil || u.Path != "/login" || u.Query().Get("next") != "/approvals/"+res.ApprovalID {
		t.Fatalf("signed-out deep link went to %s", loc)
	}
	do(t, ctx, "sign in",
		chromedp.SendKeys(css(`#login-id`), "bob"),
		chromedp.SendKeys(css(`#login-password`), srv.Password("bob")),
		chromedp.Click(css(`[data-testid="login-submit"]`)),
		chromedp.WaitVisible(css(`#card-`+res.ApprovalID+` [data-testid="approve"]`)),
	)
	if loc := get(t, ctx, "read the card URL", chromedp.Location()); loc != link {
		t.Fatalf("after sign-in at %s, want %s", loc, link)
	}
	// The card is the one to act on.
	if got := get(t, ctx, "read the summary", chromedp.Text(css(`#card-`+res.ApprovalID+` [data-testid="card-summary"]`))); got != parkingAction().Summary {
		t.Fatalf("card summary %q", got)
	}
}

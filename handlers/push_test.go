package handlers

import (
	"context"
	"crypto/ecdh"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"regexp"
	"strings"
	"testing"

	"gatehouse/service"
)

// testVAPIDPublic is the Web Push key the test console hands browsers; the
// console only passes it on, so any base64url text serves.
const testVAPIDPublic = "BPushTestKeyThePageRendersIntoDataVapidKeyForTheBrowserToSubscribe"

var csrfData = regexp.MustCompile(`data-csrf="([^"]+)"`)

// pushToken is the form token the notifications page gives its script.
func (b *bundle) pushToken(hc *http.Client) string {
	b.t.Helper()
	page := b.get(hc, "/settings/notifications")
	m := csrfData.FindStringSubmatch(page.Body)
	if page.Status != http.StatusOK || m == nil {
		b.t.Fatalf("notifications page (%d) has no data-csrf: %.300s", page.Status, page.Body)
	}
	return m[1]
}

// pushJSON is a browser subscription's toJSON() with fresh keys.
func pushJSON(t *testing.T, endpoint string) (body string, p256dh, auth string) {
	t.Helper()
	key, err := ecdh.P256().GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	secret := make([]byte, 16)
	if _, err := rand.Read(secret); err != nil {
		t.Fatal(err)
	}
	p256dh = base64.RawURLEncoding.EncodeToString(key.PublicKey().Bytes())
	auth = base64.RawURLEncoding.EncodeToString(secret)
	raw, err := json.Marshal(map[string]any{"endpoint": endpoint, "expirationTime": nil, "keys": map[string]string{"p256dh": p256dh, "auth": auth}})
	if err != nil {
		t.Fatal(err)
	}
	return string(raw), p256dh, auth
}

func (b *bundle) pushRows() []service.PushSubscriptionRow {
	b.t.Helper()
	rows, err := b.svc.PushSubscriptions(context.Background(), "t-"+b.suffix)
	if err != nil {
		b.t.Fatal(err)
	}
	return rows
}

// errorCode is the code of a JSON error body ("" when it is not one).
func errorCode(r reply) string {
	var body struct {
		Error struct{ Code, Message string } `json:"error"`
	}
	if json.Unmarshal([]byte(r.Body), &body) != nil || body.Error.Message == "" {
		return ""
	}
	return body.Error.Code
}

func TestPushSubscribeAndUnsubscribeThisBrowser(t *testing.T) {
	t.Parallel()
	b := setup(t)
	hc := b.signedIn("full")
	token := b.pushToken(hc)
	page := b.get(hc, "/settings/notifications")
	for _, want := range []string{`data-vapid-key="` + testVAPIDPublic + `"`, `data-testid="push-enable"`, `data-testid="push-needs-js"`, `src="/static/push.js"`} {
		if !strings.Contains(page.Body, want) {
			t.Errorf("the notifications page lacks %s", want)
		}
	}

	endpoint := "https://push.example.net/send/device-1"
	body, p256dh, auth := pushJSON(t, endpoint)
	r := b.do(hc, http.MethodPost, "/push/subscriptions", "application/json", strings.NewReader(body),
		"X-CSRF-Token", token, "User-Agent", "Phone\tBrowser <b>1</b>")
	if r.Status != http.StatusNoContent {
		t.Fatalf("subscribe: %d %s", r.Status, r.Body)
	}
	rows := b.pushRows()
	if len(rows) != 1 || rows[0].PrincipalID != b.id("full") || rows[0].Endpoint != endpoint || rows[0].P256dh != p256dh ||
		rows[0].Auth != auth || rows[0].UserAgent != "Phone Browser <b>1</b>" {
		t.Fatalf("stored %+v", rows)
	}
	// The device is listed, its label as text.
	page = b.get(hc, "/settings/notifications")
	if !strings.Contains(page.Body, `data-testid="push-device"`) || !strings.Contains(page.Body, "Phone Browser &lt;b&gt;1&lt;/b&gt;") {
		t.Fatalf("the device is not listed as text: %.2000s", page.Body)
	}

	r = b.do(hc, http.MethodDelete, "/push/subscriptions", "application/json", strings.NewReader(`{"endpoint":"`+endpoint+`"}`),
		"X-CSRF-Token", token)
	if r.Status != http.StatusNoContent || len(b.pushRows()) != 0 {
		t.Fatalf("unsubscribe: %d %s, rows %+v", r.Status, r.Body, b.pushRows())
	}
}

func TestPushSubscribeRefusesWithClearErrors(t *testing.T) {
	t.Parallel()
	b := setup(t)
	hc := b.signedIn("full")
	token := b.pushToken(hc)
	good, _, _ := pushJSON(t, "https://push.example.net/send/x")
	cases := []struct {
		name        string
		contentType string
		body        string
		header      []string
		status      int
		code        string
	}{
		{"no form token", "application/json", good, nil, http.StatusForbidden, "forbidden"},
		{"wrong form token", "application/json", good, []string{"X-CSRF-Token", "nope"}, http.StatusForbidden, "forbidden"},
		{"a form, not JSON", "application/x-www-form-urlencoded", "endpoint=x", []string{"X-CSRF-Token", token}, http.StatusUnsupportedMediaType, "unsupported_media_type"},
		{"cross-site", "application/json", good, []string{"X-CSRF-Token", token, "Sec-Fetch-Site", "cross-site"}, http.StatusForbidden, "forbidden"},
		{"unknown field", "application/json", `{"endpoint":"https://p.example/x","keys":{},"extra":1}`, []string{"X-CSRF-Token", token}, http.StatusBadRequest, "invalid_request"},
		{"not JSON", "application/json", `{"endpoint":`, []string{"X-CSRF-Token", token}, http.StatusBadRequest, "invalid_request"},
		{"bad keys", "application/json", `{"endpoint":"https://p.example/x","keys":{"p256dh":"AAAA","auth":"AAAA"}}`, []string{"X-CSRF-Token", token}, http.StatusBadRequest, "invalid_request"},
		{"plain http", "application/json", strings.Replace(good, "https://push.example.net", "http://push.example.net", 1), []string{"X-CSRF-Token", token}, http.StatusBadRequest, "invalid_request"},
		{"too large", "application/json", `{"endpoint":"` + strings.Repeat("a", 9000) + `"}`, []string{"X-CSRF-Token", token}, http.StatusRequestEntityTooLarge, "too_large"},
	}
	for _, tc := range cases {
		r := b.do(hc, http.MethodPost, "/push/subscriptions", tc.contentType, strings.NewReader(tc.body), tc.header...)
		if r.Status != tc.status || errorCode(r) != tc.code {
			t.Errorf("%s: %d %s, want %d %s", tc.name, r.Status, r.Body, tc.status, tc.code)
		}
	}
	if rows := b.pushRows(); len(rows) != 0 {
		t.Fatalf("refused subscriptions were stored: %+v", rows)
	}

	// The 400 says what is wrong.
	r := b.do(hc, http.MethodPost, "/push/subscriptions", "application/json", strings.NewReader(`{"endpoint":"https://p.example/x","keys":{"p256dh":"AAAA","auth":"AAAA"}}`), "X-CSRF-Token", token)
	if !strings.Contains(r.Body, "keys.p256dh") {
		t.Errorf("bad key answer does not name the key: %s", r.Body)
	}
}

// A notification is a call to act on a card: only approvers subscribe.
// Anyone signed in may switch a device off, and the signed-out get a JSON
// 401 their script can read.
func TestPushSubscribeNeedsApprovalResolve(t *testing.T) {
	t.Parallel()
	b := setup(t)
	reader := b.signedIn("reader")
	page := b.get(reader, "/settings/notifications")
	if page.Status != http.StatusOK || !strings.Contains(page.Body, `data-testid="push-not-approver"`) || strings.Contains(page.Body, `data-testid="push-enable"`) {
		t.Fatalf("reader's notifications page (%d): %.1500s", page.Status, page.Body)
	}
	token := b.formToken(page)
	body, _, _ := pushJSON(t, "https://push.example.net/send/reader")
	r := b.do(reader, http.MethodPost, "/push/subscriptions", "application/json", strings.NewReader(body), "X-CSRF-Token", token)
	if r.Status != http.StatusForbidden || errorCode(r) != "missing_scope" {
		t.Fatalf("reader subscribe: %d %s", r.Status, r.Body)
	}
	r = b.do(reader, http.MethodDelete, "/push/subscriptions", "application/json", strings.NewReader(`{"endpoint":"https://push.example.net/send/reader"}`), "X-CSRF-Token", token)
	if r.Status != http.StatusNoContent {
		t.Fatalf("reader unsubscribe: %d %s", r.Status, r.Body)
	}
	r = b.do(b.browser(), http.MethodPost, "/push/subscriptions", "application/json", strings.NewReader(body), "X-CSRF-Token", token)
	if r.Status != http.StatusUnauthorized || errorCode(r) != "unauthenticated" {
		t.Fatalf("signed out: %d %s", r.Status, r.Body)
	}
}

// The console is installable: the manifest and the root service worker
// answer with their content types, and every icon the manifest names is
// served.
func TestAppManifestAndServiceWorker(t *testing.T) {
	t.Parallel()
	b := setup(t)
	hc := b.browser()
	r := b.get(hc, "/manifest.webmanifest")
	if r.Status != http.StatusOK || r.Header.Get("Content-Type") != "application/manifest+json" {
		t.Fatalf("manifest: %d %q", r.Status, r.Header.Get("Content-Type"))
	}
	var m struct {
		Name, StartURL, Display string
		Icons                   []struct{ Src, Sizes, Type string }
	}
	if err := json.Unmarshal([]byte(strings.NewReplacer("start_url", "StartURL").Replace(r.Body)), &m); err != nil {
		t.Fatal(err)
	}
	if m.Name != "Gatehouse" || m.StartURL != "/" || m.Display != "standalone" {
		t.Fatalf("manifest %+v", m)
	}
	sizes := map[string]bool{}
	for _, ic := range m.Icons {
		got := b.get(hc, ic.Src)
		if got.Status != http.StatusOK || got.Header.Get("Content-Type") != ic.Type {
			t.Errorf("icon %s: %d %q, manifest says %q", ic.Src, got.Status, got.Header.Get("Content-Type"), ic.Type)
		}
		sizes[ic.Sizes] = true
	}
	if !sizes["192x192"] || !sizes["512x512"] {
		t.Errorf("manifest icon sizes %v, want 192x192 and 512x512", sizes)
	}

	sw := b.get(hc, "/sw.js")
	if sw.Status != http.StatusOK || !strings.HasPrefix(sw.Header.Get("Content-Type"), "text/javascript") ||
		sw.Header.Get("Cache-Control") != "no-cache" || !strings.Contains(sw.Body, `addEventListener("push"`) {
		t.Fatalf("sw.js: %d %q %q", sw.Status, sw.Header.Get("Content-Type"), sw.Header.Get("Cache-Control"))
	}
	if csp := sw.Header.Get("Content-Security-Policy"); !strings.Contains(csp, "worker-src 'self'") {
		t.Errorf("CSP %q lets no worker load", csp)
	}

	page := b.get(b.signedIn("full"), "/")
	if !strings.Contains(page.Body, `<link rel="manifest" href="/manifest.webmanifest">`) {
		t.Errorf("the layout does not link the manifest")
	}
}

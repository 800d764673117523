package e2e

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"gatehouse/engine"
	"gatehouse/notify"
)

// hookReceiver is an operator's webhook endpoint: it checks the Standard
// Webhooks signature of every request and keeps the verified payloads;
// while down it answers 503.
type hookReceiver struct {
	srv    *httptest.Server
	secret string
	mu     sync.Mutex
	down   bool
	got    []notify.WebhookPayload
	tries  int
}

func newHookReceiver(t *testing.T) *hookReceiver {
	t.Helper()
	h := &hookReceiver{secret: "whsec_" + base64.StdEncoding.EncodeToString([]byte(randomHex(t, 24)))}
	h.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		h.mu.Lock()
		defer h.mu.Unlock()
		h.tries++
		if h.down {
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		if err := notify.Verify([]string{h.secret}, r.Header, body, time.Now(), 5*time.Minute); err != nil {
			t.Errorf("webhook signature: %v", err)
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		var p notify.WebhookPayload
		if err := json.Unmarshal(body, &p); err != nil {
			t.Errorf("webhook payload: %v", err)
		}
		h.got = append(h.got, p)
	}))
	t.Cleanup(h.srv.Close)
	return h
}

func (h *hookReceiver) setDown(down bool) {
	h.mu.Lock()
	h.down = down
	h.mu.Unlock()
}

// await waits for a verified payload of the type about the approval.
func (h *hookReceiver) await(t *testing.T, typ, approvalID string) notify.WebhookPayload {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		h.mu.Lock()
		for _, p := range h.got {
			if p.Type == typ && p.Data.ApprovalID == approvalID {
				h.mu.Unlock()
				return p
			}
		}
		h.mu.Unlock()
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("no %s for %s reached the webhook", typ, approvalID)
	return notify.WebhookPayload{}
}

// notifyServer writes a CONSOLE_NOTIFY file routing every approval to the
// receiver and returns the environment that names it and its secret.
func notifyEnv(t *testing.T, h *hookReceiver) []string {
	t.Helper()
	file := filepath.Join(t.TempDir(), "notify.yaml")
	cfg := fmt.Sprintf(`delivery:
  backoff_base: 100ms
  backoff_max: 500ms
channels:
  - name: hook
    type: webhook
    url: %s
    secret_env: [E2E_HOOK_SECRET]
routes:
  - tenants: ["*"]
    channels: [hook]
`, h.srv.URL)
	if err := os.WriteFile(file, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	return []string{"CONSOLE_NOTIFY=" + file, "E2E_HOOK_SECRET=" + h.secret}
}

// An approval request reaches a signed webhook with the deep link to its
// card, its resolution follows, and the console shows the deliveries and
// counts them in /metrics.
func TestNotificationsReachASignedWebhook(t *testing.T) {
	t.Parallel()
	h := newHookReceiver(t)
	srv := startServer(t, serverOptions{Env: notifyEnv(t, h)})
	_, res := park(t, srv.Client("agent"))

	req := h.await(t, "approval.requested", res.ApprovalID)
	mustEqual(t, "deep link", req.Data.URL, srv.BaseURL+"/approvals/"+res.ApprovalID)
	mustEqual(t, "no argument values", len(req.Data.Arguments), 0)

	if _, err := srv.Client("bob").Resolve(testContext(t), res.ApprovalID, engine.ResolutionDeny, "not today"); err != nil {
		t.Fatal(err)
	}
	done := h.await(t, "approval.resolved", res.ApprovalID)
	mustEqual(t, "status", done.Data.Status, "denied")
	mustEqual(t, "resolver", done.Data.ResolvedBy, "bob")

	cookie := consoleLogin(t, srv, "bob")
	page := string(fetch(t, noRedirects(t), srv.BaseURL+"/notifications", cookie))
	if !strings.Contains(page, `data-status="delivered"`) || !strings.Contains(page, `data-channel="hook"`) {
		t.Fatalf("the notifications page shows no delivered hook delivery:\n%s", page)
	}
	// The test-send button: the form the page renders goes through the
	// outbox to the channel like any notification.
	token := csrfField.FindStringSubmatch(page)
	if token == nil {
		t.Fatal("the notifications page has no test-send form")
	}
	if st := consolePost(t, srv, cookie, "/notifications/test", url.Values{"_csrf": {token[1]}, "channel": {"hook"}}); st != http.StatusSeeOther {
		t.Fatalf("test-send: %d", st)
	}
	h.await(t, "approval.test", "")
	metrics := string(fetch(t, noRedirects(t), srv.BaseURL+"/metrics", nil))
	if !strings.Contains(metrics, `gatehouse_notification_deliveries_total{channel="hook",outcome="delivered"}`) {
		t.Fatal("/metrics has no delivered count for the hook")
	}
}

// A notification written while its receiver is down survives a crash of
// the server: the restarted process delivers it once the receiver is back.
func TestNotificationSurvivesAServerCrash(t *testing.T) {
	t.Parallel()
	h := newHookReceiver(t)
	h.setDown(true)
	srv := newServer(t, "")
	opts := serverOptions{Env: notifyEnv(t, h)}
	p := srv.spawn(t, opts)
	srv.waitReady(t, p)
	_, res := park(t, srv.Client("agent"))
	deadline := time.Now().Add(30 * time.Second)
	for {
		h.mu.Lock()
		tried := h.tries > 0
		h.mu.Unlock()
		if tried || time.Now().After(deadline) {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	p.kill()
	h.setDown(false)
	srv.waitReady(t, srv.spawn(t, opts))
	h.await(t, "approval.requested", res.ApprovalID)
}

func mustEqual[T comparable](t *testing.T, what string, got, want T) {
	t.Helper()
	if got != want {
		t.Fatalf("%s = %v, want %v", what, got, want)
	}
}

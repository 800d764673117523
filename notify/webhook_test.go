package notify

import (
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// receiver is a webhook endpoint that records what it got and answers code.
type receiver struct {
	code   int
	got    chan received
	server *httptest.Server
}

type received struct {
	header http.Header
	body   []byte
}

func newReceiver(t *testing.T, code int) *receiver {
	t.Helper()
	rc := &receiver{code: code, got: make(chan received, 8)}
	rc.server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		rc.got <- received{header: r.Header.Clone(), body: body}
		w.WriteHeader(rc.code)
	}))
	t.Cleanup(rc.server.Close)
	return rc
}

func webhookYAML(url string, extra string) string {
	return `
delivery: {timeout: 2s}
channels:
  - name: hook
    type: webhook
    url: ` + url + `
    secret_env: [GATEHOUSE_WEBHOOK_SECRET, GATEHOUSE_WEBHOOK_SECRET_PREVIOUS]
` + extra
}

func TestWebhookIsSignedWithEveryRotatedSecretAndVerifies(t *testing.T) {
	t.Parallel()
	rc := newReceiver(t, http.StatusNoContent)
	ch := channel(t, webhookYAML(rc.server.URL+"/hook", ""), BuildOptions{})
	d := requested()
	d.Arguments = map[string]any{"to": "finance@example.com"} // filled by mistake: not opted in
	res, err := deliver(t, ch, d)
	if err != nil || res.Status != http.StatusNoContent {
		t.Fatalf("deliver: %v, status %d", err, res.Status)
	}
	got := <-rc.got
	if h := got.header; h.Get("webhook-id") != "ntf_0001" || h.Get("webhook-timestamp") != "1777888800" || h.Get("Content-Type") != "application/json" {
		t.Errorf("headers: %v", h)
	}
	if n := len(strings.Fields(got.header.Get("webhook-signature"))); n != 2 {
		t.Errorf("want one signature per secret, got %d", n)
	}
	for _, secrets := range [][]string{{testSecret}, {testSecretOld}, {"whsec_" + strings.Repeat("QUFB", 8), testSecret}} {
		if err := Verify(secrets, got.header, got.body, sentAt.Add(time.Minute), 5*time.Minute); err != nil {
			t.Errorf("verify with %d secrets: %v", len(secrets), err)
		}
	}
	var p WebhookPayload
	if err := json.Unmarshal(got.body, &p); err != nil {
		t.Fatal(err)
	}
	if p.Type != "approval.requested" || p.Data.NotificationID != "ntf_0001" || p.Data.ApprovalID != d.ApprovalID ||
		p.Data.URL != d.URL || p.Data.SecondsLeft != 3600 || p.Data.Risk != "high" || p.Data.Tool != "email.send" || !p.Timestamp.Equal(sentAt) {
		t.Errorf("payload: %+v", p)
	}
	mustNotContain(t, "payload", string(got.body), "arguments", "finance@example.com\"}")
}

func TestWebhookCarriesArgumentsOnlyWhenOptedIn(t *testing.T) {
	t.Parallel()
	rc := newReceiver(t, http.StatusOK)
	ch := channel(t, webhookYAML(rc.server.URL, "    include_arguments: true\n"), BuildOptions{})
	if !ch.IncludeArguments() {
		t.Fatal("include_arguments not set")
	}
	d := requested()
	d.Arguments = map[string]any{"to": "[redacted]"}
	if _, err := deliver(t, ch, d); err != nil {
		t.Fatal(err)
	}
	mustContain(t, "payload", string((<-rc.got).body), `"arguments":{"to":"[redacted]"}`)
}

func TestVerifyRefusesATamperedBodyAnOldTimestampAndAnUnknownSecret(t *testing.T) {
	t.Parallel()
	rc := newReceiver(t, http.StatusOK)
	ch := channel(t, webhookYAML(rc.server.URL, ""), BuildOptions{})
	if _, err := deliver(t, ch, requested()); err != nil {
		t.Fatal(err)
	}
	got := <-rc.got
	other := "whsec_" + strings.Repeat("QkJC", 8)
	cases := map[string]func() error{
		"tampered body": func() error {
			return Verify([]string{testSecret}, got.header, append([]byte(nil), strings.Replace(string(got.body), "high", "low!", 1)...), sentAt, time.Minute)
		},
		"old timestamp": func() error {
			return Verify([]string{testSecret}, got.header, got.body, sentAt.Add(6*time.Minute), 5*time.Minute)
		},
		"future timestamp": func() error {
			return Verify([]string{testSecret}, got.header, got.body, sentAt.Add(-6*time.Minute), 5*time.Minute)
		},
		"unknown secret": func() error { return Verify([]string{other}, got.header, got.body, sentAt, time.Minute) },
		"no signature": func() error {
			h := got.header.Clone()
			h.Del("webhook-signature")
			return Verify([]string{testSecret}, h, got.body, sentAt, time.Minute)
		},
		"other id": func() error {
			h := got.header.Clone()
			h.Set("webhook-id", "ntf_other")
			return Verify([]string{testSecret}, h, got.body, sentAt, time.Minute)
		},
		"malformed secret": func() error { return Verify([]string{"not-a-secret"}, got.header, got.body, sentAt, time.Minute) },
	}
	for name, verify := range cases {
		if err := verify(); !errors.Is(err, ErrUnverified) {
			t.Errorf("%s: want ErrUnverified, got %v", name, err)
		}
	}
}

func TestWebhookRetriesServerErrorsAndGivesUpOnClientErrors(t *testing.T) {
	t.Parallel()
	for code, permanent := range map[int]bool{
		http.StatusInternalServerError: false, http.StatusBadGateway: false, http.StatusTooManyRequests: false,
		http.StatusRequestTimeout: false, http.StatusBadRequest: true, http.StatusUnauthorized: true,
		http.StatusNotFound: true, http.StatusFound: true,
	} {
		rc := newReceiver(t, code)
		ch := channel(t, webhookYAML(rc.server.URL+"/secret-path", ""), BuildOptions{})
		res, err := deliver(t, ch, requested())
		if err == nil || IsPermanent(err) != permanent || res.Status != code {
			t.Errorf("HTTP %d: err %v (permanent %v), status %d; want permanent %v", code, err, IsPermanent(err), res.Status, permanent)
		}
		if err != nil && strings.Contains(err.Error(), "secret-path") {
			t.Errorf("HTTP %d: the error names the URL: %v", code, err)
		}
	}
}

func TestWebhookThatAnswersTooLateIsRetried(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select { // hold the answer until the client has given up
		case <-r.Context().Done():
		case <-release:
		}
	}))
	t.Cleanup(srv.Close)
	t.Cleanup(func() { close(release) })
	ch := channel(t, strings.Replace(webhookYAML(srv.URL+"/slow", ""), "timeout: 2s", "timeout: 50ms", 1), BuildOptions{})
	res, err := deliver(t, ch, requested())
	if err == nil || IsPermanent(err) || res.Status != 0 {
		t.Fatalf("want a retryable timeout, got %v (status %d)", err, res.Status)
	}
	mustNotContain(t, "error", err.Error(), srv.URL, "/slow")
}

func TestWebhookToAClosedPortIsRetried(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.NotFoundHandler())
	url := srv.URL
	srv.Close()
	ch := channel(t, webhookYAML(url, ""), BuildOptions{})
	if _, err := deliver(t, ch, requested()); err == nil || IsPermanent(err) {
		t.Fatalf("want a retryable connection error, got %v", err)
	}
}

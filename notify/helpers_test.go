package notify

import (
	"context"
	"strings"
	"testing"
	"time"
)

// Secrets in the whsec_ form (32 bytes each), as the tests' environment.
const (
	testSecret    = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSwZZ4lq/f3nzs="
	testSecretOld = "whsec_c2VjcmV0LWtleS10aGF0LWlzLTMyLWJ5dGVzLWxvbmchIQ=="
)

var sentAt = time.Date(2026, 5, 4, 10, 0, 0, 0, time.UTC)

// testEnv is the process environment the tests load configurations with.
func testEnv(name string) string {
	return map[string]string{
		"GATEHOUSE_WEBHOOK_SECRET":          testSecret,
		"GATEHOUSE_WEBHOOK_SECRET_PREVIOUS": testSecretOld,
		"SLACK_BOT_TOKEN":                   "xoxb-test-token",
		"NTFY_TOKEN":                        "tk_testtoken",
	}[name]
}

// channel loads a one-channel configuration (plus its delivery section) and
// builds it.
func channel(t testing.TB, yamlText string, opts BuildOptions) Channel {
	t.Helper()
	cfg, err := ParseConfig("test.yaml", []byte(yamlText), testEnv)
	if err != nil {
		t.Fatalf("config: %v", err)
	}
	chs, err := cfg.Build(opts)
	if err != nil {
		t.Fatalf("build: %v", err)
	}
	names := cfg.ChannelNames()
	if len(names) != 1 {
		t.Fatalf("want one channel, got %v", names)
	}
	return chs[names[0]]
}

// requested is a pending high-risk approval with an hour left.
func requested() Delivery {
	return Delivery{Message: Message{
		ID:         "ntf_0001",
		Kind:       KindRequested,
		TenantID:   "acme",
		ApprovalID: "6f1c2a4e-0000-4000-8000-000000000001",
		RunID:      "run-1",
		Tool:       "email.send",
		Summary:    "Send the Q3 report to finance@example.com",
		SideEffect: "external_message",
		Risk:       "high",
		Status:     "pending",
		CreatedAt:  sentAt.Add(-3 * time.Hour),
		ExpiresAt:  sentAt.Add(time.Hour),
		SentAt:     sentAt,
		URL:        "https://gatehouse.example.com/approvals/6f1c2a4e-0000-4000-8000-000000000001",
	}}
}

// resolved is the same approval, approved by bob.
func resolved(prior string) Delivery {
	d := requested()
	d.ID, d.Kind, d.Status, d.ResolvedBy, d.Reason, d.PriorRef = "ntf_0002", KindResolved, "approved", "bob", "checked the recipient", prior
	return d
}

func deliver(t *testing.T, ch Channel, d Delivery) (Result, error) {
	t.Helper()
	return ch.Deliver(context.Background(), d)
}

func mustContain(t *testing.T, what, s string, subs ...string) {
	t.Helper()
	for _, sub := range subs {
		if !strings.Contains(s, sub) {
			t.Errorf("%s does not contain %q:\n%s", what, sub, s)
		}
	}
}

func mustNotContain(t *testing.T, what, s string, subs ...string) {
	t.Helper()
	for _, sub := range subs {
		if strings.Contains(s, sub) {
			t.Errorf("%s contains %q:\n%s", what, sub, s)
		}
	}
}

package notify_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"time"

	"gatehouse/notify"
)

// A receiver checks the signature before it trusts a byte of the body,
// then deduplicates on the notification id: a delivery may be repeated.
func ExampleVerify() {
	secrets := []string{"whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSwZZ4lq/f3nzs="} // old and new during a rotation
	seen := map[string]bool{}
	receiver := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, 1<<20))
		if err != nil {
			http.Error(w, "too large", http.StatusRequestEntityTooLarge)
			return
		}
		if err := notify.Verify(secrets, r.Header, body, time.Now(), 5*time.Minute); err != nil {
			http.Error(w, "bad signature", http.StatusUnauthorized) // 4xx: Gatehouse does not retry
			return
		}
		var p notify.WebhookPayload
		if err := json.Unmarshal(body, &p); err != nil {
			http.Error(w, "bad payload", http.StatusBadRequest)
			return
		}
		if !seen[p.Data.NotificationID] {
			seen[p.Data.NotificationID] = true
			fmt.Println(p.Type, p.Data.Tool, p.Data.Risk, p.Data.URL)
		}
		w.WriteHeader(http.StatusNoContent)
	}))
	defer receiver.Close()

	// The sending side, as the outbox worker drives it.
	env := map[string]string{"HOOK_SECRET": secrets[0]}
	cfg, err := notify.ParseConfig("notify.yaml", []byte(`
channels:
  - {name: hook, type: webhook, url: "`+receiver.URL+`", secret_env: HOOK_SECRET}
`), func(k string) string { return env[k] })
	if err != nil {
		panic(err)
	}
	channels, err := cfg.Build(notify.BuildOptions{})
	if err != nil {
		panic(err)
	}
	now := time.Now()
	msg := notify.Message{
		ID: "ntf_01", Kind: notify.KindRequested, ApprovalID: "a1", Tool: "email.send", Risk: "high", Status: "pending",
		CreatedAt: now, ExpiresAt: now.Add(4 * time.Hour), SentAt: now, URL: "https://gatehouse.example.com/approvals/a1",
	}
	for range 2 { // a repeated delivery is recognised by its id
		if _, err := channels["hook"].Deliver(context.Background(), notify.Delivery{Message: msg}); err != nil {
			panic(err)
		}
	}
	// Output: approval.requested email.send high https://gatehouse.example.com/approvals/a1
}

package notify

import (
	"net/http"
	"net/http/httptest"
	"testing"
)

// BenchmarkWebhookDeliver is one signed delivery to a local receiver: the
// worker's cost per webhook attempt, network aside.
func BenchmarkWebhookDeliver(b *testing.B) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusNoContent) }))
	b.Cleanup(srv.Close)
	ch := channel(b, webhookYAML(srv.URL, ""), BuildOptions{})
	d := requested()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := ch.Deliver(b.Context(), d); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkWebPushDeliver is one encrypted, VAPID-signed push to one
// subscription (ECDH, HKDF, AES-GCM, an ES256 JWT): it scales with the
// number of approvers' browsers.
func BenchmarkWebPushDeliver(b *testing.B) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusCreated) }))
	b.Cleanup(srv.Close)
	ch, _ := webPushChannel(b)
	d := requested()
	d.Subscriptions = []PushSubscription{newBrowser(b).subscription("s", srv.URL+"/push/s")}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := ch.Deliver(b.Context(), d); err != nil {
			b.Fatal(err)
		}
	}
}

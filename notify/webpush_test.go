package notify

import (
	"bytes"
	"crypto/aes"
	"crypto/cipher"
	"crypto/ecdh"
	"crypto/hkdf"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
)

// browser is what a browser keeps for one push subscription: the ECDH key
// pair and the auth secret it gave the server in the subscription.
type browser struct {
	priv *ecdh.PrivateKey
	auth []byte
}

func newBrowser(t testing.TB) browser {
	t.Helper()
	priv, err := ecdh.P256().GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	auth := make([]byte, 16)
	_, _ = rand.Read(auth)
	return browser{priv: priv, auth: auth}
}

func (b browser) subscription(id, endpoint string) PushSubscription {
	return PushSubscription{
		ID: id, Endpoint: endpoint,
		P256dh: base64.RawURLEncoding.EncodeToString(b.priv.PublicKey().Bytes()),
		Auth:   base64.RawURLEncoding.EncodeToString(b.auth),
	}
}

// decrypt undoes RFC 8291 (aes128gcm, RFC 8188) with the subscription's
// private key, as the browser does.
func (b browser) decrypt(body []byte) ([]byte, error) {
	if len(body) < 21 {
		return nil, errors.New("short body")
	}
	salt, rs, idLen := body[:16], binary.BigEndian.Uint32(body[16:20]), int(body[20])
	if len(body) < 21+idLen || int(rs) < len(body)-21-idLen {
		return nil, errors.New("bad header")
	}
	senderPub, ciphertext := body[21:21+idLen], body[21+idLen:]
	sender, err := ecdh.P256().NewPublicKey(senderPub)
	if err != nil {
		return nil, err
	}
	shared, err := b.priv.ECDH(sender)
	if err != nil {
		return nil, err
	}
	info := append(append([]byte("WebPush: info\x00"), b.priv.PublicKey().Bytes()...), senderPub...)
	ikm, err := hkdf.Key(sha256.New, shared, b.auth, string(info), 32)
	if err != nil {
		return nil, err
	}
	cek, err := hkdf.Key(sha256.New, ikm, salt, "Content-Encoding: aes128gcm\x00", 16)
	if err != nil {
		return nil, err
	}
	nonce, err := hkdf.Key(sha256.New, ikm, salt, "Content-Encoding: nonce\x00", 12)
	if err != nil {
		return nil, err
	}
	block, err := aes.NewCipher(cek)
	if err != nil {
		return nil, err
	}
	gcm, err := cipher.NewGCM(block)
	if err != nil {
		return nil, err
	}
	plain, err := gcm.Open(nil, nonce, ciphertext, nil)
	if err != nil {
		return nil, err
	}
	plain = bytes.TrimRight(plain, "\x00") // padding, then the last record's delimiter
	if len(plain) == 0 || plain[len(plain)-1] != 2 {
		return nil, errors.New("no last-record delimiter")
	}
	return plain[:len(plain)-1], nil
}

// pushService is a push-service endpoint: /push/{id} for each browser it
// knows, 410 for /gone, and the requests it accepted.
type pushService struct {
	mu       sync.Mutex
	browsers map[string]browser
	got      map[string][]pushed
	server   *httptest.Server
}

type pushed struct {
	header  http.Header
	payload PushPayload
}

func newPushService(t *testing.T) *pushService {
	t.Helper()
	p := &pushService{browsers: map[string]browser{}, got: map[string][]pushed{}}
	p.server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p.mu.Lock()
		defer p.mu.Unlock()
		id := strings.TrimPrefix(r.URL.Path, "/push/")
		b, ok := p.browsers[id]
		if !ok {
			w.WriteHeader(http.StatusGone)
			return
		}
		if !strings.HasPrefix(r.Header.Get("Authorization"), "vapid t=") || r.Header.Get("Content-Encoding") != "aes128gcm" {
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		body, _ := io.ReadAll(r.Body)
		plain, err := b.decrypt(body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		var pl PushPayload
		if err := json.Unmarshal(plain, &pl); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		p.got[id] = append(p.got[id], pushed{header: r.Header.Clone(), payload: pl})
		w.WriteHeader(http.StatusCreated)
	}))
	t.Cleanup(p.server.Close)
	return p
}

func (p *pushService) subscribe(t *testing.T, id string) PushSubscription {
	b := newBrowser(t)
	p.mu.Lock()
	defer p.mu.Unlock()
	p.browsers[id] = b
	return b.subscription(id, p.server.URL+"/push/"+id)
}

func webPushChannel(t testing.TB) (Channel, VAPIDKeys) {
	t.Helper()
	keys, err := GenerateVAPIDKeys()
	if err != nil {
		t.Fatal(err)
	}
	return channel(t, "channels:\n  - {name: console-push, type: webpush}\n", BuildOptions{VAPID: keys, Subscriber: "mailto:ops@example.com"}), keys
}

func TestWebPushEncryptsForEachSubscriptionAndReportsGoneOnes(t *testing.T) {
	t.Parallel()
	ps := newPushService(t)
	ch, keys := webPushChannel(t)
	d := requested()
	forgotten := newBrowser(t).subscription("old-phone", ps.server.URL+"/gone") // the push service answers 410
	d.Subscriptions = []PushSubscription{ps.subscribe(t, "alice-phone"), ps.subscribe(t, "bob-laptop"), forgotten}
	res, err := deliver(t, ch, d)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Gone) != 1 || res.Gone[0] != "old-phone" {
		t.Errorf("gone: %v", res.Gone)
	}
	for _, id := range []string{"alice-phone", "bob-laptop"} {
		got := ps.got[id]
		if len(got) != 1 {
			t.Fatalf("%s got %d pushes", id, len(got))
		}
		pl, h := got[0].payload, got[0].header
		if pl.Tag != "approval-"+d.ApprovalID || pl.URL != d.URL || pl.Title != "Approval needed: email.send" || pl.Kind != KindRequested || pl.Risk != "high" {
			t.Errorf("%s payload: %+v", id, pl)
		}
		mustContain(t, "body", pl.Body, "Send the Q3 report", "Expires in 1h")
		mustContain(t, "authorization", h.Get("Authorization"), ", k="+keys.Public)
		if h.Get("TTL") != "3600" || h.Get("Urgency") != "high" || len(h.Get("Topic")) != 32 {
			t.Errorf("%s headers: TTL %q Urgency %q Topic %q", id, h.Get("TTL"), h.Get("Urgency"), h.Get("Topic"))
		}
		claims := vapidClaims(t, h.Get("Authorization"))
		if claims["sub"] != "mailto:ops@example.com" || claims["aud"] != ps.server.URL {
			t.Errorf("%s VAPID claims: %v", id, claims)
		}
	}
}

// vapidClaims reads the JWT claims of a "vapid t=<jwt>, k=<key>" header.
func vapidClaims(t *testing.T, auth string) map[string]any {
	t.Helper()
	jwt, _, _ := strings.Cut(strings.TrimPrefix(auth, "vapid t="), ",")
	parts := strings.Split(jwt, ".")
	if len(parts) != 3 {
		t.Fatalf("not a JWT: %q", jwt)
	}
	raw, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		t.Fatal(err)
	}
	var claims map[string]any
	if err := json.Unmarshal(raw, &claims); err != nil {
		t.Fatal(err)
	}
	return claims
}

func TestWebPushOutcomeReplacesTheRequestNotification(t *testing.T) {
	t.Parallel()
	ps := newPushService(t)
	ch, _ := webPushChannel(t)
	sub := ps.subscribe(t, "alice-phone")
	for _, d := range []Delivery{requested(), resolved("")} {
		d.Subscriptions = []PushSubscription{sub}
		if _, err := deliver(t, ch, d); err != nil {
			t.Fatal(err)
		}
	}
	got := ps.got["alice-phone"]
	if len(got) != 2 || got[0].payload.Tag != got[1].payload.Tag || got[0].header.Get("Topic") != got[1].header.Get("Topic") {
		t.Fatalf("want two pushes with one tag and topic, got %+v", got)
	}
	if got[1].payload.Title != "Approved by bob: email.send" || got[1].header.Get("Urgency") != "low" {
		t.Errorf("outcome: %+v, urgency %q", got[1].payload, got[1].header.Get("Urgency"))
	}
}

func TestWebPushWithoutSubscriptionsIsDelivered(t *testing.T) {
	t.Parallel()
	ch, _ := webPushChannel(t)
	if res, err := deliver(t, ch, requested()); err != nil || res.Status != 0 || res.Gone != nil {
		t.Fatalf("%+v, %v", res, err)
	}
}

func TestWebPushServerErrorIsRetriedAndBadKeysAreNot(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusServiceUnavailable)
	}))
	t.Cleanup(srv.Close)
	ch, _ := webPushChannel(t)
	d := requested()
	d.Subscriptions = []PushSubscription{newBrowser(t).subscription("s1", srv.URL+"/push/s1")}
	res, err := deliver(t, ch, d)
	if err == nil || IsPermanent(err) || res.Status != http.StatusServiceUnavailable {
		t.Fatalf("503: want a retryable error, got %v (%+v)", err, res)
	}
	d.Subscriptions = []PushSubscription{{ID: "s2", Endpoint: srv.URL + "/push/s2", P256dh: "bm90IGEga2V5", Auth: "AAAA"}}
	if _, err := deliver(t, ch, d); !IsPermanent(err) {
		t.Fatalf("bad keys: want a permanent error, got %v", err)
	}
}

func TestWebPushNeedsVAPIDKeysAndASubscriber(t *testing.T) {
	t.Parallel()
	cfg, err := ParseConfig("t.yaml", []byte("channels:\n  - {name: push, type: webpush}\n"), testEnv)
	if err != nil {
		t.Fatal(err)
	}
	if !cfg.UsesWebPush() {
		t.Error("UsesWebPush is false")
	}
	keys, _ := GenerateVAPIDKeys()
	for _, opts := range []BuildOptions{{Subscriber: "mailto:ops@example.com"}, {VAPID: keys}, {VAPID: keys, Subscriber: "ops@example.com"}, {VAPID: keys, Subscriber: "http://example.com"}} {
		if _, err := cfg.Build(opts); err == nil {
			t.Errorf("built with %+v", opts)
		}
	}
	if _, err := cfg.Build(BuildOptions{VAPID: keys, Subscriber: "https://gatehouse.example.com"}); err != nil {
		t.Error(err)
	}
}

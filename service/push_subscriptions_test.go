package service

import (
	"crypto/ecdh"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"gatehouse/internal/testdb"
)

// pushInput is a browser subscription with fresh keys, as a page posts it.
func pushInput(t testing.TB, endpoint string) PushSubscriptionInput {
	t.Helper()
	key, err := ecdh.P256().GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return PushSubscriptionInput{
		Endpoint:  endpoint,
		P256dh:    base64.RawURLEncoding.EncodeToString(key.PublicKey().Bytes()),
		Auth:      base64.RawURLEncoding.EncodeToString(randomBytes16(t)),
		UserAgent: "Mozilla/5.0 (Android 15; Mobile)",
	}
}

func randomBytes16(t testing.TB) []byte {
	t.Helper()
	b := make([]byte, 16)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return b
}

func (b *bundle) subscribe(principalID string, in PushSubscriptionInput) {
	b.t.Helper()
	if err := b.svc.SubscribePush(b.ctx, b.tenant, principalID, in); err != nil {
		b.t.Fatalf("subscribe %s: %v", principalID, err)
	}
}

func (b *bundle) pushRows(tenantID string) []PushSubscriptionRow {
	b.t.Helper()
	rows, err := b.svc.PushSubscriptions(b.ctx, tenantID)
	if err != nil {
		b.t.Fatalf("list: %v", err)
	}
	return rows
}

func TestSubscribePushStoresTheSubscriptionAndReplacesItByEndpoint(t *testing.T) {
	t.Parallel()
	b := setup(t)
	in := pushInput(t, "https://push.example.net/send/abc")
	b.subscribe(b.human.ID, in)

	rows := b.pushRows(b.tenant)
	if len(rows) != 1 {
		t.Fatalf("rows = %d, want 1", len(rows))
	}
	r := rows[0]
	if r.TenantID != b.tenant || r.PrincipalID != b.human.ID || r.Endpoint != in.Endpoint || r.P256dh != in.P256dh ||
		r.Auth != in.Auth || r.UserAgent != in.UserAgent || !r.CreatedAt.Equal(b.clock.Now()) || r.LastSuccessAt != nil {
		t.Fatalf("stored %+v from %+v", r, in)
	}

	// The browser subscribes again (new keys): the row is replaced, not doubled.
	again := pushInput(t, in.Endpoint)
	b.subscribe(b.human.ID, again)
	rows = b.pushRows(b.tenant)
	if len(rows) != 1 || rows[0].ID != r.ID || rows[0].P256dh != again.P256dh || rows[0].Auth != again.Auth {
		t.Fatalf("after re-subscribe: %+v", rows)
	}

	// Another approver signs in to the same browser: it notifies them now.
	b.subscribe(b.owner.ID, again)
	rows = b.pushRows(b.tenant)
	if len(rows) != 1 || rows[0].PrincipalID != b.owner.ID {
		t.Fatalf("after another principal subscribed the browser: %+v", rows)
	}
}

func TestSubscribePushAcceptsPaddedKeysAndStoresThemUnpadded(t *testing.T) {
	t.Parallel()
	b := setup(t)
	in := pushInput(t, "http://127.0.0.1:9/push/loopback")
	want := in
	in.P256dh += "="
	in.Auth += "=="
	in.UserAgent = "  Agent\x01\t with \n  spaces " + strings.Repeat("é", 200)
	b.subscribe(b.human.ID, in)
	r := b.pushRows(b.tenant)[0]
	if r.P256dh != want.P256dh || r.Auth != want.Auth {
		t.Fatalf("keys stored as %q %q, want %q %q", r.P256dh, r.Auth, want.P256dh, want.Auth)
	}
	if !strings.HasPrefix(r.UserAgent, "Agent with spaces éé") || len(r.UserAgent) > maxPushUserAgent || !utf8Valid(r.UserAgent) {
		t.Fatalf("user agent stored as %q (%d bytes)", r.UserAgent, len(r.UserAgent))
	}
}

func utf8Valid(s string) bool { return strings.ToValidUTF8(s, "\uFFFD") == s }

func TestSubscribePushRefusesWhatCannotBePushedTo(t *testing.T) {
	t.Parallel()
	b := setup(t)
	good := pushInput(t, "https://push.example.net/send/x")
	offCurve := make([]byte, 65)
	offCurve[0] = 4
	cases := map[string]func(*PushSubscriptionInput){
		"no endpoint":       func(in *PushSubscriptionInput) { in.Endpoint = "" },
		"relative endpoint": func(in *PushSubscriptionInput) { in.Endpoint = "/send/x" },
		"http to a remote":  func(in *PushSubscriptionInput) { in.Endpoint = "http://push.example.net/send/x" },
		"other scheme":      func(in *PushSubscriptionInput) { in.Endpoint = "javascript:alert(1)" },
		"user info":         func(in *PushSubscriptionInput) { in.Endpoint = "https://u:p@push.example.net/x" },
		"endpoint too long": func(in *PushSubscriptionInput) {
			in.Endpoint = "https://push.example.net/" + strings.Repeat("a", MaxPushEndpoint)
		},
		"no p256dh":            func(in *PushSubscriptionInput) { in.P256dh = "" },
		"p256dh not base64url": func(in *PushSubscriptionInput) { in.P256dh = "not base64!" },
		"p256dh compressed":    func(in *PushSubscriptionInput) { in.P256dh = in.P256dh[:44] },
		"p256dh off the curve": func(in *PushSubscriptionInput) { in.P256dh = base64.RawURLEncoding.EncodeToString(offCurve) },
		"no auth":              func(in *PushSubscriptionInput) { in.Auth = "" },
		"auth too short":       func(in *PushSubscriptionInput) { in.Auth = base64.RawURLEncoding.EncodeToString([]byte("short")) },
		"auth in std base64":   func(in *PushSubscriptionInput) { in.Auth = "+/+/+/+/+/+/+/+/+/+/+w" },
	}
	for name, mutate := range cases {
		in := good
		mutate(&in)
		err := b.svc.SubscribePush(b.ctx, b.tenant, b.human.ID, in)
		var ie *InvalidError
		if !errors.As(err, &ie) || !errors.Is(err, ErrInvalid) {
			t.Errorf("%s: err = %v, want an InvalidError", name, err)
		}
	}
	if rows := b.pushRows(b.tenant); len(rows) != 0 {
		t.Fatalf("refused subscriptions were stored: %+v", rows)
	}
}

func TestPushSubscriptionsStayInTheirTenant(t *testing.T) {
	t.Parallel()
	a := setup(t)
	other := setup(t, func(o *setupOpts) { o.pool = a.pool })
	endpoint := "https://push.example.net/send/shared"
	a.subscribe(a.human.ID, pushInput(t, endpoint))
	// The same principal id and endpoint in another tenant is another row.
	other.subscribe(a.human.ID, pushInput(t, endpoint))

	rowsA, rowsB := a.pushRows(a.tenant), a.pushRows(other.tenant)
	if len(rowsA) != 1 || len(rowsB) != 1 || rowsA[0].ID == rowsB[0].ID || rowsA[0].TenantID != a.tenant || rowsB[0].TenantID != other.tenant {
		t.Fatalf("tenant A %+v, tenant B %+v", rowsA, rowsB)
	}

	// Tenant B can neither unsubscribe nor delete tenant A's row.
	if err := other.svc.UnsubscribePush(a.ctx, other.tenant, a.human.ID, endpoint); err != nil {
		t.Fatal(err)
	}
	if err := other.svc.DeletePushSubscriptions(a.ctx, other.tenant, []string{rowsA[0].ID}); err != nil {
		t.Fatal(err)
	}
	if err := other.svc.MarkPushSubscriptionsSucceeded(a.ctx, other.tenant, []string{rowsA[0].ID}); err != nil {
		t.Fatal(err)
	}
	if got := a.pushRows(a.tenant); len(got) != 1 || got[0].LastSuccessAt != nil {
		t.Fatalf("tenant B's calls reached tenant A's row: %+v", got)
	}
	if got := a.pushRows(other.tenant); len(got) != 0 {
		t.Fatalf("tenant B's own row was not unsubscribed: %+v", got)
	}
}

func TestUnsubscribePushRemovesOnlyThePrincipalsOwnEndpoint(t *testing.T) {
	t.Parallel()
	b := setup(t)
	mine, theirs := pushInput(t, "https://push.example.net/mine"), pushInput(t, "https://push.example.net/theirs")
	b.subscribe(b.human.ID, mine)
	b.subscribe(b.owner.ID, theirs)

	// Another principal's endpoint: nothing happens, no error.
	if err := b.svc.UnsubscribePush(b.ctx, b.tenant, b.human.ID, theirs.Endpoint); err != nil {
		t.Fatal(err)
	}
	if rows := b.pushRows(b.tenant); len(rows) != 2 {
		t.Fatalf("rows = %+v, want both", rows)
	}
	// Its own, twice: removed, and the repeat is no error.
	for range 2 {
		if err := b.svc.UnsubscribePush(b.ctx, b.tenant, b.human.ID, mine.Endpoint); err != nil {
			t.Fatal(err)
		}
	}
	if rows := b.pushRows(b.tenant); len(rows) != 1 || rows[0].Endpoint != theirs.Endpoint {
		t.Fatalf("rows = %+v, want only the other principal's", rows)
	}
}

func TestSubscribePushKeepsAPrincipalsNewestSubscriptions(t *testing.T) {
	t.Parallel()
	b := setup(t)
	for i := range maxPushPerPrincipal + 2 {
		b.subscribe(b.human.ID, pushInput(t, fmt.Sprintf("https://push.example.net/device/%d", i)))
		b.clock.Advance(time.Second)
	}
	b.subscribe(b.owner.ID, pushInput(t, "https://push.example.net/owner"))
	rows := b.pushRows(b.tenant)
	human := map[string]bool{}
	for _, r := range rows {
		if r.PrincipalID == b.human.ID {
			human[r.Endpoint] = true
		}
	}
	if len(human) != maxPushPerPrincipal || human["https://push.example.net/device/0"] || human["https://push.example.net/device/1"] ||
		!human[fmt.Sprintf("https://push.example.net/device/%d", maxPushPerPrincipal+1)] {
		t.Fatalf("kept %d of the human's subscriptions: %v", len(human), human)
	}
	if len(rows) != maxPushPerPrincipal+1 {
		t.Fatalf("rows = %d: another principal's subscription was trimmed", len(rows))
	}
}

func TestDeleteAndMarkPushSubscriptionsByID(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.subscribe(b.human.ID, pushInput(t, "https://push.example.net/gone"))
	b.subscribe(b.human.ID, pushInput(t, "https://push.example.net/live"))
	ids := map[string]string{}
	for _, r := range b.pushRows(b.tenant) {
		ids[r.Endpoint] = r.ID
	}
	if err := b.svc.DeletePushSubscriptions(b.ctx, b.tenant, []string{ids["https://push.example.net/gone"]}); err != nil {
		t.Fatal(err)
	}
	b.clock.Advance(time.Minute)
	if err := b.svc.MarkPushSubscriptionsSucceeded(b.ctx, b.tenant, []string{ids["https://push.example.net/live"]}); err != nil {
		t.Fatal(err)
	}
	rows := b.pushRows(b.tenant)
	if len(rows) != 1 || rows[0].Endpoint != "https://push.example.net/live" || rows[0].LastSuccessAt == nil || !rows[0].LastSuccessAt.Equal(b.clock.Now()) {
		t.Fatalf("rows = %+v", rows)
	}
	if err := b.svc.DeletePushSubscriptions(b.ctx, b.tenant, []string{"not-a-uuid"}); !errors.Is(err, ErrInvalid) {
		t.Fatalf("a malformed id: err = %v, want ErrInvalid", err)
	}
	// A re-subscription by the same principal keeps its success record.
	b.subscribe(b.human.ID, pushInput(t, "https://push.example.net/live"))
	if rows := b.pushRows(b.tenant); rows[0].LastSuccessAt == nil {
		t.Fatal("re-subscribing dropped the success record")
	}
}

// Replicas starting at once on an empty table each generate a pair; one
// insert wins and every replica serves that pair. A fresh database, so the
// table is really empty when the race starts.
func TestVAPIDKeysOnePairWinsAcrossReplicas(t *testing.T) {
	t.Parallel()
	b := setup(t, func(o *setupOpts) { o.pool = testdb.Pool(t, testdb.NewDatabase(t, "push_vapid_race")) })
	const replicas = 16
	var generated atomic.Int32
	var mu sync.Mutex
	pairs := map[string]string{}
	publics, privates := make([]string, replicas), make([]string, replicas)
	errs := make([]error, replicas)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := range replicas {
		wg.Go(func() {
			<-start
			publics[i], privates[i], errs[i] = VAPIDKeys(b.ctx, b.pool, b.clock.Now(), func() (string, string, error) {
				n := generated.Add(1)
				pub, priv := fmt.Sprintf("public-%d", n), fmt.Sprintf("private-%d", n)
				mu.Lock()
				pairs[pub] = priv
				mu.Unlock()
				return pub, priv, nil
			})
		})
	}
	close(start)
	wg.Wait()
	for i := range replicas {
		if errs[i] != nil {
			t.Fatalf("replica %d: %v", i, errs[i])
		}
		if publics[i] != publics[0] || privates[i] != privates[0] {
			t.Fatalf("replica %d got %s/%s, replica 0 %s/%s", i, publics[i], privates[i], publics[0], privates[0])
		}
	}
	if generated.Load() == 0 || pairs[publics[0]] != privates[0] {
		t.Fatalf("served %s/%s, not a generated pair (%d generated)", publics[0], privates[0], generated.Load())
	}

	// Later calls read the stored pair and never generate.
	pub, priv, err := VAPIDKeys(b.ctx, b.pool, b.clock.Now(), func() (string, string, error) {
		t.Error("generated although a pair is stored")
		return "x", "y", nil
	})
	if err != nil || pub != publics[0] || priv != privates[0] {
		t.Fatalf("second call: %s/%s, %v", pub, priv, err)
	}
}

func TestVAPIDKeysReportsAGeneratorFailure(t *testing.T) {
	t.Parallel()
	b := setup(t, func(o *setupOpts) { o.pool = testdb.Pool(t, testdb.NewDatabase(t, "push_vapid_fail")) })
	boom := errors.New("no entropy")
	if _, _, err := VAPIDKeys(b.ctx, b.pool, b.clock.Now(), func() (string, string, error) { return "", "", boom }); !errors.Is(err, boom) {
		t.Fatalf("err = %v, want the generator's", err)
	}
	if _, _, err := VAPIDKeys(b.ctx, b.pool, b.clock.Now(), func() (string, string, error) { return "", "", nil }); err == nil {
		t.Fatal("an empty generated pair was accepted")
	}
}

package service

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"gatehouse/api"
	"gatehouse/engine"
	"gatehouse/internal/testdb"
	"gatehouse/notify"
)

// received is one request a receiver got.
type received struct {
	ID, Kind, ApprovalID, Status, URL, PriorRef string
}

// receiver is a real HTTP server standing in for a channel's far end: it
// answers each request with what answer says for the nth request (from 1)
// and keeps what it was sent.
type receiver struct {
	srv    *httptest.Server
	mu     sync.Mutex
	got    []received
	answer func(n int, r *http.Request) int
}

func newReceiver(t *testing.T, answer func(n int, r *http.Request) int) *receiver {
	t.Helper()
	rc := &receiver{answer: answer}
	rc.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var m received
		body, _ := io.ReadAll(r.Body)
		if err := json.Unmarshal(body, &m); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		rc.mu.Lock()
		n := len(rc.got) + 1
		rc.got = append(rc.got, m)
		rc.mu.Unlock()
		code := http.StatusOK
		if rc.answer != nil {
			code = rc.answer(n, r)
		}
		w.WriteHeader(code)
	}))
	t.Cleanup(rc.srv.Close)
	return rc
}

func (rc *receiver) messages() []received {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return slices.Clone(rc.got)
}

// postChannel is the smallest real channel: it POSTs the message as JSON
// and reads the status, as every HTTP channel does (notify has the real
// ones and tests them against their own receivers).
type postChannel struct {
	name, url string
}

func (c postChannel) Name() string           { return c.name }
func (c postChannel) Type() string           { return "webhook" }
func (c postChannel) IncludeArguments() bool { return false }
func (c postChannel) Deliver(ctx context.Context, d notify.Delivery) (notify.Result, error) {
	body, _ := json.Marshal(received{
		ID: d.ID, Kind: d.Kind, ApprovalID: d.ApprovalID, Status: d.Status, URL: d.URL, PriorRef: d.PriorRef,
	})
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.url, bytes.NewReader(body))
	if err != nil {
		return notify.Result{}, notify.Permanent(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return notify.Result{}, err
	}
	_ = resp.Body.Close()
	res := notify.Result{Status: resp.StatusCode, Ref: "ref-" + d.ID}
	switch {
	case resp.StatusCode >= 500:
		return res, fmt.Errorf("status %d", resp.StatusCode)
	case resp.StatusCode >= 400:
		return res, notify.Permanent(fmt.Errorf("status %d", resp.StatusCode))
	}
	return res, nil
}

// notifyingSetup is setup with notifications to one receiver, on a
// database of the test's own: a notifier pass claims every due delivery
// of its database, so two notifier tests must not share one.
func notifyingSetup(t *testing.T, rc *receiver, tweak ...func(*Notifications)) *bundle {
	t.Helper()
	n := &Notifications{
		Channels:    map[string]notify.Channel{"hook": postChannel{name: "hook", url: rc.srv.URL}},
		Route:       func(string, string) []string { return []string{"hook"} },
		MaxAttempts: 3,
		Backoff:     func(failed int) time.Duration { return time.Duration(failed) * time.Minute },
		Timeout:     5 * time.Second, ExpiringShare: 0.8, ExpiringBefore: 10 * time.Minute,
		BaseURL: "https://gatehouse.example/",
	}
	for _, f := range tweak {
		f(n)
	}
	pool := testdb.Pool(t, testdb.NewDatabase(t, "notify_"+strings.ReplaceAll(uuid.NewString()[:13], "-", "")))
	return setup(t, withNotifications(n), func(o *setupOpts) { o.pool = pool })
}

// deliverAll runs notifier passes until one claims nothing.
func (b *bundle) deliverAll(svc *Service) {
	b.t.Helper()
	for {
		n, err := svc.DeliverNotifications(b.ctx)
		if err != nil {
			b.t.Fatalf("deliver: %v", err)
		}
		if n == 0 {
			return
		}
	}
}

// deliveries is each delivery's kind and status for an approval, oldest
// first.
func (b *bundle) deliveries(approvalID string) []string {
	b.t.Helper()
	rows, err := b.pool.Query(b.ctx, `
SELECT n.kind || ' ' || d.status || ' ' || d.attempts FROM notification_deliveries d
  JOIN notifications n ON n.id = d.notification_id WHERE d.approval_id = $1 ORDER BY d.id`, approvalID)
	if err != nil {
		b.t.Fatal(err)
	}
	out, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		b.t.Fatal(err)
	}
	return out
}

// Every change of an approval a human should hear of writes its
// notification in the transaction of the change, and the notifier
// delivers each with the deep link to the card.
func TestNotificationsFollowTheApprovalLifecycle(t *testing.T) {
	t.Parallel()
	rc := newReceiver(t, nil)
	b := notifyingSetup(t, rc)

	approved := b.parked(b.started(), action("email.send", map[string]any{"to": "a@example.com"}))
	b.deliverAll(b.svc)
	b.resolve(approved.ApprovalID, engine.ResolutionApproveOnce)

	cancelled := b.parked(b.started(), action("email.send", map[string]any{"to": "b@example.com"}))
	cancelledRun := b.approval(cancelled.ApprovalID).RunID
	if _, err := b.svc.CancelRun(b.ctx, b.owner, cancelledRun); err != nil {
		t.Fatal(err)
	}

	c := b.started()
	req := action("http.post", map[string]any{"url": "https://example.com", "body": "x"})
	invalidated := b.parked(c, req)
	b.resolve(invalidated.ApprovalID, engine.ResolutionApproveOnce)
	c = b.claim(c.run.ID)
	if _, err := b.svc.Resume(b.ctx, b.owner, c.run.ID, invalidated.InvocationID, c.lease,
		api.ResumeInput{Arguments: req.Arguments, AgentVersion: "2.0"}); err != nil {
		t.Fatal(err)
	}

	expired := b.parked(b.started(), action("email.send", map[string]any{"to": "c@example.com"}))
	b.clock.Advance(b.approval(expired.ApprovalID).ExpiresAt.Sub(b.clock.Now()) + time.Second)
	if _, err := b.svc.ExpireDue(b.ctx, 0); err != nil {
		t.Fatal(err)
	}
	b.deliverAll(b.svc)

	for _, tc := range []struct {
		id   string
		want []string
	}{
		{approved.ApprovalID, []string{"requested delivered 1", "resolved delivered 1"}},
		// Asked and answered before the notifier ran: the request is
		// skipped, the cancellation still told.
		{cancelled.ApprovalID, []string{"requested skipped 1", "cancelled delivered 1"}},
		{invalidated.ApprovalID, []string{"requested skipped 1", "resolved delivered 1", "invalidated delivered 1"}},
		// The clock jumped past the "expiring soon" point straight to the
		// expiry: the reaper's expiry is what is told.
		{expired.ApprovalID, []string{"requested skipped 1", "expired delivered 1"}},
	} {
		mustEqual(t, "deliveries of "+tc.id, strings.Join(b.deliveries(tc.id), ", "), strings.Join(tc.want, ", "))
	}
	var first received
	for _, m := range rc.messages() {
		if m.ApprovalID == approved.ApprovalID && m.Kind == notify.KindRequested {
			first = m
		}
	}
	mustEqual(t, "deep link", first.URL, "https://gatehouse.example/approvals/"+approved.ApprovalID)
	mustEqual(t, "status told", first.Status, "pending")
}

// A later notification of an approval waits for the earlier one on the
// same channel and carries the reference it returned, so a Slack message
// is updated in place rather than posted twice.
func TestNotificationUpdatesCarryThePriorReference(t *testing.T) {
	t.Parallel()
	failFirst := func(n int, _ *http.Request) int {
		if n == 1 {
			return http.StatusBadGateway
		}
		return http.StatusOK
	}
	rc := newReceiver(t, failFirst)
	b := notifyingSetup(t, rc)
	park := b.parked(b.started(), action("email.send", map[string]any{"to": "a@example.com"}))
	b.deliverAll(b.svc) // the request fails once and waits a minute
	b.resolve(park.ApprovalID, engine.ResolutionDeny)
	b.deliverAll(b.svc) // the resolution may not overtake it
	mustEqual(t, "before the retry", strings.Join(b.deliveries(park.ApprovalID), ", "), "requested pending 1, resolved pending 0")

	// Its retry finds the approval resolved: skipped, and the resolution
	// has nothing to update.
	b.clock.Advance(time.Minute)
	b.deliverAll(b.svc)
	mustEqual(t, "after", strings.Join(b.deliveries(park.ApprovalID), ", "), "requested skipped 2, resolved delivered 1")

	park2 := b.parked(b.started(), action("email.send", map[string]any{"to": "b@example.com"}))
	b.deliverAll(b.svc)
	b.resolve(park2.ApprovalID, engine.ResolutionApproveOnce)
	b.deliverAll(b.svc)
	msgs := rc.messages()
	last := msgs[len(msgs)-1]
	var requestID string
	if err := b.pool.QueryRow(b.ctx, `SELECT id::text FROM notifications WHERE approval_id = $1 AND kind = 'requested'`, park2.ApprovalID).Scan(&requestID); err != nil {
		t.Fatal(err)
	}
	mustEqual(t, "resolution's kind", last.Kind, notify.KindResolved)
	mustEqual(t, "resolution's prior reference", last.PriorRef, "ref-"+requestID)
}

// 500s and timeouts are retried with backoff, each try logged; a 4xx, or
// the last allowed try, settles the delivery as failed.
func TestNotificationRetriesAndGivesUp(t *testing.T) {
	t.Parallel()
	t.Run("500 then 200", func(t *testing.T) {
		t.Parallel()
		rc := newReceiver(t, func(n int, _ *http.Request) int {
			if n < 3 {
				return http.StatusInternalServerError
			}
			return http.StatusOK
		})
		b := notifyingSetup(t, rc)
		park := b.parked(b.started(), action("email.send", map[string]any{"to": "a@example.com"}))
		b.deliverAll(b.svc)
		mustEqual(t, "after one try", b.deliveries(park.ApprovalID)[0], "requested pending 1")
		b.clock.Advance(59 * time.Second)
		b.deliverAll(b.svc)
		mustEqual(t, "before the backoff", b.deliveries(park.ApprovalID)[0], "requested pending 1")
		b.clock.Advance(time.Second)
		b.deliverAll(b.svc)
		b.clock.Advance(2 * time.Minute)
		b.deliverAll(b.svc)
		mustEqual(t, "after three", b.deliveries(park.ApprovalID)[0], "requested delivered 3")
		mustEqual(t, "attempt log", b.attempts(park.ApprovalID), "retry 500, retry 500, delivered 200")
		mustEqual(t, "same idempotency id on every try", len(uniqueIDs(rc.messages())), 1)
	})
	t.Run("always 500", func(t *testing.T) {
		t.Parallel()
		rc := newReceiver(t, func(int, *http.Request) int { return http.StatusServiceUnavailable })
		b := notifyingSetup(t, rc)
		park := b.parked(b.started(), action("email.send", map[string]any{"to": "a@example.com"}))
		for range 5 {
			b.deliverAll(b.svc)
			b.clock.Advance(time.Hour)
		}
		mustEqual(t, "given up", b.deliveries(park.ApprovalID)[0], "requested failed 3")
		mustEqual(t, "attempt log", b.attempts(park.ApprovalID), "retry 503, retry 503, failed 503")
	})
	t.Run("400", func(t *testing.T) {
		t.Parallel()
		rc := newReceiver(t, func(int, *http.Request) int { return http.StatusBadRequest })
		b := notifyingSetup(t, rc)
		park := b.parked(b.started(), action("email.send", map[string]any{"to": "a@example.com"}))
		b.deliverAll(b.svc)
		mustEqual(t, "failed at once", b.deliveries(park.ApprovalID)[0], "requested failed 1")
	})
	t.Run("timeout", func(t *testing.T) {
		t.Parallel()
		release := make(chan struct{})
		rc := newReceiver(t, func(n int, r *http.Request) int {
			if n == 1 {
				select { // hold the first request past the channel's timeout
				case <-release:
				case <-r.Context().Done():
				}
			}
			return http.StatusOK
		})
		t.Cleanup(func() { close(release) })
		b := notifyingSetup(t, rc, func(n *Notifications) { n.Timeout = 50 * time.Millisecond })
		park := b.parked(b.started(), action("email.send", map[string]any{"to": "a@example.com"}))
		b.deliverAll(b.svc)
		mustEqual(t, "timed out, to be retried", b.deliveries(park.ApprovalID)[0], "requested pending 1")
		b.clock.Advance(time.Minute)
		b.deliverAll(b.svc)
		mustEqual(t, "delivered on retry", b.deliveries(park.ApprovalID)[0], "requested delivered 2")
	})
}

// attempts is the outcome and status of each try at an approval's first
// delivery.
func (b *bundle) attempts(approvalID string) string {
	b.t.Helper()
	rows, err := b.pool.Query(b.ctx, `
SELECT t.outcome || ' ' || t.http_status FROM notification_attempts t
  JOIN notification_deliveries d ON d.id = t.delivery_id
 WHERE d.approval_id = $1 AND d.id = (SELECT min(id) FROM notification_deliveries WHERE approval_id = $1)
 ORDER BY t.attempt`, approvalID)
	if err != nil {
		b.t.Fatal(err)
	}
	out, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		b.t.Fatal(err)
	}
	return strings.Join(out, ", ")
}

func uniqueIDs(msgs []received) map[string]int {
	ids := map[string]int{}
	for _, m := range msgs {
		ids[m.ID]++
	}
	return ids
}

// A replica that dies between sending and recording leaves its lease; once
// the lease runs out a restarted replica delivers, under the same
// idempotency id. Nothing written before the crash is lost.
func TestNotificationSurvivesARestart(t *testing.T) {
	t.Parallel()
	sent := make(chan struct{}, 1)
	rc := newReceiver(t, func(n int, r *http.Request) int {
		if n == 1 {
			sent <- struct{}{}
			<-r.Context().Done() // the "crash": the sender never hears back
		}
		return http.StatusOK
	})
	b := notifyingSetup(t, rc)
	park := b.parked(b.started(), action("email.send", map[string]any{"to": "a@example.com"}))

	ctx, crash := context.WithCancel(b.ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		_, _ = b.svc.DeliverNotifications(ctx)
	}()
	<-sent
	crash()
	<-done
	mustEqual(t, "leased, unsettled", b.deliveries(park.ApprovalID)[0], "requested pending 1")

	restarted := b.newService(b.policy)
	b.deliverAll(restarted)
	mustEqual(t, "still leased", b.deliveries(park.ApprovalID)[0], "requested pending 1")
	b.clock.Advance(time.Hour)
	b.deliverAll(restarted)
	mustEqual(t, "delivered after the lease", b.deliveries(park.ApprovalID)[0], "requested delivered 2")
	msgs := rc.messages()
	mustEqual(t, "tries", len(msgs), 2)
	mustEqual(t, "one idempotency id", msgs[0].ID, msgs[1].ID)
}

// Two replicas draining one outbox concurrently deliver every notification
// exactly once.
func TestNotificationExactlyOnceWithTwoReplicas(t *testing.T) {
	t.Parallel()
	rc := newReceiver(t, nil)
	b := notifyingSetup(t, rc)
	const approvals = 40
	for i := range approvals {
		b.parked(b.started(), action("email.send", map[string]any{"to": fmt.Sprintf("%d@example.com", i)}))
	}
	replicas := []*Service{b.svc, b.replica("second")}
	var wg sync.WaitGroup
	for _, svc := range replicas {
		wg.Go(func() {
			for {
				n, err := svc.DeliverNotifications(b.ctx)
				if err != nil {
					t.Error(err)
					return
				}
				if n == 0 {
					return
				}
			}
		})
	}
	wg.Wait()
	ids := uniqueIDs(rc.messages())
	mustEqual(t, "notifications delivered", len(ids), approvals)
	for id, n := range ids {
		if n != 1 {
			t.Errorf("notification %s delivered %d times", id, n)
		}
	}
	var replicasUsed int
	if err := b.pool.QueryRow(b.ctx, `SELECT count(DISTINCT replica) FROM notification_attempts`).Scan(&replicasUsed); err != nil {
		t.Fatal(err)
	}
	t.Logf("replicas that delivered: %d", replicasUsed)
}

// replica is another process on the bundle's database and clock.
func (b *bundle) replica(id string) *Service {
	b.t.Helper()
	svc, err := New(b.ctx, Config{Pool: b.pool, Policy: b.policy, Principals: b.dir, Now: b.clock.Now, ReplicaID: id, Notify: b.notify})
	if err != nil {
		b.t.Fatal(err)
	}
	return svc
}

// "Expiring soon" comes once, at the configured share of the approval's
// lifetime, and not for an approval already answered.
func TestNotificationExpiringSoon(t *testing.T) {
	t.Parallel()
	rc := newReceiver(t, nil)
	b := notifyingSetup(t, rc, func(n *Notifications) { n.ExpiringBefore = time.Second })
	park := b.parked(b.started(), action("email.send", map[string]any{"to": "a@example.com"}))
	answered := b.parked(b.started(), action("email.send", map[string]any{"to": "b@example.com"}))
	b.resolve(answered.ApprovalID, engine.ResolutionDeny)
	b.deliverAll(b.svc)
	a := b.approval(park.ApprovalID)
	life := a.ExpiresAt.Sub(a.CreatedAt)
	b.clock.Advance(time.Duration(float64(life)*0.8) - time.Second)
	b.deliverAll(b.svc)
	mustEqual(t, "before", strings.Join(b.deliveries(park.ApprovalID), ", "), "requested delivered 1")
	b.clock.Advance(time.Second)
	b.deliverAll(b.svc)
	b.replica("second").DeliverNotifications(b.ctx) //nolint:errcheck // a second scan finds nothing new
	b.deliverAll(b.svc)
	mustEqual(t, "at 80%", strings.Join(b.deliveries(park.ApprovalID), ", "), "requested delivered 1, expiring delivered 1")
	mustEqual(t, "answered", strings.Join(b.deliveries(answered.ApprovalID), ", "), "requested skipped 1, resolved delivered 1")
}

// With notifications off, or no channel for the approval's risk, the gate
// writes nothing to the outbox.
func TestNotificationOutboxStaysEmptyWithoutARoute(t *testing.T) {
	t.Parallel()
	rc := newReceiver(t, nil)
	b := notifyingSetup(t, rc, func(n *Notifications) {
		n.Route = func(_, risk string) []string {
			if risk == string(engine.RiskCritical) {
				return []string{"hook"}
			}
			return nil
		}
	})
	high := b.parked(b.started(), action("email.send", map[string]any{"to": "a@example.com"}))
	critical := b.parked(b.started(), action("payments.charge", map[string]any{"customer": "c", "amount_cents": 100, "currency": "EUR"}))
	mustEqual(t, "high", len(b.deliveries(high.ApprovalID)), 0)
	mustEqual(t, "critical", len(b.deliveries(critical.ApprovalID)), 1)

	off := setup(t, func(o *setupOpts) { o.pool = b.pool })
	park := off.parked(off.started(), action("payments.charge", map[string]any{"customer": "c", "amount_cents": 100, "currency": "EUR"}))
	mustEqual(t, "notifications off", len(off.deliveries(park.ApprovalID)), 0)
}

// A test-send goes through the outbox to the one channel named, and the
// console's list shows it with its attempt; another tenant sees none of it.
func TestNotificationTestSendAndList(t *testing.T) {
	t.Parallel()
	rc := newReceiver(t, nil)
	b := notifyingSetup(t, rc)
	wantErr(t, b.svc.SendTestNotification(b.ctx, b.human, "nope"), ErrUnknownChannel)
	wantErr(t, b.svc.SendTestNotification(b.ctx, engine.Principal{ID: "v", TenantID: b.tenant, Scopes: []string{"approval.read"}}, "hook"), ErrForbidden)
	if err := b.svc.SendTestNotification(b.ctx, b.human, "hook"); err != nil {
		t.Fatal(err)
	}
	b.deliverAll(b.svc)
	mustEqual(t, "received", rc.messages()[0].Kind, notify.KindTest)
	list, err := b.svc.RecentNotifications(b.ctx, b.human, 10)
	if err != nil {
		t.Fatal(err)
	}
	if len(list) != 1 || list[0].Status != "delivered" || len(list[0].Tries) != 1 || list[0].Tries[0].HTTPStatus != 200 {
		t.Fatalf("list: %+v", list)
	}
	other, err := b.svc.RecentNotifications(b.ctx, engine.Principal{ID: "x", TenantID: "other", Scopes: []string{"approval.read"}}, 10)
	if err != nil || len(other) != 0 {
		t.Fatalf("other tenant: %v %v", other, err)
	}
}

// pushChannel is a Web Push channel's stand-in that keeps the devices it
// was handed and reports one endpoint gone, as a push service's 410 does.
type pushChannel struct {
	mu   sync.Mutex
	sent []string
	gone string
}

func (c *pushChannel) Name() string           { return "push" }
func (c *pushChannel) Type() string           { return notify.TypeWebPush }
func (c *pushChannel) IncludeArguments() bool { return false }
func (c *pushChannel) Deliver(_ context.Context, d notify.Delivery) (notify.Result, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	var res notify.Result
	for _, s := range d.Subscriptions {
		c.sent = append(c.sent, s.Endpoint)
		if s.Endpoint == c.gone {
			res.Gone = append(res.Gone, s.ID)
		}
	}
	return res, nil
}

// Web Push goes to the devices of the tenant's approvers only; a device
// the push service reports gone is dropped, the others are stamped.
func TestNotificationWebPushReachesApproversDevices(t *testing.T) {
	t.Parallel()
	ch := &pushChannel{gone: "https://push.example/gone"}
	b := notifyingSetup(t, newReceiver(t, nil), func(n *Notifications) {
		n.Channels = map[string]notify.Channel{"push": ch}
		n.Route = func(string, string) []string { return []string{"push"} }
	})
	viewer := engine.Principal{ID: "viewer", TenantID: b.tenant, Scopes: []string{"approval.read"}}
	b.dir.put(viewer)
	for _, s := range []struct {
		who      engine.Principal
		endpoint string
	}{{b.human, "https://push.example/kept"}, {b.human, ch.gone}, {viewer, "https://push.example/viewer"}} {
		if err := b.svc.SubscribePush(b.ctx, b.tenant, s.who.ID, pushInput(t, s.endpoint)); err != nil {
			t.Fatal(err)
		}
	}
	b.parked(b.started(), action("email.send", map[string]any{"to": "a@example.com"}))
	b.deliverAll(b.svc)
	slices.Sort(ch.sent)
	mustEqual(t, "devices pushed to", strings.Join(ch.sent, " "), "https://push.example/gone https://push.example/kept")
	rows, err := b.svc.PushSubscriptions(b.ctx, b.tenant)
	if err != nil {
		t.Fatal(err)
	}
	var left []string
	for _, r := range rows {
		left = append(left, fmt.Sprintf("%s reached=%v", r.Endpoint, r.LastSuccessAt != nil))
	}
	slices.Sort(left)
	mustEqual(t, "devices left", strings.Join(left, ", "), "https://push.example/kept reached=true, https://push.example/viewer reached=false")
}

package service

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"

	"gatehouse/engine"
	"gatehouse/notify"
)

// Notifications is how approval changes reach people: the channels, which
// of them a tenant's approval of a given risk goes to, and the delivery
// policy. A nil *Notifications in Config turns notifications off: the gate
// then writes no outbox rows at all.
type Notifications struct {
	Channels map[string]notify.Channel
	// Route names the channels for an approval of this tenant and risk.
	Route func(tenantID, risk string) []string
	// MaxAttempts bounds the tries of one delivery; the last failure
	// settles it as failed.
	MaxAttempts int
	// Backoff is the wait before the next try after the given number of
	// failed tries (jittered by the caller's configuration).
	Backoff func(failed int) time.Duration
	// Timeout bounds one try.
	Timeout time.Duration
	// ExpiringShare and ExpiringBefore place "expiring soon": at that share
	// of a pending approval's lifetime, or that long before its expiry,
	// whichever comes first.
	ExpiringShare  float64
	ExpiringBefore time.Duration
	// BaseURL is CONSOLE_BASE_URL: the deep link is BaseURL/approvals/{id}.
	BaseURL string
}

const (
	notifierBatch   = 16
	notifierWorkers = 4
	maxErrorLength  = 500
)

// notificationKind is the notification an approval's new status calls for.
func notificationKind(status engine.ApprovalStatus) string {
	switch status {
	case engine.ApprovalPending:
		return notify.KindRequested
	case engine.ApprovalExpired:
		return notify.KindExpired
	case engine.ApprovalCancelled:
		return notify.KindCancelled
	default:
		return notify.KindResolved
	}
}

// notification is the outbox row for an approval change, and false when no
// channel wants it (or notifications are off): the gate then writes
// nothing.
func (s *Service) notification(a approvalRow, kind string, now time.Time) (notificationRow, bool) {
	n := s.cfg.Notify
	if n == nil {
		return notificationRow{}, false
	}
	channels := n.Route(a.TenantID, string(a.Risk))
	if len(channels) == 0 {
		return notificationRow{}, false
	}
	return notificationRow{
		ID: newID(), TenantID: a.TenantID, ApprovalID: a.ID, Kind: kind,
		Channels: channels, CreatedAt: now,
	}, true
}

// queueNotification queues the outbox row for an approval change on the
// batch of the transaction that makes the change.
func (s *Service) queueNotification(b *pgx.Batch, after *afterCommit, a approvalRow, kind string, now time.Time) {
	if n, ok := s.notification(a, kind, now); ok {
		queueNotificationsInsert(b, n)
		after.add(s.wakeNotifier)
	}
}

// insertNotification is queueNotification for a transaction that is not
// batching.
func (s *Service) insertNotification(ctx context.Context, tx pgx.Tx, after *afterCommit, a approvalRow, kind string, now time.Time) error {
	n, ok := s.notification(a, kind, now)
	if !ok {
		return nil
	}
	after.add(s.wakeNotifier)
	return notificationsInsert(ctx, tx, n)
}

// wakeNotifier tells this replica's notifier there is work, without
// waiting for its next tick; a full wakeup channel already says so.
func (s *Service) wakeNotifier() {
	select {
	case s.notifierWake <- struct{}{}:
	default:
	}
}

// ErrUnknownChannel: a test-send named no configured channel.
var ErrUnknownChannel = errors.New("unknown notification channel")

// NotificationChannels lists the configured channel names and types.
func (s *Service) NotificationChannels() map[string]string {
	out := map[string]string{}
	if s.cfg.Notify == nil {
		return out
	}
	for name, ch := range s.cfg.Notify.Channels {
		out[name] = ch.Type()
	}
	return out
}

// SendTestNotification queues a test notification to one channel for the
// principal's tenant: it goes through the outbox like any other, so the
// console shows its attempts. It needs approval.resolve (whoever would be
// notified).
func (s *Service) SendTestNotification(ctx context.Context, p engine.Principal, channel string) error {
	if err := requireScope(p, scopeApprovalResolve); err != nil {
		return fmt.Errorf("service: test notification: %w", err)
	}
	if s.cfg.Notify == nil || s.cfg.Notify.Channels[channel] == nil {
		return fmt.Errorf("service: test notification: %w: %q", ErrUnknownChannel, channel)
	}
	n := notificationRow{
		ID: newID(), TenantID: p.TenantID, Kind: notify.KindTest,
		Channels: []string{channel}, CreatedAt: s.now(),
	}
	if err := notificationsInsert(ctx, s.pool, n); err != nil {
		return fmt.Errorf("service: test notification: %w", err)
	}
	s.wakeNotifier()
	return nil
}

// RecentNotifications lists the newest deliveries of the principal's
// tenant with their attempts (approval.read).
func (s *Service) RecentNotifications(ctx context.Context, p engine.Principal, limit int) ([]NotificationDelivery, error) {
	if err := requireScope(p, scopeApprovalRead); err != nil {
		return nil, fmt.Errorf("service: notifications: %w", err)
	}
	out, err := notificationDeliveriesList(ctx, s.pool, p.TenantID, clampLimit(limit, 100, 500))
	if err != nil {
		return nil, fmt.Errorf("service: notifications: %w", err)
	}
	return out, nil
}

// RunNotifier delivers notifications until ctx ends: at every interval,
// at once when this replica wrote one, and again at once after a full
// batch. A failing pass is logged and retried at the next tick: nothing
// here can hold up the gate, which only ever inserts.
func (s *Service) RunNotifier(ctx context.Context, interval time.Duration) {
	if s.cfg.Notify == nil || interval <= 0 {
		return
	}
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		n, err := s.DeliverNotifications(ctx)
		if err != nil && ctx.Err() == nil {
			s.log.Warn("notifier: pass failed", "err", err)
		}
		if err == nil && n == notifierBatch {
			continue
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		case <-s.notifierWake:
		}
	}
}

// DeliverNotifications is one notifier pass: it writes the "expiring soon"
// notifications now due, then claims up to a batch of due deliveries,
// sends them concurrently and settles each. It returns how many it
// claimed.
func (s *Service) DeliverNotifications(ctx context.Context) (int, error) {
	cfg := s.cfg.Notify
	if cfg == nil {
		return 0, nil
	}
	if err := s.queueExpiring(ctx); err != nil {
		return 0, err
	}
	now := s.now()
	// The lease outlives the try by a margin, so a live replica settles
	// its delivery before anyone may take it over.
	lease := now.Add(2*cfg.Timeout + 30*time.Second)
	claimed, err := notificationDeliveriesClaimDue(ctx, s.pool, s.cfg.ReplicaID, now, lease, notifierBatch)
	if err != nil {
		return 0, fmt.Errorf("service: notifier: %w", err)
	}
	work := make(chan claimedDelivery)
	var wg sync.WaitGroup
	for range min(notifierWorkers, len(claimed)) {
		wg.Go(func() {
			for d := range work {
				s.deliver(ctx, d)
			}
		})
	}
	for _, d := range claimed {
		work <- d
	}
	close(work)
	wg.Wait()
	if backlog, err := notificationDeliveriesPending(ctx, s.pool); err == nil {
		s.metrics.NotificationBacklog(backlog)
	}
	return len(claimed), nil
}

// queueExpiring writes the due "expiring soon" notifications. The unique
// (approval, kind) index makes a race between replicas write one.
func (s *Service) queueExpiring(ctx context.Context) error {
	cfg := s.cfg.Notify
	now := s.now()
	due, err := notificationsExpiringCandidates(ctx, s.pool, now, cfg.ExpiringShare, cfg.ExpiringBefore, notifierBatch)
	if err != nil {
		return fmt.Errorf("service: notifier: %w", err)
	}
	for _, c := range due {
		// Written even when no channel takes it, so the scan moves on.
		n := notificationRow{
			ID: newID(), TenantID: c.TenantID, ApprovalID: c.ID, Kind: notify.KindExpiring,
			Channels: cfg.Route(c.TenantID, c.Risk), CreatedAt: now,
		}
		if err := notificationsInsert(ctx, s.pool, n); err != nil {
			return fmt.Errorf("service: notifier: %w", err)
		}
	}
	return nil
}

// deliver makes one try at one leased delivery and settles it.
func (s *Service) deliver(ctx context.Context, d claimedDelivery) {
	cfg := s.cfg.Notify
	ch := cfg.Channels[d.Channel]
	started := s.now()
	o := deliveryOutcome{StartedAt: started}
	switch {
	case ch == nil:
		// The channel left the configuration since the row was written.
		o.Outcome, o.Error = "failed", "channel is not configured"
	case stale(d):
		o.Outcome = "skipped"
	default:
		res, err := s.send(ctx, ch, d, started)
		o.HTTPStatus, o.Ref = res.Status, res.Ref
		switch {
		case err == nil:
			o.Outcome = "delivered"
		case notify.IsPermanent(err) || d.Attempt >= cfg.MaxAttempts:
			o.Outcome, o.Error = "failed", deliveryError(err)
		default:
			o.Outcome, o.Error = "retry", deliveryError(err)
		}
	}
	finished := s.now()
	o.Latency, o.FinishedAt, o.NextTry, o.Status = finished.Sub(started), finished, finished, o.Outcome
	if o.Outcome == "retry" {
		o.Status, o.NextTry = "pending", finished.Add(cfg.Backoff(d.Attempt))
	}
	if o.Outcome == "failed" || o.Outcome == "retry" {
		s.log.Warn("notifier: delivery failed", "channel", d.Channel, "notification_id", d.NotificationID,
			"attempt", d.Attempt, "outcome", o.Outcome, "err", o.Error)
	}
	held, err := notificationDeliveriesSettle(ctx, s.pool, d, s.cfg.ReplicaID, o)
	if err != nil {
		// The lease runs out and another try repeats the delivery: the
		// payload's stable id lets the receiver drop the repeat.
		s.log.Warn("notifier: settle failed", "channel", d.Channel, "notification_id", d.NotificationID, "err", err)
		return
	}
	if held {
		s.metrics.NotificationDelivered(d.Channel, o.Outcome, o.Latency)
	}
}

// stale: a "requested" or "expiring soon" notice about an approval that is
// no longer pending would only ask for a decision already taken.
func stale(d claimedDelivery) bool {
	return (d.Kind == notify.KindRequested || d.Kind == notify.KindExpiring) &&
		d.Status != string(engine.ApprovalPending)
}

func (s *Service) send(ctx context.Context, ch notify.Channel, d claimedDelivery, now time.Time) (notify.Result, error) {
	cfg := s.cfg.Notify
	msg := notify.Message{
		ID: d.NotificationID, Kind: d.Kind, TenantID: d.TenantID, ApprovalID: d.ApprovalID,
		RunID: d.RunID, Tool: d.Tool, Summary: d.Summary, SideEffect: d.SideEffect, Risk: d.Risk,
		Status: d.Status, ResolvedBy: d.ResolvedBy, Reason: d.Reason,
		CreatedAt: d.CreatedAt, ExpiresAt: d.ExpiresAt, SentAt: now,
		URL: strings.TrimRight(cfg.BaseURL, "/") + "/",
	}
	if d.ApprovalID != "" {
		msg.URL += "approvals/" + d.ApprovalID
	}
	if ch.IncludeArguments() && d.ApprovalID != "" {
		// The stored view is already redacted and truncated.
		if err := json.Unmarshal(d.Arguments, &msg.Arguments); err != nil {
			return notify.Result{}, notify.Permanent(fmt.Errorf("arguments view: %w", err))
		}
	}
	delivery := notify.Delivery{Message: msg, PriorRef: d.PriorRef}
	if ch.Type() == notify.TypeWebPush {
		subs, err := s.approverDevices(ctx, d.TenantID)
		if err != nil {
			return notify.Result{}, err
		}
		delivery.Subscriptions = subs
	}
	sendCtx, cancel := context.WithTimeout(ctx, cfg.Timeout)
	defer cancel()
	res, err := ch.Deliver(sendCtx, delivery)
	s.recordDevices(ctx, d.TenantID, delivery.Subscriptions, res.Gone, err == nil)
	return res, err
}

// approverDevices are the push subscriptions of the tenant's principals
// who may act on a card now: a device of someone whose approval.resolve
// was taken away gets nothing.
func (s *Service) approverDevices(ctx context.Context, tenantID string) ([]notify.PushSubscription, error) {
	rows, err := s.PushSubscriptions(ctx, tenantID)
	if err != nil {
		return nil, err
	}
	var out []notify.PushSubscription
	for _, r := range rows {
		p, ok := s.cfg.Principals.Principal(tenantID, r.PrincipalID)
		if !ok || requireScope(p, scopeApprovalResolve) != nil {
			continue
		}
		out = append(out, notify.PushSubscription{ID: r.ID, Endpoint: r.Endpoint, P256dh: r.P256dh, Auth: r.Auth})
	}
	return out, nil
}

// recordDevices drops the subscriptions the push service says are gone
// and, after a delivery, stamps the rest as reached. Neither can change
// the delivery's outcome, so failures are only logged.
func (s *Service) recordDevices(ctx context.Context, tenantID string, sent []notify.PushSubscription, gone []string, delivered bool) {
	if len(gone) > 0 {
		if err := s.DeletePushSubscriptions(ctx, tenantID, gone); err != nil {
			s.log.Warn("notifier: dropping gone push subscriptions", "err", err)
		}
	}
	if !delivered || len(sent) == 0 {
		return
	}
	var reached []string
	for _, sub := range sent {
		if !slices.Contains(gone, sub.ID) {
			reached = append(reached, sub.ID)
		}
	}
	if err := s.MarkPushSubscriptionsSucceeded(ctx, tenantID, reached); err != nil {
		s.log.Warn("notifier: stamping push subscriptions", "err", err)
	}
}

// deliveryError is what the attempt log keeps of a failure: without the
// request URL, which for some channels (a webhook path, a topic) is a
// secret, and bounded.
func deliveryError(err error) string {
	var ue *url.Error
	if errors.As(err, &ue) {
		err = fmt.Errorf("%s: %w", ue.Op, ue.Err)
	}
	msg := []rune(err.Error())
	if len(msg) > maxErrorLength {
		msg = msg[:maxErrorLength]
	}
	return string(msg)
}

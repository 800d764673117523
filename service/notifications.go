package service

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// This file is the notification outbox's repository: notifications (one per
// approval change worth telling a human about), their deliveries (one per
// routed channel, with a lease for the replica sending it) and every
// attempt.

// notificationInsert writes a notification and a delivery per channel in
// one statement, so the gate's batch pays no extra round trip. A second
// notification of the same kind for an approval inserts nothing.
const notificationInsert = `
WITH n AS (
  INSERT INTO notifications (id, tenant_id, approval_id, kind, created_at)
  VALUES ($1, $2, $3, $4, $5)
  ON CONFLICT DO NOTHING
  RETURNING id)
INSERT INTO notification_deliveries (notification_id, tenant_id, approval_id, channel, next_attempt_at, created_at)
SELECT n.id, $2, $3, c, $5, $5 FROM n, unnest($6::text[]) AS c`

// notificationsExpiringDue finds pending approvals past the "expiring soon"
// threshold (a share of their lifetime, or a fixed time before expiry,
// whichever comes first) that have no expiring notification yet.
const notificationsExpiringDue = `
SELECT a.id::text, a.tenant_id, a.risk
  FROM approvals a
 WHERE a.status = 'pending' AND a.expires_at > $1
   AND (a.created_at + (a.expires_at - a.created_at) * $2::float8 <= $1
        OR a.expires_at - $3::interval <= $1)
   AND NOT EXISTS (SELECT 1 FROM notifications n WHERE n.approval_id = a.id AND n.kind = 'expiring')
 ORDER BY a.expires_at
 LIMIT $4`

// notificationDeliveriesClaim leases due deliveries to a replica and
// returns them with what their message needs. SKIP LOCKED keeps two
// replicas off each other's rows; the lease (claimed_until) keeps them off
// rows being sent; and a delivery waits while an earlier one of the same
// approval to the same channel is still pending, so a Slack message is
// posted before it is updated.
const notificationDeliveriesClaim = `
WITH claimed AS (
  UPDATE notification_deliveries d
     SET claimed_by = $1, claimed_until = $2, attempts = d.attempts + 1
   WHERE d.id IN (
     SELECT x.id FROM notification_deliveries x
      WHERE x.status = 'pending' AND x.next_attempt_at <= $3
        AND (x.claimed_until IS NULL OR x.claimed_until < $3)
        AND NOT EXISTS (SELECT 1 FROM notification_deliveries p
                         WHERE p.approval_id = x.approval_id AND p.channel = x.channel
                           AND p.id < x.id AND p.status = 'pending')
      ORDER BY x.next_attempt_at, x.id
      LIMIT $4
      FOR UPDATE SKIP LOCKED)
  RETURNING d.id, d.notification_id, d.tenant_id, d.approval_id, d.channel, d.attempts)
SELECT c.id, c.notification_id::text, c.tenant_id, COALESCE(c.approval_id::text, ''), c.channel,
       c.attempts, n.kind, COALESCE(a.run_id::text, ''), COALESCE(a.tool_name, ''),
       COALESCE(a.action_summary, ''), COALESCE(a.side_effect, ''), COALESCE(a.risk, ''),
       COALESCE(a.status, ''), COALESCE(a.resolved_by, ''), COALESCE(a.resolution_reason, ''),
       COALESCE(a.created_at, n.created_at), COALESCE(a.expires_at, n.created_at),
       COALESCE(a.arguments_view, '{}'::jsonb),
       COALESCE((SELECT p.ref FROM notification_deliveries p
                  WHERE p.approval_id = c.approval_id AND p.channel = c.channel
                    AND p.id < c.id AND p.ref <> ''
                  ORDER BY p.id DESC LIMIT 1), '')
  FROM claimed c
  JOIN notifications n ON n.id = c.notification_id
  LEFT JOIN approvals a ON a.id = c.approval_id
 ORDER BY c.id`

// notificationDeliveriesFinish records an attempt and settles its delivery:
// delivered, skipped or failed for good, or pending again at its next
// attempt. Only the lease holder of that attempt settles it: a replica
// whose lease ran out and was taken over changes nothing but the log.
const notificationDeliveriesFinish = `
WITH attempt AS (
  INSERT INTO notification_attempts (delivery_id, attempt, replica, started_at, latency_ms, http_status, outcome, error)
  VALUES ($1, $2, $3, $4, $5, $6, $7, $8)
  ON CONFLICT DO NOTHING)
UPDATE notification_deliveries
   SET status = $9, next_attempt_at = $10,
       ref = CASE WHEN $11 = '' THEN ref ELSE $11 END,
       last_error = $8,
       finished_at = CASE WHEN $9 = 'pending' THEN NULL ELSE $12::timestamptz END,
       claimed_by = NULL, claimed_until = NULL
 WHERE id = $1 AND claimed_by = $3 AND attempts = $2`

const notificationDeliveriesBacklog = `SELECT count(*) FROM notification_deliveries WHERE status = 'pending'`

// notificationDeliveriesRecent lists a tenant's newest deliveries with
// their attempts, for the console.
const notificationDeliveriesRecent = `
SELECT d.id, d.notification_id::text, n.kind, COALESCE(d.approval_id::text, ''), d.channel, d.status,
       d.attempts, d.last_error, d.created_at, d.next_attempt_at, d.finished_at,
       COALESCE((SELECT json_agg(json_build_object(
                   'attempt', t.attempt, 'replica', t.replica, 'started_at', t.started_at,
                   'latency_ms', t.latency_ms, 'http_status', t.http_status,
                   'outcome', t.outcome, 'error', t.error) ORDER BY t.attempt)
                   FROM notification_attempts t WHERE t.delivery_id = d.id), '[]')
  FROM notification_deliveries d
  JOIN notifications n ON n.id = d.notification_id
 WHERE d.tenant_id = $1
 ORDER BY d.created_at DESC, d.id DESC
 LIMIT $2`

// notificationRow is what a notification is made of when it is written.
type notificationRow struct {
	ID, TenantID, ApprovalID, Kind string
	Channels                       []string
	CreatedAt                      time.Time
}

func (n notificationRow) args() []any {
	return []any{n.ID, n.TenantID, nullUUID(n.ApprovalID), n.Kind, n.CreatedAt, n.Channels}
}

// queueNotificationsInsert is notificationsInsert queued on b.
func queueNotificationsInsert(b *pgx.Batch, n notificationRow) {
	b.Queue(notificationInsert, n.args()...)
}

func notificationsInsert(ctx context.Context, db DBTX, n notificationRow) error {
	if _, err := db.Exec(ctx, notificationInsert, n.args()...); err != nil {
		return fmt.Errorf("notification %s: %w", n.Kind, err)
	}
	return nil
}

// expiringCandidate is a pending approval due an "expiring soon"
// notification.
type expiringCandidate struct{ ID, TenantID, Risk string }

func notificationsExpiringCandidates(ctx context.Context, db DBTX, now time.Time, share float64, before time.Duration, limit int) ([]expiringCandidate, error) {
	rows, err := db.Query(ctx, notificationsExpiringDue, now, share, before, limit)
	if err != nil {
		return nil, fmt.Errorf("expiring approvals: %w", err)
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (expiringCandidate, error) {
		var c expiringCandidate
		err := r.Scan(&c.ID, &c.TenantID, &c.Risk)
		return c, err
	})
}

// claimedDelivery is one leased delivery and the approval it tells of, as
// it stands now (a message tells the approval's current state).
type claimedDelivery struct {
	ID             int64
	NotificationID string
	TenantID       string
	ApprovalID     string
	Channel        string
	Attempt        int
	Kind           string
	RunID          string
	Tool           string
	Summary        string
	SideEffect     string
	Risk           string
	Status         string
	ResolvedBy     string
	Reason         string
	CreatedAt      time.Time
	ExpiresAt      time.Time
	Arguments      json.RawMessage
	PriorRef       string
}

func notificationDeliveriesClaimDue(ctx context.Context, db DBTX, replica string, now, leaseUntil time.Time, limit int) ([]claimedDelivery, error) {
	rows, err := db.Query(ctx, notificationDeliveriesClaim, replica, leaseUntil, now, limit)
	if err != nil {
		return nil, fmt.Errorf("claim notification deliveries: %w", err)
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (claimedDelivery, error) {
		var d claimedDelivery
		err := r.Scan(&d.ID, &d.NotificationID, &d.TenantID, &d.ApprovalID, &d.Channel, &d.Attempt,
			&d.Kind, &d.RunID, &d.Tool, &d.Summary, &d.SideEffect, &d.Risk, &d.Status, &d.ResolvedBy,
			&d.Reason, &d.CreatedAt, &d.ExpiresAt, &d.Arguments, &d.PriorRef)
		return d, err
	})
}

// deliveryOutcome settles one attempt.
type deliveryOutcome struct {
	Outcome    string // attempt outcome: delivered, skipped, retry, failed
	Status     string // the delivery's status after it
	HTTPStatus int
	Error      string
	Ref        string
	StartedAt  time.Time
	Latency    time.Duration
	NextTry    time.Time
	FinishedAt time.Time
}

// notificationDeliveriesSettle reports whether the caller still held the
// lease (false: another replica took the delivery over).
func notificationDeliveriesSettle(ctx context.Context, db DBTX, d claimedDelivery, replica string, o deliveryOutcome) (bool, error) {
	tag, err := db.Exec(ctx, notificationDeliveriesFinish, d.ID, d.Attempt, replica, o.StartedAt,
		float64(o.Latency)/float64(time.Millisecond), o.HTTPStatus, o.Outcome, o.Error, o.Status,
		o.NextTry, o.Ref, o.FinishedAt)
	if err != nil {
		return false, fmt.Errorf("settle notification delivery: %w", err)
	}
	return tag.RowsAffected() == 1, nil
}

func notificationDeliveriesPending(ctx context.Context, db DBTX) (int, error) {
	var n int
	if err := db.QueryRow(ctx, notificationDeliveriesBacklog).Scan(&n); err != nil {
		return 0, fmt.Errorf("notification backlog: %w", err)
	}
	return n, nil
}

// NotificationDelivery is one delivery as the console lists it.
type NotificationDelivery struct {
	ID             int64
	NotificationID string
	Kind           string
	ApprovalID     string
	Channel        string
	Status         string
	Attempts       int
	LastError      string
	CreatedAt      time.Time
	NextAttemptAt  time.Time
	FinishedAt     *time.Time
	Tries          []NotificationAttempt
}

// NotificationAttempt is one try at a delivery.
type NotificationAttempt struct {
	Attempt    int       `json:"attempt"`
	Replica    string    `json:"replica"`
	StartedAt  time.Time `json:"started_at"`
	LatencyMS  float64   `json:"latency_ms"`
	HTTPStatus int       `json:"http_status"`
	Outcome    string    `json:"outcome"`
	Error      string    `json:"error"`
}

func notificationDeliveriesList(ctx context.Context, db DBTX, tenantID string, limit int) ([]NotificationDelivery, error) {
	rows, err := db.Query(ctx, notificationDeliveriesRecent, tenantID, limit)
	if err != nil {
		return nil, fmt.Errorf("list notification deliveries: %w", err)
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (NotificationDelivery, error) {
		var d NotificationDelivery
		var tries []byte
		if err := r.Scan(&d.ID, &d.NotificationID, &d.Kind, &d.ApprovalID, &d.Channel, &d.Status,
			&d.Attempts, &d.LastError, &d.CreatedAt, &d.NextAttemptAt, &d.FinishedAt, &tries); err != nil {
			return d, err
		}
		return d, json.Unmarshal(tries, &d.Tries)
	})
}

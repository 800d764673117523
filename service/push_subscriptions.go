package service

import (
	"context"
	"crypto/ecdh"
	"encoding/base64"
	"fmt"
	"net"
	"net/url"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/jackc/pgx/v5"

	"gatehouse/engine"
)

// Web Push subscription limits.
const (
	// MaxPushEndpoint bounds an endpoint URL; real push services use a few
	// hundred bytes.
	MaxPushEndpoint = 2048
	// maxPushUserAgent bounds the label kept to tell a principal's devices
	// apart.
	maxPushUserAgent = 200
	// maxPushPerPrincipal bounds one principal's subscriptions: each
	// notification is sent to every one of them, so an approver cannot make
	// a delivery fan out without limit. The oldest go first.
	maxPushPerPrincipal = 20
	// pushP256dhLen is an uncompressed P-256 point, pushAuthLen the auth
	// secret (RFC 8291 §3).
	pushP256dhLen = 65
	pushAuthLen   = 16
)

// PushSubscriptionInput is a browser's subscription as its page posts it
// (PushSubscription.toJSON), with the browser's User-Agent as a label.
type PushSubscriptionInput struct {
	Endpoint  string
	P256dh    string // base64url, padded or not
	Auth      string // base64url, padded or not
	UserAgent string
}

// PushSubscriptionRow is a stored subscription. Keys are unpadded base64url.
type PushSubscriptionRow struct {
	ID            string
	TenantID      string
	PrincipalID   string
	Endpoint      string
	P256dh        string
	Auth          string
	UserAgent     string
	CreatedAt     time.Time
	LastSuccessAt *time.Time
}

// All SQL of push_subscriptions (migrations/00013_push_subscriptions.sql).
const (
	pushSubscriptionColumns = `id, tenant_id, principal_id, endpoint, p256dh, auth, user_agent, created_at, last_success_at`

	// A browser re-subscribing (new keys) or a second principal enabling
	// notifications in the same browser takes the row over; the success
	// record stays only with the principal who earned it.
	pushSubscriptionUpsert = `
INSERT INTO push_subscriptions (id, tenant_id, principal_id, endpoint, p256dh, auth, user_agent, created_at)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8)
ON CONFLICT (tenant_id, endpoint) DO UPDATE
   SET principal_id = EXCLUDED.principal_id,
       p256dh = EXCLUDED.p256dh,
       auth = EXCLUDED.auth,
       user_agent = EXCLUDED.user_agent,
       created_at = EXCLUDED.created_at,
       last_success_at = CASE WHEN push_subscriptions.principal_id = EXCLUDED.principal_id
                              THEN push_subscriptions.last_success_at END`

	pushSubscriptionTrimPrincipal = `
DELETE FROM push_subscriptions
 WHERE id IN (SELECT id FROM push_subscriptions
               WHERE tenant_id = $1 AND principal_id = $2
               ORDER BY created_at DESC, id DESC
              OFFSET $3)`

	pushSubscriptionDeleteEndpoint = `
DELETE FROM push_subscriptions WHERE tenant_id = $1 AND principal_id = $2 AND endpoint = $3`

	pushSubscriptionListTenant = `
SELECT ` + pushSubscriptionColumns + `
  FROM push_subscriptions
 WHERE tenant_id = $1
 ORDER BY principal_id, created_at DESC, id`

	pushSubscriptionDeleteIDs = `
DELETE FROM push_subscriptions WHERE tenant_id = $1 AND id = ANY($2::uuid[])`

	pushSubscriptionMarkSucceeded = `
UPDATE push_subscriptions SET last_success_at = $3
 WHERE tenant_id = $1 AND id = ANY($2::uuid[])`
)

func pushSubscriptionsUpsert(ctx context.Context, db DBTX, r PushSubscriptionRow) error {
	_, err := db.Exec(ctx, pushSubscriptionUpsert, r.ID, r.TenantID, r.PrincipalID, r.Endpoint, r.P256dh, r.Auth, r.UserAgent, r.CreatedAt)
	return err
}

// pushSubscriptionsTrimPrincipal keeps a principal's newest keep rows.
func pushSubscriptionsTrimPrincipal(ctx context.Context, db DBTX, tenantID, principalID string, keep int) error {
	_, err := db.Exec(ctx, pushSubscriptionTrimPrincipal, tenantID, principalID, keep)
	return err
}

func pushSubscriptionsDeleteEndpoint(ctx context.Context, db DBTX, tenantID, principalID, endpoint string) error {
	_, err := db.Exec(ctx, pushSubscriptionDeleteEndpoint, tenantID, principalID, endpoint)
	return err
}

func pushSubscriptionsListTenant(ctx context.Context, db DBTX, tenantID string) ([]PushSubscriptionRow, error) {
	rows, err := db.Query(ctx, pushSubscriptionListTenant, tenantID)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(row pgx.CollectableRow) (PushSubscriptionRow, error) {
		var r PushSubscriptionRow
		err := row.Scan(&r.ID, &r.TenantID, &r.PrincipalID, &r.Endpoint, &r.P256dh, &r.Auth, &r.UserAgent, &r.CreatedAt, &r.LastSuccessAt)
		return r, err
	})
}

func pushSubscriptionsDeleteIDs(ctx context.Context, db DBTX, tenantID string, ids []string) error {
	_, err := db.Exec(ctx, pushSubscriptionDeleteIDs, tenantID, ids)
	return err
}

func pushSubscriptionsMarkSucceeded(ctx context.Context, db DBTX, tenantID string, ids []string, at time.Time) error {
	_, err := db.Exec(ctx, pushSubscriptionMarkSucceeded, tenantID, ids, at)
	return err
}

// SubscribePush stores the browser subscription of a principal, or
// replaces the tenant's row for the same endpoint (the browser subscribed
// again with new keys, or another principal signed in to it: a browser
// notifies one person). The principal's oldest subscriptions beyond
// maxPushPerPrincipal are dropped in the same transaction. An endpoint
// that is not an https URL (http only to a loopback host), or keys that are
// not a P-256 point and a 16-byte secret, are an InvalidError. The caller
// checks that the principal may resolve approvals.
func (s *Service) SubscribePush(ctx context.Context, tenantID, principalID string, sub PushSubscriptionInput) error {
	row, err := validPushSubscription(sub)
	if err != nil {
		return err
	}
	row.ID, row.TenantID, row.PrincipalID, row.CreatedAt = newID(), tenantID, principalID, s.now()
	err = s.withTx(ctx, func(tx pgx.Tx, _ *afterCommit) error {
		if err := pushSubscriptionsUpsert(ctx, tx, row); err != nil {
			return err
		}
		return pushSubscriptionsTrimPrincipal(ctx, tx, tenantID, principalID, maxPushPerPrincipal)
	})
	if err != nil {
		return fmt.Errorf("push: subscribe: %w", TranslateDBError(err))
	}
	return nil
}

// UnsubscribePush removes the principal's subscription of endpoint. An
// endpoint the principal does not hold (never subscribed, already removed,
// another principal's or another tenant's) changes nothing and is no error,
// so a browser's "disable" is safe to repeat.
func (s *Service) UnsubscribePush(ctx context.Context, tenantID, principalID, endpoint string) error {
	if err := pushSubscriptionsDeleteEndpoint(ctx, s.pool, tenantID, principalID, endpoint); err != nil {
		return fmt.Errorf("push: unsubscribe: %w", TranslateDBError(err))
	}
	return nil
}

// PushSubscriptions lists every subscription of the tenant, by principal
// and newest first. The delivery worker keeps those of principals who may
// still resolve approvals.
func (s *Service) PushSubscriptions(ctx context.Context, tenantID string) ([]PushSubscriptionRow, error) {
	rows, err := pushSubscriptionsListTenant(ctx, s.pool, tenantID)
	if err != nil {
		return nil, fmt.Errorf("push: list: %w", TranslateDBError(err))
	}
	return rows, nil
}

// DeletePushSubscriptions removes the tenant's subscriptions among ids,
// such as those the push service answered 404 or 410 for. Ids of other
// tenants, or already gone, are left alone; an id that is not a uuid is an
// InvalidError.
func (s *Service) DeletePushSubscriptions(ctx context.Context, tenantID string, ids []string) error {
	if err := validIDs(ids); err != nil {
		return err
	}
	if err := pushSubscriptionsDeleteIDs(ctx, s.pool, tenantID, ids); err != nil {
		return fmt.Errorf("push: delete: %w", TranslateDBError(err))
	}
	return nil
}

// MarkPushSubscriptionsSucceeded records that a push to the tenant's
// subscriptions among ids was accepted now, so the console can tell a
// device that still receives from a stale one.
func (s *Service) MarkPushSubscriptionsSucceeded(ctx context.Context, tenantID string, ids []string) error {
	if err := validIDs(ids); err != nil {
		return err
	}
	if err := pushSubscriptionsMarkSucceeded(ctx, s.pool, tenantID, ids, s.now()); err != nil {
		return fmt.Errorf("push: mark succeeded: %w", TranslateDBError(err))
	}
	return nil
}

// validIDs refuses an id PostgreSQL would not cast to uuid, so a bad id is
// the caller's error rather than a failed statement.
func validIDs(ids []string) error {
	for _, id := range ids {
		if !engine.ValidUUID(id) {
			return &InvalidError{Msg: "push: subscription ids must be uuids"}
		}
	}
	return nil
}

// validPushSubscription checks a posted subscription and returns it with
// its keys in unpadded base64url and its label cleaned.
func validPushSubscription(sub PushSubscriptionInput) (PushSubscriptionRow, error) {
	if err := validPushEndpoint(sub.Endpoint); err != nil {
		return PushSubscriptionRow{}, err
	}
	p256dh, err := decodePushKey(sub.P256dh, "p256dh", pushP256dhLen)
	if err != nil {
		return PushSubscriptionRow{}, err
	}
	// A point off the curve could never be encrypted to: refuse it now,
	// not at every delivery.
	if _, err := ecdh.P256().NewPublicKey(p256dh); err != nil {
		return PushSubscriptionRow{}, &InvalidError{Msg: "keys.p256dh is not a P-256 public key"}
	}
	auth, err := decodePushKey(sub.Auth, "auth", pushAuthLen)
	if err != nil {
		return PushSubscriptionRow{}, err
	}
	return PushSubscriptionRow{
		Endpoint:  sub.Endpoint,
		P256dh:    base64.RawURLEncoding.EncodeToString(p256dh),
		Auth:      base64.RawURLEncoding.EncodeToString(auth),
		UserAgent: pushLabel(sub.UserAgent),
	}, nil
}

// validPushEndpoint accepts an absolute https URL with a host and no user
// information, at most MaxPushEndpoint bytes. Plain http is accepted only
// for a loopback host, where tests run their push service; a real push
// service is always https (RFC 8030 §8).
func validPushEndpoint(endpoint string) error {
	if endpoint == "" {
		return &InvalidError{Msg: "endpoint is required"}
	}
	if len(endpoint) > MaxPushEndpoint {
		return &InvalidError{Msg: fmt.Sprintf("endpoint is longer than %d bytes", MaxPushEndpoint)}
	}
	u, err := url.Parse(endpoint)
	if err != nil || u.Host == "" || u.User != nil || u.Opaque != "" {
		return &InvalidError{Msg: "endpoint must be an absolute https URL"}
	}
	switch u.Scheme {
	case "https":
		return nil
	case "http":
		if isLoopbackHost(u.Hostname()) {
			return nil
		}
	}
	return &InvalidError{Msg: "endpoint must be an absolute https URL"}
}

func isLoopbackHost(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// decodePushKey decodes a base64url key (browsers send it unpadded; padded
// is accepted) of exactly n bytes.
func decodePushKey(v, name string, n int) ([]byte, error) {
	if v == "" {
		return nil, &InvalidError{Msg: "keys." + name + " is required"}
	}
	b, err := base64.RawURLEncoding.DecodeString(strings.TrimRight(v, "="))
	if err != nil || len(b) != n {
		return nil, &InvalidError{Msg: fmt.Sprintf("keys.%s must be %d bytes in base64url", name, n)}
	}
	return b, nil
}

// pushLabel is the User-Agent kept beside a subscription: printable text
// only, spaces collapsed, cut at maxPushUserAgent bytes on a character
// boundary. It is a hint for the human, never parsed.
func pushLabel(ua string) string {
	fields := strings.FieldsFunc(strings.ToValidUTF8(ua, ""), func(r rune) bool {
		return unicode.IsSpace(r) || !unicode.IsPrint(r)
	})
	label := strings.Join(fields, " ")
	if len(label) <= maxPushUserAgent {
		return label
	}
	cut := maxPushUserAgent
	for cut > 0 && !utf8.RuneStart(label[cut]) {
		cut--
	}
	return label[:cut]
}

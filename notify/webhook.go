package notify

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// Standard Webhooks header names (https://www.standardwebhooks.com).
const (
	HeaderWebhookID        = "webhook-id"
	HeaderWebhookTimestamp = "webhook-timestamp"
	HeaderWebhookSignature = "webhook-signature"
)

// secretPrefix marks a Standard Webhooks secret: whsec_ then the base64 key.
const secretPrefix = "whsec_"

// minSecretBytes is the shortest key accepted (Standard Webhooks: 24 to 64
// random bytes).
const minSecretBytes = 24

// ErrUnverified is wrapped by every error Verify returns.
var ErrUnverified = errors.New("webhook not verified")

// WebhookPayload is the JSON body of a webhook (and what the log channel
// prints): the Standard Webhooks envelope around one notification.
type WebhookPayload struct {
	Type      string      `json:"type"`      // "approval." + kind
	Timestamp time.Time   `json:"timestamp"` // Message.SentAt
	Data      WebhookData `json:"data"`
}

// WebhookData is one notification. Summary, Tool, Reason and ResolvedBy are
// plain text (control characters removed, cut to a bound) but still untrusted:
// escape them for whatever you render them into.
type WebhookData struct {
	NotificationID string         `json:"notification_id"` // same as the webhook-id header: deduplicate on it
	Kind           string         `json:"kind"`
	TenantID       string         `json:"tenant_id"`
	ApprovalID     string         `json:"approval_id"`
	RunID          string         `json:"run_id"`
	Tool           string         `json:"tool"`
	Summary        string         `json:"summary"`
	SideEffect     string         `json:"side_effect"`
	Risk           string         `json:"risk"`
	Status         string         `json:"status"`
	ResolvedBy     string         `json:"resolved_by,omitempty"`
	Reason         string         `json:"reason,omitempty"`
	CreatedAt      time.Time      `json:"created_at"`
	ExpiresAt      time.Time      `json:"expires_at"`
	SecondsLeft    int64          `json:"seconds_left"`
	URL            string         `json:"url"`
	Arguments      map[string]any `json:"arguments,omitempty"` // only for channels with include_arguments: the redacted view
}

// payload renders m; arguments only when the channel is opted in.
func payload(m Message, includeArguments bool) WebhookPayload {
	d := WebhookData{
		NotificationID: m.ID,
		Kind:           m.Kind,
		TenantID:       m.TenantID,
		ApprovalID:     m.ApprovalID,
		RunID:          m.RunID,
		Tool:           plain(m.Tool, maxField),
		Summary:        plain(m.Summary, maxPayload),
		SideEffect:     m.SideEffect,
		Risk:           m.Risk,
		Status:         m.Status,
		ResolvedBy:     plain(m.ResolvedBy, maxField),
		Reason:         plain(m.Reason, maxPayload),
		CreatedAt:      m.CreatedAt.UTC(),
		ExpiresAt:      m.ExpiresAt.UTC(),
		SecondsLeft:    int64(timeLeft(m) / time.Second),
		URL:            m.URL,
	}
	if includeArguments {
		d.Arguments = m.Arguments
	}
	return WebhookPayload{Type: "approval." + m.Kind, Timestamp: m.SentAt.UTC(), Data: d}
}

type webhook struct {
	name     string
	url      string
	keys     [][]byte
	withArgs bool
	post     poster
}

func (w *webhook) Name() string           { return w.name }
func (w *webhook) Type() string           { return TypeWebhook }
func (w *webhook) IncludeArguments() bool { return w.withArgs }

// Deliver posts the signed payload; any 2xx is delivered. The webhook-id is
// the notification id, so a receiver drops the repeat a crash between send
// and commit can cause.
func (w *webhook) Deliver(ctx context.Context, d Delivery) (Result, error) {
	if d.ID == "" {
		return Result{}, Permanent(errors.New("a webhook needs the notification id for webhook-id"))
	}
	body, err := json.Marshal(payload(d.Message, w.withArgs))
	if err != nil {
		return Result{}, Permanent(fmt.Errorf("encode payload: %w", err))
	}
	ts := strconv.FormatInt(d.SentAt.Unix(), 10)
	h := http.Header{}
	h.Set("Content-Type", "application/json")
	h.Set(HeaderWebhookID, d.ID)
	h.Set(HeaderWebhookTimestamp, ts)
	h.Set(HeaderWebhookSignature, sign(w.keys, d.ID, ts, body))
	code, _, err := w.post.post(ctx, w.url, h, body)
	return Result{Status: code}, err
}

// sign returns the webhook-signature value: one "v1,<base64>" per key,
// space-separated, so a receiver holding either the old or the new secret
// verifies during a rotation.
func sign(keys [][]byte, id, ts string, body []byte) string {
	sigs := make([]string, len(keys))
	for i, k := range keys {
		sigs[i] = "v1," + base64.StdEncoding.EncodeToString(mac(k, id, ts, body))
	}
	return strings.Join(sigs, " ")
}

func mac(key []byte, id, ts string, body []byte) []byte {
	m := hmac.New(sha256.New, key)
	m.Write([]byte(id + "." + ts + "."))
	m.Write(body)
	return m.Sum(nil)
}

// decodeSecret returns the key of a "whsec_<base64>" secret.
func decodeSecret(secret string) ([]byte, error) {
	b64, ok := strings.CutPrefix(secret, secretPrefix)
	if !ok {
		return nil, errors.New("a webhook secret has the form whsec_<base64>")
	}
	key, err := base64.StdEncoding.DecodeString(b64)
	if err != nil {
		return nil, errors.New("a webhook secret's part after whsec_ is not standard base64")
	}
	if len(key) < minSecretBytes {
		return nil, fmt.Errorf("a webhook secret's key has %d bytes; use at least %d random bytes", len(key), minSecretBytes)
	}
	return key, nil
}

// Verify checks a Standard Webhooks request as a receiver should: the
// timestamp is within tolerance of now (either way, against replays), and
// one of the signatures in the header is the HMAC of id.timestamp.body under
// one of the secrets ("whsec_<base64>"; pass the old and the new one during a
// rotation). Every error wraps ErrUnverified.
func Verify(secrets []string, header http.Header, body []byte, now time.Time, tolerance time.Duration) error {
	id, ts, sigs := header.Get(HeaderWebhookID), header.Get(HeaderWebhookTimestamp), header.Get(HeaderWebhookSignature)
	if id == "" || ts == "" || sigs == "" {
		return fmt.Errorf("%w: missing webhook-id, webhook-timestamp or webhook-signature", ErrUnverified)
	}
	sec, err := strconv.ParseInt(ts, 10, 64)
	if err != nil {
		return fmt.Errorf("%w: webhook-timestamp is not unix seconds", ErrUnverified)
	}
	if d := now.Sub(time.Unix(sec, 0)); d > tolerance || d < -tolerance {
		return fmt.Errorf("%w: webhook-timestamp is outside the tolerance", ErrUnverified)
	}
	for _, s := range secrets {
		key, err := decodeSecret(s)
		if err != nil {
			return fmt.Errorf("%w: %w", ErrUnverified, err)
		}
		want := mac(key, id, ts, body)
		for sig := range strings.FieldsSeq(sigs) {
			b64, ok := strings.CutPrefix(sig, "v1,")
			if !ok {
				continue
			}
			got, err := base64.StdEncoding.DecodeString(b64)
			if err == nil && hmac.Equal(got, want) {
				return nil
			}
		}
	}
	return fmt.Errorf("%w: no signature matches", ErrUnverified)
}

package notify

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	webpush "github.com/SherClockHolmes/webpush-go"
)

// VAPIDKeys identify this server to push services (RFC 8292), base64url as
// webpush-go and the browser's applicationServerKey use them.
type VAPIDKeys struct{ Public, Private string }

// GenerateVAPIDKeys makes a new P-256 key pair for VAPID.
func GenerateVAPIDKeys() (VAPIDKeys, error) {
	priv, pub, err := webpush.GenerateVAPIDKeys()
	if err != nil {
		return VAPIDKeys{}, fmt.Errorf("generate VAPID keys: %w", err)
	}
	return VAPIDKeys{Public: pub, Private: priv}, nil
}

// Bounds on a push message's TTL: a request lives while its approval is open
// (at least a minute, or a sleeping phone drops it), an outcome long enough
// to replace the stale request whenever the phone next wakes.
const (
	pushMinTTL      = time.Minute
	pushOutcomeTTL  = 24 * time.Hour
	pushMaxTTL      = 28 * 24 * time.Hour
	pushTopicLength = 32 // RFC 8030: at most 32 base64url characters
)

// pushUrgency by risk (RFC 8030 §5.3); outcomes are never urgent.
var pushUrgency = map[string]webpush.Urgency{
	"critical": webpush.UrgencyHigh, "high": webpush.UrgencyHigh,
	"medium": webpush.UrgencyNormal, "low": webpush.UrgencyLow,
}

// PushPayload is the JSON the service worker receives (decrypted).
type PushPayload struct {
	Title string `json:"title"`
	Body  string `json:"body"`
	URL   string `json:"url"`
	Tag   string `json:"tag"` // "approval-"+id: a later notification replaces the earlier one
	Kind  string `json:"kind"`
	Risk  string `json:"risk"`
}

type webPush struct {
	name       string
	keys       VAPIDKeys
	subscriber string // without "mailto:": webpush-go adds it to anything not https:
	client     *http.Client
	timeout    time.Duration
}

func (w *webPush) Name() string           { return w.name }
func (w *webPush) Type() string           { return TypeWebPush }
func (w *webPush) IncludeArguments() bool { return false }

// Deliver sends the encrypted payload to every subscription. A 404 or 410
// lists the subscription in Result.Gone (the browser unsubscribed); a
// delivery with no subscriptions is delivered. If any push service failed
// in a way worth retrying, the error is retryable and the whole delivery is
// repeated: subscriptions that already got it get it again with the same
// tag, which replaces rather than adds a notification.
func (w *webPush) Deliver(ctx context.Context, d Delivery) (Result, error) {
	m := d.Message
	body, err := json.Marshal(PushPayload{
		Title: headline(m),
		Body:  truncate(plain(m.Summary, maxSummary)+"\n"+status(m), 1000),
		URL:   m.URL, Tag: "approval-" + m.ApprovalID, Kind: m.Kind, Risk: m.Risk,
	})
	if err != nil {
		return Result{}, Permanent(fmt.Errorf("encode payload: %w", err))
	}
	opts := &webpush.Options{
		HTTPClient:      w.client,
		Subscriber:      w.subscriber,
		VAPIDPublicKey:  w.keys.Public,
		VAPIDPrivateKey: w.keys.Private,
		Topic:           pushTopic(m.ApprovalID),
		TTL:             int(pushTTL(m) / time.Second),
		Urgency:         pushUrgency[m.Risk],
	}
	if terminal(m.Kind) {
		opts.Urgency = webpush.UrgencyLow
	}
	var res Result
	var retry, fail []string
	for _, s := range d.Subscriptions {
		code, err := w.send(ctx, body, s, opts)
		if code != 0 {
			res.Status = code
		}
		switch {
		case code == http.StatusNotFound || code == http.StatusGone:
			res.Gone = append(res.Gone, s.ID)
		case err == nil:
		case IsPermanent(err):
			fail = append(fail, s.ID+": "+err.Error())
		default:
			retry = append(retry, s.ID+": "+err.Error())
		}
	}
	switch {
	case len(retry) > 0:
		return res, fmt.Errorf("web push: %s", strings.Join(append(retry, fail...), "; "))
	case len(fail) > 0:
		return res, Permanent(fmt.Errorf("web push: %s", strings.Join(fail, "; ")))
	}
	return res, nil
}

// send pushes to one subscription and classifies the answer like any other
// HTTP delivery; errors name neither the endpoint nor the keys.
func (w *webPush) send(ctx context.Context, body []byte, s PushSubscription, opts *webpush.Options) (int, error) {
	ctx, cancel := context.WithTimeout(ctx, w.timeout)
	defer cancel()
	sub := &webpush.Subscription{Endpoint: s.Endpoint, Keys: webpush.Keys{P256dh: s.P256dh, Auth: s.Auth}}
	if !absoluteHTTP(s.Endpoint) {
		return 0, Permanent(errors.New("the subscription's endpoint is not an absolute http(s) URL"))
	}
	resp, err := webpush.SendNotificationWithContext(ctx, body, sub, opts)
	if err != nil {
		// The client's errors are *url.Error (network, timeout: worth a
		// retry); anything before the request is the subscription's keys,
		// which no retry repairs.
		var ue *url.Error
		if errors.As(err, &ue) {
			return 0, transportError(err)
		}
		return 0, Permanent(errors.New("cannot encrypt for the subscription: " + plain(err.Error(), maxField)))
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(io.LimitReader(resp.Body, maxResponse))
	return resp.StatusCode, statusError(resp.StatusCode, data)
}

// pushTTL is how long the push service keeps the message for an offline
// device.
func pushTTL(m Message) time.Duration {
	if terminal(m.Kind) {
		return pushOutcomeTTL
	}
	return min(max(timeLeft(m), pushMinTTL), pushMaxTTL)
}

// pushTopic lets the push service replace a message still queued for an
// offline device by a later one about the same approval; an approval id is
// longer than a topic may be, so the topic is a digest of it.
func pushTopic(approvalID string) string {
	sum := sha256.Sum256([]byte(approvalID))
	return base64.RawURLEncoding.EncodeToString(sum[:])[:pushTopicLength]
}

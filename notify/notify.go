// Package notify delivers approval notifications to the channels an operator
// configures (CONSOLE_NOTIFY): a signed webhook, Slack, ntfy, Web Push and the
// log. It knows nothing of the database: the outbox in service/ decides what
// to send and when, hands a Delivery to a Channel, and records the Result.
// Every channel is a plain HTTP client; a failure is an error the worker
// retries unless Permanent marks it as one retrying cannot fix.
package notify

import (
	"context"
	"errors"
	"time"
)

// Kinds of notification.
const (
	KindRequested   = "requested"   // approval created (pending)
	KindExpiring    = "expiring"    // pending approval near its expiry
	KindResolved    = "resolved"    // approved or denied by a human (Status says which)
	KindExpired     = "expired"     // the reaper expired it (a denial)
	KindCancelled   = "cancelled"   // run cancelled
	KindInvalidated = "invalidated" // revalidation voided the approval
	KindTest        = "test"        // console test-send
)

// Channel types.
const (
	TypeWebhook = "webhook"
	TypeSlack   = "slack"
	TypeNtfy    = "ntfy"
	TypeWebPush = "webpush"
	TypeLog     = "log"
)

// Message is what every channel renders. It carries no argument values unless
// Arguments != nil: the outbox fills it only for channels configured with
// include_arguments: true, and then with the already-redacted, truncated
// arguments view. Channels drop it anyway when they are not opted in.
type Message struct {
	ID         string // stable idempotency id (one per notification, same on every retry)
	Kind       string
	TenantID   string
	ApprovalID string
	RunID      string
	Tool       string
	Summary    string // action summary: untrusted text from the agent, rendered as plain text only
	SideEffect string
	Risk       string // low|medium|high|critical
	Status     string // pending|approved|denied|expired|cancelled
	ResolvedBy string
	Reason     string    // resolution reason, if any
	CreatedAt  time.Time // when the approval was requested
	ExpiresAt  time.Time
	SentAt     time.Time // now, from the caller's clock (time left = ExpiresAt-SentAt)
	URL        string    // deep link: CONSOLE_BASE_URL + "/approvals/" + ApprovalID
	Arguments  map[string]any
}

// PushSubscription is a browser's Web Push subscription (keys base64url, as
// PushSubscription.toJSON() gives them).
type PushSubscription struct{ ID, Endpoint, P256dh, Auth string }

// Delivery is one attempt at one channel.
type Delivery struct {
	Message
	// PriorRef is the Ref a previous delivery of the same approval to the
	// same channel returned ("" if none): Slack updates that message in place.
	PriorRef string
	// Subscriptions are the tenant approvers' browsers (webpush only).
	Subscriptions []PushSubscription
}

// Result is what a delivered attempt leaves for the attempt log and for later
// deliveries of the same approval.
type Result struct {
	Ref    string   // channel's reference for later updates (Slack "channel:ts", ntfy message id)
	Gone   []string // webpush: subscription IDs the push service answered 404/410 for (caller deletes them)
	Status int      // last HTTP status seen, 0 if none
}

// Channel is one configured destination.
type Channel interface {
	Name() string // configured name
	Type() string // webhook|slack|ntfy|webpush|log
	IncludeArguments() bool
	// Deliver sends d once. On error the Result still carries the last HTTP
	// status seen, for the attempt log.
	Deliver(ctx context.Context, d Delivery) (Result, error)
}

type permanentError struct{ err error }

func (e *permanentError) Error() string { return e.err.Error() }
func (e *permanentError) Unwrap() error { return e.err }

// Permanent marks an error that retrying cannot fix (a 4xx other than
// 408/425/429, a refused token, bad configuration): the worker gives up at
// once instead of spending its attempts. Permanent(nil) is nil.
func Permanent(err error) error {
	if err == nil || IsPermanent(err) {
		return err
	}
	return &permanentError{err: err}
}

// IsPermanent reports whether err, or an error it wraps, was marked Permanent.
// Everything else (5xx, 429, timeouts, connection refused) is worth a retry.
func IsPermanent(err error) bool {
	var p *permanentError
	return errors.As(err, &p)
}

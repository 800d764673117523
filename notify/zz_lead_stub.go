// Package notify: TEMPORARY stub of the helper's API (deleted at merge).
package notify

import (
	"context"
	"errors"
	"time"
)

const (
	KindRequested   = "requested"
	KindExpiring    = "expiring"
	KindResolved    = "resolved"
	KindExpired     = "expired"
	KindCancelled   = "cancelled"
	KindInvalidated = "invalidated"
	KindTest        = "test"
)

type Message struct {
	ID         string
	Kind       string
	TenantID   string
	ApprovalID string
	RunID      string
	Tool       string
	Summary    string
	SideEffect string
	Risk       string
	Status     string
	ResolvedBy string
	Reason     string
	CreatedAt  time.Time
	ExpiresAt  time.Time
	SentAt     time.Time
	URL        string
	Arguments  map[string]any
}

type PushSubscription struct{ ID, Endpoint, P256dh, Auth string }

type Delivery struct {
	Message
	PriorRef      string
	Subscriptions []PushSubscription
}

type Result struct {
	Ref    string
	Gone   []string
	Status int
}

type Channel interface {
	Name() string
	Type() string
	IncludeArguments() bool
	Deliver(ctx context.Context, d Delivery) (Result, error)
}

type permanent struct{ error }

func (p permanent) Unwrap() error { return p.error }

func Permanent(err error) error { return permanent{err} }

func IsPermanent(err error) bool {
	var p permanent
	return errors.As(err, &p)
}

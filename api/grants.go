package api

import (
	"time"

	"gatehouse/engine"
)

// TaskGrantOffer is the server-authored offer a browser.act approval
// carries when its target falls in a site scope the operator configured
// (ADR-0129): what approve_for_task would grant. The model never authors
// one.
type TaskGrantOffer struct {
	Origin          string `json:"origin"`
	PathPrefix      string `json:"path_prefix"`
	DurationSeconds int    `json:"duration_seconds"`
	ActionBudget    int    `json:"action_budget"`
}

// Scope is the offer's origin and path prefix, which an approve_for_task
// request repeats.
func (o TaskGrantOffer) Scope() engine.SiteScope {
	return engine.SiteScope{Origin: o.Origin, PathPrefix: o.PathPrefix}
}

// Browser task grant states, derived at read time from expiry, uses and
// revocation.
const (
	GrantActive    = "active"
	GrantExpired   = "expired"
	GrantExhausted = "exhausted"
	GrantRevoked   = "revoked"
)

// BrowserTaskGrant is one grant of a session: what it covers, how much of
// it is left (uses_left, seconds_left, both as of the read) and who made
// or ended it.
type BrowserTaskGrant struct {
	ID          string     `json:"id"`
	SessionID   string     `json:"session_id"`
	RunID       string     `json:"run_id"`
	ApprovalID  string     `json:"approval_id"`
	Origin      string     `json:"origin"`
	PathPrefix  string     `json:"path_prefix"`
	Budget      int        `json:"budget"`
	Uses        int        `json:"uses"`
	UsesLeft    int        `json:"uses_left"`
	SecondsLeft int        `json:"seconds_left"`
	Status      string     `json:"status"`
	CreatedBy   string     `json:"created_by"`
	CreatedAt   time.Time  `json:"created_at"`
	ExpiresAt   time.Time  `json:"expires_at"`
	RevokedBy   string     `json:"revoked_by,omitempty"`
	RevokedAt   *time.Time `json:"revoked_at,omitempty"`
}

// BrowserTaskGrantList is GET /v1/sessions/{session_id}/browser-grants.
type BrowserTaskGrantList struct {
	Items []BrowserTaskGrant `json:"items"`
}

// Event types of browser task grants.
const (
	EventBrowserGrantCreated = "browser.grant.created"
	EventBrowserGrantUsed    = "browser.grant.used"
	EventBrowserGrantRevoked = "browser.grant.revoked"
)

// BrowserGrantCreatedPayload is browser.grant.created: an approve_for_task
// resolution made a grant.
type BrowserGrantCreatedPayload struct {
	GrantID    string    `json:"grant_id"`
	ApprovalID string    `json:"approval_id"`
	Origin     string    `json:"origin"`
	PathPrefix string    `json:"path_prefix"`
	Budget     int       `json:"budget"`
	ExpiresAt  time.Time `json:"expires_at"`
	CreatedBy  string    `json:"created_by"`
}

// BrowserGrantUsedPayload is browser.grant.used: the grant authorized an
// invocation; Uses counts this one.
type BrowserGrantUsedPayload struct {
	GrantID      string `json:"grant_id"`
	InvocationID string `json:"invocation_id"`
	Uses         int    `json:"uses"`
	Budget       int    `json:"budget"`
}

// BrowserGrantRevokedPayload is browser.grant.revoked.
type BrowserGrantRevokedPayload struct {
	GrantID   string `json:"grant_id"`
	RevokedBy string `json:"revoked_by"`
	Uses      int    `json:"uses"`
}

func (BrowserGrantCreatedPayload) EventType() string { return EventBrowserGrantCreated }
func (BrowserGrantUsedPayload) EventType() string    { return EventBrowserGrantUsed }
func (BrowserGrantRevokedPayload) EventType() string { return EventBrowserGrantRevoked }

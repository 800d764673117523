package api

import "time"

// ConsentInput is POST /v1/sessions/{session_id}/consents: consent to one
// exact action of the session, ahead of time. The arguments are the ones
// the agent will propose; the server keeps only their normalized hash.
type ConsentInput struct {
	ToolName  string         `json:"tool_name"`
	Arguments map[string]any `json:"arguments"`
	// ExpiresInSeconds is how long the consent lasts: 1 to 1800, default
	// 1800 (thirty minutes).
	ExpiresInSeconds int `json:"expires_in_seconds,omitempty"`
}

// Consent states.
const (
	ConsentLive     = "live"
	ConsentConsumed = "consumed"
	ConsentExpired  = "expired"
)

// OwnerConsent is one recorded consent.
type OwnerConsent struct {
	ID            string     `json:"id"`
	SessionID     string     `json:"session_id"`
	ToolName      string     `json:"tool_name"`
	ArgumentsHash string     `json:"arguments_hash"`
	CreatedBy     string     `json:"created_by"`
	CreatedAt     time.Time  `json:"created_at"`
	ExpiresAt     time.Time  `json:"expires_at"`
	Status        string     `json:"status"`
	ConsumedAt    *time.Time `json:"consumed_at,omitempty"`
	ApprovalID    string     `json:"approval_id,omitempty"`
}

// OwnerConsentList is GET /v1/sessions/{session_id}/consents.
type OwnerConsentList struct {
	Items []OwnerConsent `json:"items"`
}

// Event types of owner consent.
const (
	EventConsentRecorded = "consent.recorded"
	EventConsentConsumed = "consent.consumed"
)

// ConsentRecordedPayload is consent.recorded (no run: the consent is the
// session's).
type ConsentRecordedPayload struct {
	ConsentID     string    `json:"consent_id"`
	SessionID     string    `json:"session_id"`
	ToolName      string    `json:"tool_name"`
	ArgumentsHash string    `json:"arguments_hash"`
	CreatedBy     string    `json:"created_by"`
	ExpiresAt     time.Time `json:"expires_at"`
}

// ConsentConsumedPayload is consent.consumed, on the run whose proposal
// it satisfied, between approval.requested and approval.resolved.
type ConsentConsumedPayload struct {
	ConsentID    string `json:"consent_id"`
	ApprovalID   string `json:"approval_id"`
	InvocationID string `json:"invocation_id"`
	CreatedBy    string `json:"created_by"`
}

func (ConsentRecordedPayload) EventType() string { return EventConsentRecorded }
func (ConsentConsumedPayload) EventType() string { return EventConsentConsumed }

// Package api is the JSON API's wire contract: the resources (runs,
// invocations, approvals, events and one payload struct per event type),
// the request bodies and results, the status and event constants, the
// error body and the OpenAPI document. The service, the handlers and the
// Go client share this one definition of each. It is a leaf: it imports
// the standard library and the engine's vocabulary only, so a client links
// no database driver, YAML parser or rules loader.
package api

import (
	_ "embed"

	"gatehouse/engine"
)

// OpenAPI is the OpenAPI 3 document of the /v1 routes and the operational
// endpoints, served at /v1/openapi.json.
//
//go:embed openapi.json
var OpenAPI []byte

// HeartbeatRequest is POST /v1/runs/{id}/heartbeat.
type HeartbeatRequest struct {
	Lease
	LeaseSeconds int `json:"lease_seconds,omitempty"`
}

// ProposeRequest is POST /v1/runs/{id}/actions.
type ProposeRequest struct {
	Lease
	Action engine.ActionRequest `json:"action"`
}

// ResumeRequest is POST /v1/runs/{id}/invocations/{inv}/resume.
type ResumeRequest struct {
	Lease
	ResumeInput
}

// StatusRequest is the body of .../result (succeeded, failed, uncertain) and
// .../complete (completed, failed).
type StatusRequest struct {
	Lease
	Status string `json:"status"`
}

// ResolveRequest is POST /v1/approvals/{id}/resolve.
type ResolveRequest struct {
	Resolution engine.ApprovalResolutionType `json:"resolution"`
	Reason     string                        `json:"reason,omitempty"`
	// TaskGrant repeats the offer's origin and path prefix; accepted only
	// with approve_for_task (ADR-0129), which requires it.
	TaskGrant *engine.SiteScope `json:"task_grant,omitempty"`
}

// EventPage is GET /v1/events. Watermark is the opaque cursor to pass as
// `after` next: the last event's cursor, or the request's `after` when
// nothing came ("0" for the start).
type EventPage struct {
	Events    []Event `json:"events"`
	Watermark string  `json:"watermark"`
}

// InvocationList is the list of a run's invocations.
type InvocationList struct {
	Items []Invocation `json:"items"`
}

// Policy is GET /v1/policy.
type Policy struct {
	PolicyVersion string   `json:"policy_version"`
	Profile       string   `json:"profile"`
	RuleCount     int      `json:"rule_count"`
	HardlineCount int      `json:"hardline_count"`
	Profiles      []string `json:"profiles"`
}

// Tool is one catalog entry in GET /v1/tools.
type Tool struct {
	Name           string                  `json:"name"`
	Version        string                  `json:"version"`
	Kind           engine.ActionKind       `json:"kind"`
	SideEffect     engine.SideEffectClass  `json:"side_effect"`
	Risk           engine.RiskLevel        `json:"risk"`
	Idempotency    engine.IdempotencyClass `json:"idempotency"`
	RequiredScopes []string                `json:"required_scopes"`
	Target         string                  `json:"target,omitempty"`
	MCPServerID    string                  `json:"mcp_server_id,omitempty"`
	Arguments      []string                `json:"arguments"`
}

// ToolList is GET /v1/tools.
type ToolList struct {
	Tools []Tool `json:"tools"`
}

// ErrorBody is every error response. Approval is set on a resolve conflict:
// the stored approval, so the caller sees who resolved it and how.
type ErrorBody struct {
	Error    ErrorDetail `json:"error"`
	Approval *Approval   `json:"approval,omitempty"`
}

// ErrorDetail is the code and a message safe to show.
type ErrorDetail struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

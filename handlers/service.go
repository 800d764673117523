package handlers

import (
	"context"
	"time"

	"gatehouse/engine"
	"gatehouse/service"
)

// Service is what the API and the console call; *service.Service satisfies
// it. Declaring it here keeps handlers testable against the real service
// while naming exactly the surface the HTTP layer depends on.
type Service interface {
	SubmitRun(ctx context.Context, p engine.Principal, in service.SubmitRunInput) (service.Run, error)
	GetRun(ctx context.Context, p engine.Principal, runID string) (service.Run, error)
	ClaimRun(ctx context.Context, p engine.Principal, in service.ClaimInput) (service.Run, bool, error)
	Heartbeat(ctx context.Context, p engine.Principal, runID string, lease service.Lease, leaseSeconds int) (service.Run, error)
	Propose(ctx context.Context, p engine.Principal, runID string, lease service.Lease, req engine.ActionRequest) (service.ProposeResult, error)
	ProposeUnreadable(ctx context.Context, p engine.Principal, runID string, lease service.Lease, req engine.ActionRequest) (service.ProposeResult, error)
	Resume(ctx context.Context, p engine.Principal, runID, invocationID string, lease service.Lease, in service.ResumeInput) (service.ResumeResult, error)
	RecordResult(ctx context.Context, p engine.Principal, runID, invocationID string, lease service.Lease, status string) (service.WorkerInvocation, error)
	CompleteRun(ctx context.Context, p engine.Principal, runID string, lease service.Lease, status string) (service.Run, error)
	CancelRun(ctx context.Context, p engine.Principal, runID string) (service.Run, error)
	ListInvocations(ctx context.Context, p engine.Principal, runID string) ([]service.Invocation, error)
	GetApproval(ctx context.Context, p engine.Principal, id string) (service.Approval, error)
	GetApprovalArguments(ctx context.Context, p engine.Principal, id string) (map[string]any, map[string]string, error)
	ListApprovals(ctx context.Context, p engine.Principal, f service.ApprovalFilter) (service.ApprovalPage, error)
	ResolveApproval(ctx context.Context, p engine.Principal, id string, resolution engine.ApprovalResolutionType, reason string) (service.ResolveOutcome, error)
	ListEvents(ctx context.Context, p engine.Principal, f service.EventFilter) ([]service.Event, error)
	EventWatermark(ctx context.Context, p engine.Principal) (string, error)
	Overview(ctx context.Context, p engine.Principal) (service.Overview, error)
	Ping(ctx context.Context) error
}

var _ Service = (*service.Service)(nil)

// Sessions is what the console keeps in the database: its server-side
// sessions and the sign-in throttle. *service.ConsoleSessions satisfies it.
type Sessions interface {
	Create(ctx context.Context, id, tenantID, principalID, csrf string, now time.Time) error
	Get(ctx context.Context, id string, now time.Time, touch bool) (service.ConsoleSession, bool, error)
	Delete(ctx context.Context, id string) error
	DeletePrincipal(ctx context.Context, tenantID, principalID string) error
	LoginAttempt(ctx context.Context, account, addr string, now time.Time) (service.LoginVerdict, time.Duration, error)
	LoginReleased(ctx context.Context, account, addr string, now time.Time) error
	LoginSucceeded(ctx context.Context, account, addr string) error
	ThrottleWindow() time.Duration
}

var _ Sessions = (*service.ConsoleSessions)(nil)

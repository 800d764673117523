package handlers

import (
	"context"
	"time"

	"gatehouse/api"
	"gatehouse/engine"
	"gatehouse/service"
)

// Service is what the API and the console call; *service.Service satisfies
// it. Declaring it here keeps handlers testable against the real service
// while naming exactly the surface the HTTP layer depends on.
type Service interface {
	SubmitRun(ctx context.Context, p engine.Principal, in api.SubmitRunInput) (api.Run, error)
	GetRun(ctx context.Context, p engine.Principal, runID string) (api.Run, error)
	ClaimRun(ctx context.Context, p engine.Principal, in api.ClaimInput) (api.Run, bool, error)
	Heartbeat(ctx context.Context, p engine.Principal, runID string, lease api.Lease, leaseSeconds int) (api.Run, error)
	Propose(ctx context.Context, p engine.Principal, runID string, lease api.Lease, req engine.ActionRequest) (api.ProposeResult, error)
	ProposeUnreadable(ctx context.Context, p engine.Principal, runID string, lease api.Lease, req engine.ActionRequest) (api.ProposeResult, error)
	Resume(ctx context.Context, p engine.Principal, runID, invocationID string, lease api.Lease, in api.ResumeInput) (api.ResumeResult, error)
	RecordResult(ctx context.Context, p engine.Principal, runID, invocationID string, lease api.Lease, status string) (api.WorkerInvocation, error)
	CompleteRun(ctx context.Context, p engine.Principal, runID string, lease api.Lease, status string) (api.Run, error)
	CancelRun(ctx context.Context, p engine.Principal, runID string) (api.Run, error)
	ListInvocations(ctx context.Context, p engine.Principal, runID string) ([]api.Invocation, error)
	GetApproval(ctx context.Context, p engine.Principal, id string) (api.Approval, error)
	GetApprovalArguments(ctx context.Context, p engine.Principal, id string) (map[string]any, map[string]string, error)
	ListApprovals(ctx context.Context, p engine.Principal, f service.ApprovalFilter) (api.ApprovalPage, error)
	QueueChangesSince(ctx context.Context, p engine.Principal, cursor string, limit, pageSize int) (service.QueueChanges, error)
	ResolveApproval(ctx context.Context, p engine.Principal, id string, resolution engine.ApprovalResolutionType, reason string) (service.ResolveOutcome, error)
	ListEvents(ctx context.Context, p engine.Principal, f service.EventFilter) ([]api.Event, error)
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

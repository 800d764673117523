package httpx

import (
	"context"
	"time"

	"gatehouse/api"
	"gatehouse/engine"
	"gatehouse/service"
)

// Service is what the API and the console call; *service.Service satisfies
// it. Declaring it here keeps the handlers testable against the real
// service while naming exactly the surface the HTTP layer depends on.
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
	GetApprovalContext(ctx context.Context, p engine.Principal, id string) (service.ApprovalContext, error)
	ListApprovals(ctx context.Context, p engine.Principal, f service.ApprovalFilter) (api.ApprovalPage, error)
	QueueChangesSince(ctx context.Context, p engine.Principal, cursor string, limit, pageSize int) (service.QueueChanges, error)
	ResolveApproval(ctx context.Context, p engine.Principal, id string, resolution engine.ApprovalResolutionType, reason string) (service.ResolveOutcome, error)
	ResolveApprovalSeen(ctx context.Context, p engine.Principal, id, argumentsHash string, resolution engine.ApprovalResolutionType, reason string) (service.ResolveOutcome, error)
	ResolveApprovalForTask(ctx context.Context, p engine.Principal, id, argumentsHash string, grant *engine.SiteScope, reason string) (service.ResolveOutcome, error)
	ListTaskGrants(ctx context.Context, p engine.Principal, sessionID string) ([]api.BrowserTaskGrant, error)
	RevokeTaskGrant(ctx context.Context, p engine.Principal, id string) (api.BrowserTaskGrant, error)
	RecordConsent(ctx context.Context, p engine.Principal, sessionID string, in api.ConsentInput, viaConsole bool) (api.OwnerConsent, error)
	ListConsents(ctx context.Context, p engine.Principal, sessionID string) ([]api.OwnerConsent, error)
	ExpiringSoon(ctx context.Context, p engine.Principal, window time.Duration, limit int) ([]api.Approval, error)
	ListEvents(ctx context.Context, p engine.Principal, f service.EventFilter) ([]api.Event, error)
	EventWatermark(ctx context.Context, p engine.Principal) (string, error)
	Overview(ctx context.Context, p engine.Principal) (service.Overview, error)
	AdvisoryState(profile string) service.AdvisoryState
	RecentNotifications(ctx context.Context, p engine.Principal, limit int) ([]service.NotificationDelivery, error)
	SendTestNotification(ctx context.Context, p engine.Principal, channel string) error
	NotificationChannels() map[string]string
	SubscribePush(ctx context.Context, tenantID, principalID string, sub service.PushSubscriptionInput) error
	UnsubscribePush(ctx context.Context, tenantID, principalID, endpoint string) error
	PushSubscriptions(ctx context.Context, tenantID string) ([]service.PushSubscriptionRow, error)
	Ping(ctx context.Context) error
}

var _ Service = (*service.Service)(nil)

package service

// Stub bodies: each is replaced by the real implementation (and this file
// deleted) before anything lands. The signatures are the contract.

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"gatehouse/engine"
	"gatehouse/rules"
)

var errStub = errors.New("service: not implemented")

// Config wires a Service.
type Config struct {
	Pool       *pgxpool.Pool
	Policy     *rules.Set // rulesets by profile, default profile, catalog
	Principals PrincipalDirectory
	Now        func() time.Time // nil: time.Now (the only clock read)
	Logger     *slog.Logger
	Metrics    Metrics
	// ReplicaID names this process in leases and policy_profiles.loaded_by.
	ReplicaID string
}

// Service is the application layer every surface calls: API, console, CLI.
type Service struct{ cfg Config }

// New builds a Service and records policy.profile.loaded for each ruleset.
func New(ctx context.Context, cfg Config) (*Service, error) { return nil, errStub }

func (s *Service) SubmitRun(ctx context.Context, p engine.Principal, in SubmitRunInput) (Run, error) {
	return Run{}, errStub
}
func (s *Service) GetRun(ctx context.Context, p engine.Principal, runID string) (Run, error) {
	return Run{}, errStub
}

// ClaimRun returns ok=false when there is nothing to claim (204).
func (s *Service) ClaimRun(ctx context.Context, p engine.Principal, in ClaimInput) (run Run, ok bool, err error) {
	return Run{}, false, errStub
}
func (s *Service) Heartbeat(ctx context.Context, p engine.Principal, runID string, lease Lease, leaseSeconds int) (Run, error) {
	return Run{}, errStub
}
func (s *Service) Propose(ctx context.Context, p engine.Principal, runID string, lease Lease, req engine.ActionRequest) (ProposeResult, error) {
	return ProposeResult{}, errStub
}
func (s *Service) Resume(ctx context.Context, p engine.Principal, runID, invocationID string, lease Lease, in ResumeInput) (ResumeResult, error) {
	return ResumeResult{}, errStub
}

// RecordResult takes status succeeded, failed or uncertain.
func (s *Service) RecordResult(ctx context.Context, p engine.Principal, runID, invocationID string, lease Lease, status string) (Invocation, error) {
	return Invocation{}, errStub
}

// CompleteRun takes status completed or failed.
func (s *Service) CompleteRun(ctx context.Context, p engine.Principal, runID string, lease Lease, status string) (Run, error) {
	return Run{}, errStub
}
func (s *Service) CancelRun(ctx context.Context, p engine.Principal, runID string) (Run, error) {
	return Run{}, errStub
}
func (s *Service) ListInvocations(ctx context.Context, p engine.Principal, runID string) ([]Invocation, error) {
	return nil, errStub
}
func (s *Service) GetApproval(ctx context.Context, p engine.Principal, id string) (Approval, error) {
	return Approval{}, errStub
}
func (s *Service) ListApprovals(ctx context.Context, p engine.Principal, f ApprovalFilter) (ApprovalPage, error) {
	return ApprovalPage{}, errStub
}
func (s *Service) ResolveApproval(ctx context.Context, p engine.Principal, id string, resolution engine.ApprovalResolutionType, reason string) (ResolveOutcome, error) {
	return ResolveOutcome{}, errStub
}

// ExpireDue is one reaper pass: expires up to limit due approvals.
func (s *Service) ExpireDue(ctx context.Context, limit int) (int, error) { return 0, errStub }

// RunReaper calls ExpireDue every interval until ctx ends.
func (s *Service) RunReaper(ctx context.Context, interval time.Duration) {}
func (s *Service) ListEvents(ctx context.Context, p engine.Principal, f EventFilter) ([]Event, error) {
	return nil, errStub
}
func (s *Service) Overview(ctx context.Context, p engine.Principal) (Overview, error) {
	return Overview{}, errStub
}

// Ping reports whether the database answers (readiness).
func (s *Service) Ping(ctx context.Context) error { return errStub }

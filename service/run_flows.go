package service

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"gatehouse/api"
	"gatehouse/engine"
	"gatehouse/notify"
)

const (
	leaseMinSeconds     = 5
	leaseMaxSeconds     = 3600
	leaseDefaultSeconds = 60
	maxIDLength         = 200
)

// ProfileNotPermittedError is an ErrForbidden: the run named a loaded
// policy profile, not the server default, that the principal's entry does
// not list. The operator's default binds every run unless the operator
// said otherwise for that principal.
type ProfileNotPermittedError struct{ Profile string }

func (e *ProfileNotPermittedError) Error() string {
	return fmt.Sprintf("policy profile %q is not permitted for this principal", e.Profile)
}
func (e *ProfileNotPermittedError) Unwrap() error { return ErrForbidden }

// SubmitRun creates a QUEUED run with the submitting principal's scopes
// stamped on it; later changes to the principal never reach this run.
// An unknown profile is ErrInvalid; a profile other than the default that
// the principal does not list is a *ProfileNotPermittedError.
func (s *Service) SubmitRun(ctx context.Context, p engine.Principal, in api.SubmitRunInput) (api.Run, error) {
	now := s.now()
	switch {
	case p.TenantID == "" || p.ID == "":
		return api.Run{}, &InvalidError{Msg: "principal has no tenant"}
	case !engine.ValidUUID(in.SessionID):
		return api.Run{}, &InvalidError{Msg: "session_id must be a uuid"}
	case in.AgentID == "" || len(in.AgentID) > maxIDLength:
		return api.Run{}, &InvalidError{Msg: "agent_id is required (at most 200 characters)"}
	case in.AgentVersion == "" || len(in.AgentVersion) > maxIDLength:
		return api.Run{}, &InvalidError{Msg: "agent_version is required (at most 200 characters)"}
	case in.Deadline != nil && !in.Deadline.After(now):
		return api.Run{}, &InvalidError{Msg: "deadline must be in the future"}
	}
	profile := in.PolicyProfile
	if profile == "" {
		profile = s.cfg.Policy.DefaultProfile()
	}
	if _, ok := s.ruleset(profile); !ok {
		return api.Run{}, &InvalidError{Msg: "unknown policy_profile"}
	}
	if profile != s.cfg.Policy.DefaultProfile() && !p.AnyPolicyProfile && !slices.Contains(p.PolicyProfiles, profile) {
		return api.Run{}, &ProfileNotPermittedError{Profile: profile}
	}
	scopes := append([]string{}, p.Scopes...)
	var run api.Run
	err := s.withTx(ctx, func(tx pgx.Tx, _ *afterCommit) error {
		var err error
		run, err = runsInsert(ctx, tx, newID(), p.TenantID, p.ID, in.SessionID, in.AgentID,
			in.AgentVersion, profile, scopes, in.Deadline, now)
		if err != nil {
			return err
		}
		return insertEvent(ctx, tx, run.TenantID, run.ID, now, api.RunSubmittedPayload{
			AgentID: run.AgentID, AgentVersion: run.AgentVersion, PolicyProfile: run.PolicyProfile,
		})
	})
	if err != nil {
		return api.Run{}, fmt.Errorf("service: submit run: %w", err)
	}
	return run, nil
}

// GetRun reads a run of the principal's tenant; another tenant's run is
// ErrNotFound.
func (s *Service) GetRun(ctx context.Context, p engine.Principal, runID string) (api.Run, error) {
	r, err := runsGet(ctx, s.pool, p.TenantID, runID, false)
	if err != nil {
		return api.Run{}, fmt.Errorf("service: %w", err)
	}
	return r, nil
}

func leaseDuration(seconds int) (time.Duration, error) {
	if seconds == 0 {
		seconds = leaseDefaultSeconds
	}
	if seconds < leaseMinSeconds || seconds > leaseMaxSeconds {
		return 0, &InvalidError{Msg: "lease_seconds must be between 5 and 3600"}
	}
	return time.Duration(seconds) * time.Second, nil
}

// ClaimRun leases the oldest QUEUED run of the principal's tenant, or a
// RUNNING one whose lease expired (optionally only in.RunID), with the next
// fencing token. ok=false when there is nothing to claim (204).
func (s *Service) ClaimRun(ctx context.Context, p engine.Principal, in api.ClaimInput) (run api.Run, ok bool, err error) {
	d, err := leaseDuration(in.LeaseSeconds)
	if err != nil {
		return api.Run{}, false, err
	}
	if in.WorkerID == "" || len(in.WorkerID) > maxIDLength {
		return api.Run{}, false, &InvalidError{Msg: "worker_id is required (at most 200 characters)"}
	}
	if in.RunID != "" && !engine.ValidUUID(in.RunID) {
		return api.Run{}, false, nil
	}
	now := s.now()
	err = s.withTx(ctx, func(tx pgx.Tx, _ *afterCommit) error {
		var err error
		run, ok, err = runsClaim(ctx, tx, p.TenantID, in.WorkerID, nullUUID(in.RunID), now.Add(d), now)
		if err != nil || !ok {
			return err
		}
		return insertEvent(ctx, tx, run.TenantID, run.ID, now, api.RunClaimedPayload{
			WorkerID: run.WorkerID, FencingToken: run.FencingToken,
		})
	})
	if err != nil {
		return api.Run{}, false, fmt.Errorf("service: claim run: %w", err)
	}
	return run, ok, nil
}

// Heartbeat extends the lease of the worker that holds it. Outcomes:
// extended; ErrStaleLease when the lease expired, another worker claimed the
// run, or the run left RUNNING; ErrNotFound for no such run in the tenant.
func (s *Service) Heartbeat(ctx context.Context, p engine.Principal, runID string, lease api.Lease, leaseSeconds int) (api.Run, error) {
	d, err := leaseDuration(leaseSeconds)
	if err != nil {
		return api.Run{}, err
	}
	if !engine.ValidUUID(runID) {
		return api.Run{}, ErrNotFound
	}
	now := s.now()
	r, ok, err := runsHeartbeat(ctx, s.pool, p.TenantID, runID, lease, now.Add(d), now)
	if err != nil {
		return api.Run{}, fmt.Errorf("service: heartbeat: %w", err)
	}
	if !ok {
		if _, err := runsGet(ctx, s.pool, p.TenantID, runID, false); err != nil {
			return api.Run{}, fmt.Errorf("service: heartbeat: %w", err)
		}
		return api.Run{}, fmt.Errorf("service: heartbeat: %w", ErrStaleLease)
	}
	return r, nil
}

// CompleteRun ends a RUNNING run the worker holds, as completed or failed.
func (s *Service) CompleteRun(ctx context.Context, p engine.Principal, runID string, lease api.Lease, status string) (api.Run, error) {
	var to, reason string
	var event api.EventPayload
	switch strings.ToLower(status) {
	case "completed":
		to, event = api.RunCompleted, api.RunCompletedPayload{}
	case "failed":
		to, reason = api.RunFailed, "worker_failed"
		event = api.RunFailedPayload{FailureReason: reason}
	default:
		return api.Run{}, &InvalidError{Msg: "status must be completed or failed"}
	}
	now := s.now()
	var run api.Run
	err := s.withTx(ctx, func(tx pgx.Tx, _ *afterCommit) error {
		if _, err := lockRunForWorker(ctx, tx, p.TenantID, runID, lease, now); err != nil {
			return err
		}
		var err error
		run, _, err = runsTransition(ctx, tx, runID, []string{api.RunRunning}, to, reason, false, now)
		if err != nil {
			return err
		}
		return insertEvent(ctx, tx, run.TenantID, run.ID, now, event)
	})
	if err != nil {
		return api.Run{}, fmt.Errorf("service: complete run: %w", err)
	}
	return run, nil
}

// CancelRun cancels a run of the principal's tenant. Outcomes: QUEUED or
// WAITING_FOR_APPROVAL -> CANCELLED, its pending approvals -> cancelled (the
// same pending guard as resolve and reap, so a lost race changes nothing)
// and its waiting invocations -> CANCELLED; RUNNING -> CANCELLED with the
// lease fenced, so the worker's next call is stale; already terminal ->
// ErrConflict; another tenant's or no run -> ErrNotFound; p without
// run.cancel -> ErrForbidden.
func (s *Service) CancelRun(ctx context.Context, p engine.Principal, runID string) (api.Run, error) {
	if err := requireScope(p, scopeRunCancel); err != nil {
		return api.Run{}, fmt.Errorf("service: cancel run: %w", err)
	}
	now := s.now()
	var run api.Run
	err := s.withTx(ctx, func(tx pgx.Tx, after *afterCommit) error {
		cur, err := runsGet(ctx, tx, p.TenantID, runID, true)
		if err != nil {
			return err
		}
		switch cur.Status {
		case api.RunCompleted, api.RunFailed, api.RunCancelled:
			return ErrConflict
		}
		cancelled, err := approvalsCancelForRun(ctx, tx, runID, now)
		if err != nil {
			return err
		}
		for _, a := range cancelled {
			if err := insertEvent(ctx, tx, a.TenantID, a.RunID, now, resolvedPayload(a)); err != nil {
				return err
			}
			if err := s.insertNotification(ctx, tx, after, a, notify.KindCancelled, now); err != nil {
				return err
			}
			latency := now.Sub(a.CreatedAt)
			after.add(func() { s.metrics.ApprovalResolved(engine.ApprovalCancelled, latency) })
		}
		if err := invocationsCancelForRun(ctx, tx, runID, now); err != nil {
			return err
		}
		if err := runsCheckpointCancel(ctx, tx, runID); err != nil {
			return err
		}
		run, _, err = runsTransition(ctx, tx, runID, []string{cur.Status}, api.RunCancelled, "cancelled",
			cur.Status == api.RunRunning, now)
		if err != nil {
			return err
		}
		if err := insertEvent(ctx, tx, run.TenantID, run.ID, now, api.RunCancelledPayload{
			CancelledBy: p.ID, ApprovalsCancelled: len(cancelled),
		}); err != nil {
			return err
		}
		return signalEvents(ctx, tx, run.TenantID)
	})
	if err != nil {
		return api.Run{}, fmt.Errorf("service: cancel run: %w", err)
	}
	return run, nil
}

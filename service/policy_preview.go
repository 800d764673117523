package service

import (
	"context"
	"fmt"
	"time"

	"gatehouse/api"
	"gatehouse/engine"
	"gatehouse/rules"
)

// DeployVerdict is what deploying a policy set would do to one pending
// approval, were it approved and resumed unchanged: the outcome of the
// revalidation Resume runs (engine.Revalidate; Outcome.Decision is the
// re-evaluation when the policy version moves).
type DeployVerdict struct {
	Approval api.Approval
	Profile  string // the run's policy profile
	// Decision is the decision the approval was requested under.
	Decision engine.PolicyDecision
	Outcome  engine.RevalidationOutcome
}

// PreviewDeploy revalidates up to limit pending approvals of every tenant,
// oldest first, against the set to, as Resume would once each is approved
// and resumed with the same arguments, scopes and agent version: only
// what the policy and the catalog change shows. It is the operator's
// `console policy diff`: it reads the database directly, as no tenant, and
// writes nothing. A run whose profile to does not load is voided as Resume
// voids it (policy_profile_not_loaded).
func PreviewDeploy(ctx context.Context, db DBTX, to *rules.Set, now time.Time, limit int) ([]DeployVerdict, error) {
	pending, err := approvalsListAllPending(ctx, db, limit)
	if err != nil {
		return nil, fmt.Errorf("service: preview deploy: %w", err)
	}
	out := make([]DeployVerdict, 0, len(pending))
	for _, a := range pending {
		run, err := runsGet(ctx, db, a.TenantID, a.RunID, false)
		if err != nil {
			return nil, fmt.Errorf("service: preview deploy: approval %s: %w", a.ID, err)
		}
		inv, ok, err := invocationsGetByAction(ctx, db, a.RunID, a.ActionID)
		if err != nil {
			return nil, fmt.Errorf("service: preview deploy: approval %s: %w", a.ID, err)
		}
		if !ok {
			return nil, fmt.Errorf("service: preview deploy: approval %s: invocation: %w", a.ID, ErrNotFound)
		}
		v := DeployVerdict{Approval: a.Approval, Profile: run.PolicyProfile, Decision: inv.Decision}
		rs, loaded := to.Ruleset(run.PolicyProfile)
		if !loaded {
			v.Outcome = engine.RevalidationOutcome{Cause: causeProfileNotLoaded, ReasonCode: engine.ReasonRevalidationEscalated}
		} else {
			v.Outcome = engine.Revalidate(a.snapshot(inv), engine.ResumeSnapshot{
				ArgumentsHash: a.NormalizedArgumentsHash, PrincipalScopes: a.RequestedScopes, AgentVersion: a.AgentVersion,
				Principal: engine.Principal{ID: run.PrincipalID, TenantID: run.TenantID, Scopes: run.PrincipalScopes},
				Run:       runSnapshot(run), Ruleset: rs, Catalog: to.Catalog(), Now: now,
			})
		}
		out = append(out, v)
	}
	return out, nil
}

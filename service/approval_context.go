package service

import (
	"context"
	"fmt"
	"slices"

	"github.com/jackc/pgx/v5"

	"gatehouse/api"
	"gatehouse/engine"
)

// How much context the detail page reads: a reviewer needs the last
// steps before the action, not a run's whole history (the run page has
// that), and a handful of identical requests to see a pattern.
const (
	contextStepsLimit     = 20
	contextDenialsLimit   = 10
	contextIdenticalLimit = 10
)

// ApprovalContext is what a reviewer reads around one approval on its
// detail page: who asks, the run so far, and the same call elsewhere.
type ApprovalContext struct {
	AgentID      string
	AgentVersion string
	PrincipalID  string // on whose behalf the run acts
	StepNumber   int    // as the agent numbered the step
	// RunShown is true when the viewer holds run.read: only then are the
	// run's steps and denials read.
	RunShown bool
	// StepsBefore are the run's actions proposed before this one, oldest
	// first; MoreSteps says earlier ones were left out.
	StepsBefore []Step
	MoreSteps   bool
	// DenialsBefore are the denials of the same call (tool and normalized
	// arguments hash) in this run before this action, oldest first.
	DenialsBefore []Step
	// IdenticalPending are the same call's pending approvals in the tenant
	// from other runs, newest first; MoreIdentical says more are pending.
	IdenticalPending []api.Approval
	MoreIdentical    bool
}

// GetApprovalContext reads an approval's context in one round trip. It
// needs approval.read; the run's steps and denials also need run.read
// and are left out without it. Another tenant's approval is ErrNotFound,
// and another tenant's identical requests are never read.
func (s *Service) GetApprovalContext(ctx context.Context, p engine.Principal, id string) (ApprovalContext, error) {
	if err := requireScope(p, scopeApprovalRead); err != nil {
		return ApprovalContext{}, fmt.Errorf("service: approval context: %w", err)
	}
	a, err := approvalsGet(ctx, s.pool, p.TenantID, id)
	if err != nil {
		return ApprovalContext{}, fmt.Errorf("service: approval context: %w", err)
	}
	out := ApprovalContext{PrincipalID: a.PrincipalID, RunShown: requireScope(p, engine.ScopeRunRead) == nil}
	var (
		run       api.Run
		runErr    error
		step      Step
		found     bool
		identical []approvalRow
	)
	b := &pgx.Batch{}
	queueRunsGet(b, a.TenantID, a.RunID, &run, &runErr)
	queueInvocationsGetStep(b, a.RunID, a.ActionID, &step, &found)
	queueApprovalsListPendingIdentical(b, a, contextIdenticalLimit+1, &identical)
	if out.RunShown {
		queueInvocationsListStepsBefore(b, a.RunID, a.ActionID, contextStepsLimit+1, &out.StepsBefore)
		queueInvocationsListDenialsBefore(b, a.RunID, a.ActionID, a.ToolName, a.NormalizedArgumentsHash, contextDenialsLimit, &out.DenialsBefore)
	}
	if err := s.pool.SendBatch(ctx, b).Close(); err != nil {
		return ApprovalContext{}, fmt.Errorf("service: approval context: %w", err)
	}
	if runErr != nil {
		return ApprovalContext{}, fmt.Errorf("service: approval context: run: %w", runErr)
	}
	out.AgentID, out.AgentVersion = run.AgentID, run.AgentVersion
	if found {
		out.StepNumber = step.StepNumber
	}
	if len(out.StepsBefore) > contextStepsLimit {
		out.StepsBefore, out.MoreSteps = out.StepsBefore[:contextStepsLimit], true
	}
	slices.Reverse(out.StepsBefore)
	slices.Reverse(out.DenialsBefore)
	if len(identical) > contextIdenticalLimit {
		identical, out.MoreIdentical = identical[:contextIdenticalLimit], true
	}
	out.IdenticalPending = make([]api.Approval, len(identical))
	for i, r := range identical {
		out.IdenticalPending[i] = r.Approval
	}
	return out, nil
}

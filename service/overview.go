package service

import (
	"context"
	"fmt"
	"time"

	"gatehouse/engine"
)

// Overview is the console's dashboard for the principal's tenant.
func (s *Service) Overview(ctx context.Context, p engine.Principal) (Overview, error) {
	now := s.now()
	o := Overview{
		PendingByRisk:   map[engine.RiskLevel]int{},
		ExpiriesByHour:  make([]int, 24),
		DenialsByHour:   make([]int, 24),
		ApprovalsByHour: make([]int, 24),
		At:              now,
	}
	for _, r := range engine.RiskLevels() {
		o.PendingByRisk[r] = 0
	}
	pending, err := approvalsCountPendingByRisk(ctx, s.pool, p.TenantID)
	if err != nil {
		return o, fmt.Errorf("service: overview: %w", err)
	}
	for risk, n := range pending {
		o.PendingByRisk[risk] = n
	}
	n, p50, p95, err := approvalsResolutionLatency(ctx, s.pool, p.TenantID, now)
	if err != nil {
		return o, fmt.Errorf("service: overview latency: %w", err)
	}
	o.ResolvedLastDay = n
	o.LatencyP50 = time.Duration(p50 * float64(time.Second))
	o.LatencyP95 = time.Duration(p95 * float64(time.Second))

	resolved, err := approvalsResolvedByHour(ctx, s.pool, p.TenantID, now)
	if err != nil {
		return o, fmt.Errorf("service: overview: %w", err)
	}
	for _, h := range resolved {
		if h.Bucket >= 0 && h.Bucket < 24 {
			o.ExpiriesByHour[h.Bucket], o.ApprovalsByHour[h.Bucket] = h.Expired, h.Approved
		}
	}
	denied, err := eventsDeniedByHour(ctx, s.pool, p.TenantID, now)
	if err != nil {
		return o, fmt.Errorf("service: overview: %w", err)
	}
	for _, h := range denied {
		if h.Bucket >= 0 && h.Bucket < 24 {
			o.DenialsByHour[h.Bucket] = h.Count
		}
	}
	if o.AdvisoryJudged, o.AdvisoryEscalated, err = invocationsAdvisoryCounts(ctx, s.pool, p.TenantID, now); err != nil {
		return o, fmt.Errorf("service: overview: %w", err)
	}
	if o.AdvisoryEscalationsResolved, o.AdvisoryApproved, err = approvalsAdvisoryDisagreement(ctx, s.pool, p.TenantID, now); err != nil {
		return o, fmt.Errorf("service: overview: %w", err)
	}
	return o, nil
}

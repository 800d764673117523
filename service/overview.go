package service

import (
	"context"
	"fmt"
	"time"

	"gatehouse/engine"
)

const overviewPendingByRisk = `
SELECT risk, count(*) FROM approvals
 WHERE tenant_id = $1 AND status = 'pending'
 GROUP BY risk`

// overviewLatency is over human resolutions in the 24 hours before $2.
const overviewLatency = `
SELECT count(*),
       COALESCE(percentile_cont(0.5) WITHIN GROUP (ORDER BY extract(epoch FROM resolved_at - created_at)), 0),
       COALESCE(percentile_cont(0.95) WITHIN GROUP (ORDER BY extract(epoch FROM resolved_at - created_at)), 0)
  FROM approvals
 WHERE tenant_id = $1 AND status IN ('approved', 'denied')
   AND resolved_at > $2::timestamptz - interval '24 hours' AND resolved_at <= $2`

// overviewApprovalsByHour buckets expiries and approvals of the last 24
// hours; bucket 23 is the hour ending at $2.
const overviewApprovalsByHour = `
SELECT 23 - floor(extract(epoch FROM $2::timestamptz - resolved_at) / 3600)::int AS bucket,
       count(*) FILTER (WHERE status = 'expired'),
       count(*) FILTER (WHERE status = 'approved')
  FROM approvals
 WHERE tenant_id = $1 AND status IN ('expired', 'approved')
   AND resolved_at > $2::timestamptz - interval '24 hours' AND resolved_at <= $2::timestamptz
 GROUP BY 1`

// overviewDenialsByHour buckets policy and human denials (action.denied
// events) the same way.
const overviewDenialsByHour = `
SELECT 23 - floor(extract(epoch FROM $2::timestamptz - created_at) / 3600)::int AS bucket, count(*)
  FROM events
 WHERE tenant_id = $1 AND type = 'action.denied'
   AND created_at > $2::timestamptz - interval '24 hours' AND created_at <= $2
 GROUP BY 1`

// Overview is the console's dashboard for the principal's tenant.
func (s *Service) Overview(ctx context.Context, p engine.Principal) (Overview, error) {
	now := s.now()
	o := Overview{
		PendingByRisk:   map[engine.RiskLevel]int{},
		ExpiriesByHour:  make([]int, 24),
		DenialsByHour:   make([]int, 24),
		ApprovalsByHour: make([]int, 24),
	}
	for _, r := range engine.RiskLevels() {
		o.PendingByRisk[r] = 0
	}
	rows, err := s.pool.Query(ctx, overviewPendingByRisk, p.TenantID)
	if err != nil {
		return o, fmt.Errorf("service: overview: %w", err)
	}
	var risk string
	var n int
	for rows.Next() {
		if err := rows.Scan(&risk, &n); err != nil {
			rows.Close()
			return o, fmt.Errorf("service: overview: %w", err)
		}
		o.PendingByRisk[engine.RiskLevel(risk)] = n
	}
	if err := rows.Err(); err != nil {
		return o, fmt.Errorf("service: overview: %w", err)
	}
	var p50, p95 float64
	if err := s.pool.QueryRow(ctx, overviewLatency, p.TenantID, now).Scan(&o.ResolvedLastDay, &p50, &p95); err != nil {
		return o, fmt.Errorf("service: overview latency: %w", err)
	}
	o.LatencyP50 = time.Duration(p50 * float64(time.Second))
	o.LatencyP95 = time.Duration(p95 * float64(time.Second))

	rows, err = s.pool.Query(ctx, overviewApprovalsByHour, p.TenantID, now)
	if err != nil {
		return o, fmt.Errorf("service: overview: %w", err)
	}
	var bucket, expired, approved int
	for rows.Next() {
		if err := rows.Scan(&bucket, &expired, &approved); err != nil {
			rows.Close()
			return o, fmt.Errorf("service: overview: %w", err)
		}
		if bucket >= 0 && bucket < 24 {
			o.ExpiriesByHour[bucket], o.ApprovalsByHour[bucket] = expired, approved
		}
	}
	if err := rows.Err(); err != nil {
		return o, fmt.Errorf("service: overview: %w", err)
	}
	rows, err = s.pool.Query(ctx, overviewDenialsByHour, p.TenantID, now)
	if err != nil {
		return o, fmt.Errorf("service: overview: %w", err)
	}
	for rows.Next() {
		if err := rows.Scan(&bucket, &n); err != nil {
			rows.Close()
			return o, fmt.Errorf("service: overview: %w", err)
		}
		if bucket >= 0 && bucket < 24 {
			o.DenialsByHour[bucket] = n
		}
	}
	if err := rows.Err(); err != nil {
		return o, fmt.Errorf("service: overview: %w", err)
	}
	return o, nil
}

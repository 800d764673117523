package metrics

import (
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"gatehouse/engine"
)

// The service's metric calls land in the series the seed tracks, with the
// labels an operator slices them by.
func TestMetricsSeries(t *testing.T) {
	t.Parallel()
	m := New()
	m.ApprovalRequested(engine.SideEffectFinancial, engine.RiskCritical)
	m.ApprovalRequested(engine.SideEffectFinancial, engine.RiskCritical)
	m.ApprovalResolved(engine.ApprovalApproved, 90*time.Second)
	m.ApprovalExpired(engine.RiskHigh)
	m.Denied("policy.matrix.privileged")
	m.Denied("approval.denied")
	m.CircuitBreakerTripped()
	m.RevalidationVoided(engine.VoidArgumentsChanged)
	m.ObserveHTTP("POST", "/v1/runs/:id/actions", 200, 5*time.Millisecond)

	for name, got := range map[string]float64{
		"requests financial/critical": testutil.ToFloat64(m.approvalRequests.WithLabelValues("financial", "critical")),
		"expiries high":               testutil.ToFloat64(m.approvalExpiries.WithLabelValues("high")),
		"denials privileged":          testutil.ToFloat64(m.denials.WithLabelValues("policy.matrix.privileged")),
		"denials human":               testutil.ToFloat64(m.denials.WithLabelValues("approval.denied")),
		"breaker trips":               testutil.ToFloat64(m.breakerTrips),
		"voids arguments_changed":     testutil.ToFloat64(m.revalidationVoids.WithLabelValues("arguments_changed")),
	} {
		want := 1.0
		if name == "requests financial/critical" {
			want = 2
		}
		if got != want {
			t.Errorf("%s = %v, want %v", name, got, want)
		}
	}
	if n := testutil.CollectAndCount(m.approvalLatency); n != 1 {
		t.Errorf("latency histogram series = %d, want 1", n)
	}
	if n := testutil.CollectAndCount(m.httpDuration); n != 1 {
		t.Errorf("http duration series = %d, want 1", n)
	}
}

package service

import (
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"gatehouse/api"
	"gatehouse/engine"
)

// recorder is a Metrics that keeps what it was told, one line a call.
type recorder struct {
	mu    sync.Mutex
	calls []string
}

func (r *recorder) add(format string, args ...any) {
	r.mu.Lock()
	r.calls = append(r.calls, fmt.Sprintf(format, args...))
	r.mu.Unlock()
}

func (r *recorder) ApprovalRequested(s engine.SideEffectClass, risk engine.RiskLevel) {
	r.add("requested %s %s", s, risk)
}
func (r *recorder) ApprovalResolved(s engine.ApprovalStatus, d time.Duration) {
	r.add("resolved %s %s", s, d)
}
func (r *recorder) ApprovalExpired(risk engine.RiskLevel) { r.add("expired %s", risk) }
func (r *recorder) Denied(reason string)                  { r.add("denied %s", reason) }
func (r *recorder) CircuitBreakerTripped()                { r.add("breaker") }
func (r *recorder) RevalidationVoided(cause string)       { r.add("void %s", cause) }
func (r *recorder) NotificationDelivered(channel, outcome string, _ time.Duration) {
	r.add("notification %s %s", channel, outcome)
}
func (r *recorder) NotificationBacklog(int) {}
func (r *recorder) AdvisoryConsulted(verdict string, enforced bool, _ time.Duration) {
	r.add("advisory %s enforced=%v", verdict, enforced)
}
func (r *recorder) AdvisoryAbstained(cause string) { r.add("abstained %s", cause) }

// take returns the calls recorded since the last take.
func (r *recorder) take() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := r.calls
	r.calls = nil
	return out
}

// The seed's tracked metrics (approval requests by side effect, latency,
// expiries, denials by reason code, breaker trips, revalidation voids by
// cause) are each reported once, after the transaction that caused them.
func TestMetricsReportTheSeedsCounts(t *testing.T) {
	t.Parallel()
	b := setup(t)
	rec := &recorder{}
	svc, err := New(b.ctx, Config{Pool: b.pool, Policy: b.policy, Principals: b.dir, Now: b.clock.Now, ReplicaID: "test", Metrics: rec})
	if err != nil {
		t.Fatal(err)
	}
	b.svc = svc
	expect := func(step string, want ...string) {
		t.Helper()
		if got := rec.take(); !slices.Equal(got, want) {
			t.Fatalf("%s: metrics %q, want %q", step, got, want)
		}
	}

	denied := b.parked(b.started(), action("email.send", map[string]any{"to": "a@example.com"}))
	expect("park", "requested external_message high")
	b.clock.Advance(90 * time.Second)
	b.resolve(denied.ApprovalID, engine.ResolutionDeny)
	expect("human deny", "denied approval.denied", "resolved denied 1m30s")

	late := b.parked(b.started(), action("payments.charge", map[string]any{"customer": "c", "amount_cents": 100}))
	expect("park critical", "requested financial critical")
	b.clock.Advance(2 * time.Hour)
	if out := b.resolve(late.ApprovalID, engine.ResolutionApproveOnce); out.Result != ResolveConflict {
		t.Fatalf("approving past expiry: %s", out.Result)
	}
	expect("expiry", "expired critical", "denied approval.expired")

	c := b.started()
	for range 3 {
		b.propose(c, action("secrets.read", map[string]any{"name": "prod"}))
	}
	// The breaker is reported with the third denial's transaction.
	expect("breaker", "denied policy.matrix.credential_access", "denied policy.matrix.credential_access",
		"denied policy.matrix.credential_access", "breaker")

	c = b.started()
	approved := b.parked(c, action("http.post", map[string]any{"url": "https://example.com", "body": "x"}))
	b.resolve(approved.ApprovalID, engine.ResolutionApproveOnce)
	rec.take()
	c = b.claim(c.run.ID)
	res, err := b.svc.Resume(b.ctx, b.owner, c.run.ID, approved.InvocationID, c.lease, api.ResumeInput{
		Arguments: map[string]any{"url": "https://attacker.example", "body": "x"}, AgentVersion: "1.0",
	})
	if err != nil || res.Authorized {
		t.Fatalf("resume with other arguments: %+v %v", res, err)
	}
	expect("void", "void arguments_changed", "denied approval.invalidated")
}

// A cancellation is not a denial: cancelling a parked run reports the
// approval resolved "cancelled" and nothing in the denial rate.
func TestCancellationStaysOutOfTheDenialMetric(t *testing.T) {
	t.Parallel()
	b := setup(t)
	rec := &recorder{}
	svc, err := New(b.ctx, Config{Pool: b.pool, Policy: b.policy, Principals: b.dir, Now: b.clock.Now, ReplicaID: "test", Metrics: rec})
	if err != nil {
		t.Fatal(err)
	}
	b.svc = svc
	c := b.started()
	b.parked(c, action("email.send", map[string]any{"to": "a@example.com"}))
	rec.take()
	b.clock.Advance(time.Minute)
	if _, err := b.svc.CancelRun(b.ctx, b.owner, c.run.ID); err != nil {
		t.Fatal(err)
	}
	if got, want := rec.take(), []string{"resolved cancelled 1m0s"}; !slices.Equal(got, want) {
		t.Fatalf("metrics %q, want %q", got, want)
	}
}

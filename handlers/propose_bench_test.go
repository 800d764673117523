package handlers

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"runtime"
	"testing"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"gatehouse/api"
	"gatehouse/auth"
	"gatehouse/client"
	"gatehouse/engine"
	"gatehouse/internal/metrics"
	"gatehouse/internal/testdb"
	"gatehouse/rules"
	"gatehouse/service"
)

// benchAgents is how many agents propose at once in
// BenchmarkProposeAllowSides, whatever GOMAXPROCS is (rounded up to a
// multiple of it).
const benchAgents = 8

// The SQL floor of an allowed proposal: the minimal transaction that does
// its work, statement by statement through pgx (lock the run, insert the
// invocation and an event, update the run).
const (
	floorLock   = `SELECT id FROM runs WHERE id = $1 AND tenant_id = $2 FOR UPDATE`
	floorInsert = `
INSERT INTO actions (id, run_id, tenant_id, action_id, kind, tool_name, summary, step_number, status,
       arguments, normalized_arguments_hash, action, decision, side_effect, risk, idempotency_class,
       origin_trust, created_at, updated_at)
VALUES ($1, $2, $3, $4, 'tool_call', 'workspace.read_text', 'read the notes', 1, 'PROPOSED',
        '{"path": "notes/todo.txt"}', 'h', '{}', '{"decision": "allow"}', 'read', 'low', 'idempotent',
        'user', now(), now())`
	floorEvent = `
INSERT INTO events (tenant_id, run_id, type, payload, created_at)
VALUES ($1, $2, 'action.authorized', '{"tool_name": "workspace.read_text"}', now())`
	floorUpdate = `UPDATE runs SET updated_at = now() WHERE id = $1`
)

// BenchmarkProposeAllowSides sets an allowed proposal over HTTP (the real
// server, auth, strict decoding, the engine, the service's transaction)
// beside its SQL floor, with benchAgents concurrent agents each on its own
// claimed run, in one run on one database. `benchstat -col /side` prints
// the two side by side; make bench prints the throughput ratio.
func BenchmarkProposeAllowSides(b *testing.B) {
	ctx := context.Background()
	pool := testdb.New(b)
	token, sum, err := auth.NewToken()
	if err != nil {
		b.Fatal(err)
	}
	tenant := "bench-" + uuid.NewString()[:8]
	dir, err := auth.Parse(fmt.Appendf(nil, "principals:\n  - {id: agent, tenant_id: %s, scopes: [run.read, run.write, workspace.read], tokens: [{name: bench, sha256: %q}]}\n", tenant, sum))
	if err != nil {
		b.Fatal(err)
	}
	agent, _ := dir.ByID("agent")
	set, err := rules.Load(rules.Options{})
	if err != nil {
		b.Fatal(err)
	}
	svc, err := service.New(ctx, service.Config{Pool: pool, Policy: set, Principals: dir})
	if err != nil {
		b.Fatal(err)
	}
	ts := httptest.NewUnstartedServer(nil)
	// The rate limit stops a runaway agent; the benchmark is one on purpose.
	sessions, err := service.NewConsoleSessions(pool, service.LoginThrottle{})
	if err != nil {
		b.Fatal(err)
	}
	s, err := New(Config{Service: svc, Directory: dir, Policy: set, Metrics: metrics.New(), Sessions: sessions,
		BaseURL: "http://" + ts.Listener.Addr().String(), RateLimit: RateLimit{PerSecond: 1e9, Burst: 1e9}})
	if err != nil {
		b.Fatal(err)
	}
	ts.Config.Handler = s.Handler()
	ts.Start()
	b.Cleanup(ts.Close)
	hc := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: benchAgents}}
	c, err := client.New(ts.URL, token, hc)
	if err != nil {
		b.Fatal(err)
	}
	claim := func(b *testing.B) (api.Run, api.Lease) {
		run, err := svc.SubmitRun(ctx, agent, api.SubmitRunInput{SessionID: uuid.NewString(), AgentID: "bench", AgentVersion: "1.0.0"})
		if err != nil {
			b.Fatal(err)
		}
		worker := uuid.NewString()
		claimed, ok, err := svc.ClaimRun(ctx, agent, api.ClaimInput{WorkerID: worker, LeaseSeconds: 3600, RunID: run.ID})
		if err != nil || !ok {
			b.Fatalf("claim: %v %v", ok, err)
		}
		return claimed, api.Lease{WorkerID: worker, FencingToken: claimed.FencingToken}
	}
	parallel := func(b *testing.B, op func(b *testing.B, run api.Run, lease api.Lease) error) {
		b.SetParallelism((benchAgents + runtime.GOMAXPROCS(0) - 1) / runtime.GOMAXPROCS(0))
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			run, lease := claim(b)
			for pb.Next() {
				if err := op(b, run, lease); err != nil {
					b.Error(err)
					return
				}
			}
		})
	}
	b.Run("side=floor", func(b *testing.B) {
		parallel(b, func(b *testing.B, run api.Run, _ api.Lease) error {
			return floorPropose(ctx, pool, run)
		})
	})
	b.Run("side=http", func(b *testing.B) {
		parallel(b, func(b *testing.B, run api.Run, lease api.Lease) error {
			res, err := c.Propose(ctx, run.ID, lease, engine.ActionRequest{
				ActionID: uuid.NewString(), Kind: engine.ActionToolCall, Name: "workspace.read_text",
				Summary: "read the notes", StepNumber: 1, Arguments: map[string]any{"path": "notes/todo.txt"},
				OriginTrust: engine.TrustUser, Target: &engine.ExecutionTarget{Kind: engine.TargetSandbox, Isolated: true},
			})
			if err == nil && res.Decision != engine.DecisionAllow {
				err = fmt.Errorf("decision %s, want allow", res.Decision)
			}
			return err
		})
	})
}

// floorPropose is the SQL floor's transaction.
func floorPropose(ctx context.Context, pool *pgxpool.Pool, run api.Run) error {
	return pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, floorLock, run.ID, run.TenantID); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, floorInsert, uuid.NewString(), run.ID, run.TenantID, uuid.NewString()); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, floorEvent, run.TenantID, run.ID); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, floorUpdate, run.ID)
		return err
	})
}

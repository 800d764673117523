package e2e

import (
	"context"
	"errors"
	"flag"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"gatehouse/api"
	"gatehouse/client"
	"gatehouse/engine"
	"gatehouse/service"
)

var (
	soakFor   = flag.Duration("soak", 0, "run each soak scenario this long with a fault every -soak-every (make soak); 0 runs the short variant")
	soakEvery = flag.Duration("soak-every", 10*time.Second, "time between faults of the long soak")
)

// soakConfig sizes one soak: the short variant keeps `make test` fast.
type soakConfig struct {
	dur, every        time.Duration
	agents, approvers int
	readers           int
	tenant            string
}

func soakSettings() soakConfig {
	c := soakConfig{dur: *soakFor, every: *soakEvery, agents: 8, approvers: 3, readers: 3, tenant: "acme"}
	if c.dur == 0 {
		c.dur, c.every, c.agents, c.approvers = 6*time.Second, 2*time.Second, 4, 2
	}
	return c
}

// TestSoak drives mixed load through the real binary under three faults,
// one scenario each: SIGKILL and restart of the server; two replicas on one
// database, started together and killed in turn; PostgreSQL restarted
// mid-load. Then it checks the invariants straight from the database.
func TestSoak(t *testing.T) {
	cfg := soakSettings()
	t.Run("kill", func(t *testing.T) {
		srv := newServer(t, "")
		p := srv.spawn(t, serverOptions{})
		srv.waitReady(t, p)
		soak(t, cfg, []*server{srv}, func(int) string {
			p.kill()
			p = srv.spawn(t, serverOptions{})
			srv.waitReady(t, p)
			return "kill"
		})
	})
	t.Run("replicas", func(t *testing.T) {
		a := newServer(t, "")
		b := *a
		b.BaseURL = "http://" + freeAddr(t)
		b.LogPath = strings.TrimSuffix(a.LogPath, ".log") + "-b.log"
		srvs := []*server{a, &b}
		procs := []*proc{a.spawn(t, serverOptions{}), b.spawn(t, serverOptions{})}
		a.waitReady(t, procs[0])
		b.waitReady(t, procs[1])
		soak(t, cfg, srvs, func(n int) string {
			i := n % 2
			procs[i].kill()
			procs[i] = srvs[i].spawn(t, serverOptions{})
			srvs[i].waitReady(t, procs[i])
			return "kill"
		})
	})
	t.Run("pg_restart", func(t *testing.T) {
		pg := throwawayCluster(t)
		srv := newServer(t, pg.url)
		p := srv.spawn(t, serverOptions{})
		srv.waitReady(t, p)
		soak(t, cfg, []*server{srv}, func(int) string {
			pg.run(t, "restart")
			return "pg_restart"
		})
	})
}

// cluster is a throwaway PostgreSQL cluster of scripts/pg.sh.
type cluster struct {
	env []string
	url string
}

func throwawayCluster(t *testing.T) *cluster {
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	data := filepath.Join(root, ".data", "soak-pg-"+randomHex(t, 4))
	port := strings.TrimPrefix(freeAddr(t), "127.0.0.1:")
	c := &cluster{env: []string{"PGLOCAL_DATA=" + data, "PGLOCAL_PORT=" + port}}
	t.Cleanup(func() {
		c.run(t, "stop")
		_ = os.RemoveAll(data)
		_ = os.RemoveAll(data + "-run")
	})
	c.url = strings.TrimSpace(c.run(t, "run"))
	return c
}

func (c *cluster) run(t *testing.T, mode string) string {
	t.Helper()
	cmd := exec.Command("../scripts/pg.sh", mode)
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "DATABASE_URL=") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	cmd.Env = append(cmd.Env, c.env...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("pg.sh %s: %v\n%s", mode, err, stderr.String())
	}
	return string(out)
}

// soakStats is what the load saw, to check against the database.
type soakStats struct {
	mu        sync.Mutex
	parked    map[string]bool                  // approval ids answered to proposals
	answered  map[string]engine.ApprovalStatus // approval id -> status of a 200 resolve
	proposals atomic.Int64
	resolves  atomic.Int64
	conflicts atomic.Int64
	outages   atomic.Int64 // 503 unavailable answers
	refused   atomic.Int64 // no answer: connection refused or cut by a kill
	internal  atomic.Int64 // 500s: never expected
	faults    map[string]int
}

// record classifies a failed call.
func (s *soakStats) record(t *testing.T, what string, err error) {
	var ce *client.Error
	switch {
	case errors.As(err, &ce) && ce.Status == 503 && ce.Code == "unavailable":
		s.outages.Add(1)
	case errors.As(err, &ce) && ce.Status >= 500:
		s.internal.Add(1)
		t.Errorf("%s: %v", what, err)
	case errors.As(err, &ce):
		t.Errorf("%s: %v", what, err)
	default:
		s.refused.Add(1)
	}
}

func soak(t *testing.T, cfg soakConfig, srvs []*server, fault func(n int) string) {
	st := &soakStats{parked: map[string]bool{}, answered: map[string]engine.ApprovalStatus{}, faults: map[string]int{}}
	stop, cancel := context.WithTimeout(context.Background(), cfg.dur)
	defer cancel()
	ctx := testContext(t)
	pick := func(i int) *server { return srvs[i%len(srvs)] }

	var load sync.WaitGroup
	for i := range cfg.agents {
		load.Go(func() { soakAgent(stop, ctx, t, pick(i).Client("alice"), st) })
	}
	for i := range cfg.approvers {
		load.Go(func() { soakApprover(stop, ctx, t, pick(i).Client("bob"), st) })
	}
	caughtUp := make(chan int64)
	read := make([][]int64, cfg.readers)
	var readers sync.WaitGroup
	for i := range cfg.readers {
		readers.Go(func() { read[i] = soakReader(ctx, pick(i).Client("bob"), caughtUp) })
	}
	var faults sync.WaitGroup
	faults.Go(func() {
		tick := time.NewTicker(cfg.every)
		defer tick.Stop()
		for n := 0; ; n++ {
			select {
			case <-stop.Done():
				return
			case <-tick.C:
				kind := fault(n)
				st.mu.Lock()
				st.faults[kind]++
				st.mu.Unlock()
			}
		}
	})
	load.Wait()
	faults.Wait()

	pool, err := pgxpool.New(ctx, srvs[0].dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	var total int64
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM events WHERE tenant_id = $1`, cfg.tenant).Scan(&total); err != nil {
		t.Fatal(err)
	}
	for range cfg.readers {
		caughtUp <- total
	}
	readers.Wait()

	t.Logf("%s: faults %v; proposals %d, approvals parked %d, resolved %d (409 %d); answers 503 %d, no answer %d, 500 %d",
		t.Name(), st.faults, st.proposals.Load(), len(st.parked), st.resolves.Load(), st.conflicts.Load(),
		st.outages.Load(), st.refused.Load(), st.internal.Load())
	checkSoakInvariants(t, ctx, pool, cfg.tenant, st, read)
}

func soakAgent(stop, ctx context.Context, t *testing.T, c *client.Client, st *soakStats) {
	for stop.Err() == nil {
		run, err := c.SubmitRun(ctx, api.SubmitRunInput{SessionID: uuid.NewString(), AgentID: "soak", AgentVersion: "1.0.0"})
		if err != nil {
			st.record(t, "submit", err)
			continue
		}
		worker := uuid.NewString()
		claimed, ok, err := c.Claim(ctx, api.ClaimInput{WorkerID: worker, LeaseSeconds: 60, RunID: run.ID})
		if err != nil || !ok {
			if err != nil {
				st.record(t, "claim", err)
			}
			continue
		}
		lease := api.Lease{WorkerID: worker, FencingToken: claimed.FencingToken}
		actions := []engine.ActionRequest{allowedAction()}
		if rand.IntN(2) == 0 {
			actions = append(actions, parkingAction())
		}
		for _, a := range actions {
			res, err := c.Propose(ctx, run.ID, lease, a)
			if err != nil {
				st.record(t, "propose", err)
				break
			}
			st.proposals.Add(1)
			if res.ApprovalID != "" {
				st.mu.Lock()
				st.parked[res.ApprovalID] = true
				st.mu.Unlock()
			}
		}
	}
}

func soakApprover(stop, ctx context.Context, t *testing.T, c *client.Client, st *soakStats) {
	for stop.Err() == nil {
		page, err := c.ListApprovals(ctx, client.ApprovalQuery{Limit: 20})
		if err != nil {
			st.record(t, "list", err)
			time.Sleep(20 * time.Millisecond)
			continue
		}
		if len(page.Items) == 0 {
			time.Sleep(20 * time.Millisecond)
			continue
		}
		for _, a := range page.Items {
			r := engine.ResolutionApproveOnce
			if rand.IntN(2) == 0 {
				r = engine.ResolutionDeny
			}
			got, err := c.Resolve(ctx, a.ID, r, "")
			switch {
			case err == nil:
				st.resolves.Add(1)
				st.mu.Lock()
				if prev, ok := st.answered[a.ID]; ok && prev != got.Status {
					t.Errorf("approval %s answered %s, then %s", a.ID, prev, got.Status)
				}
				st.answered[a.ID] = got.Status
				st.mu.Unlock()
			case client.IsCode(err, "conflict"):
				st.conflicts.Add(1)
			default:
				st.record(t, "resolve", err)
			}
		}
	}
}

// soakReader reads the tenant's event stream from the start, through
// every fault, until it has as many events as caughtUp says were written;
// it returns the ids in the order received.
func soakReader(ctx context.Context, c *client.Client, caughtUp <-chan int64) []int64 {
	var ids []int64
	after, total := service.StartCursor, int64(-1)
	for ctx.Err() == nil && (total < 0 || int64(len(ids)) < total) {
		if total < 0 {
			select {
			case total = <-caughtUp:
			default:
			}
		}
		page, err := c.Events(ctx, client.EventQuery{After: after, Limit: 50, Wait: 1})
		if err != nil {
			time.Sleep(50 * time.Millisecond)
			continue
		}
		for _, e := range page.Events {
			ids = append(ids, e.ID)
		}
		after = page.Watermark
	}
	return ids
}

// soakViolations names each invariant with how often it held and failed.
type soakViolations struct {
	t      *testing.T
	checks map[string][2]int
}

func (v *soakViolations) check(name string, ok bool, format string, args ...any) {
	c := v.checks[name]
	if ok {
		c[0]++
	} else {
		c[1]++
		v.t.Errorf(name+": "+format, args...)
	}
	v.checks[name] = c
}

func checkSoakInvariants(t *testing.T, ctx context.Context, pool *pgxpool.Pool, tenant string, st *soakStats, read [][]int64) {
	v := &soakViolations{t: t, checks: map[string][2]int{}}
	type approvalRow struct {
		status             string
		resolved           bool
		requested, settled int
	}
	rows, err := pool.Query(ctx, `
SELECT a.id::text, a.status, a.resolved_at IS NOT NULL,
       (SELECT count(*) FROM events e WHERE e.tenant_id = a.tenant_id AND e.type = 'approval.requested' AND e.payload->>'approval_id' = a.id::text),
       (SELECT count(*) FROM events e WHERE e.tenant_id = a.tenant_id AND e.type = 'approval.resolved' AND e.payload->>'approval_id' = a.id::text)
  FROM approvals a WHERE a.tenant_id = $1`, tenant)
	if err != nil {
		t.Fatal(err)
	}
	approvals := map[string]approvalRow{}
	for rows.Next() {
		var id string
		var a approvalRow
		if err := rows.Scan(&id, &a.status, &a.resolved, &a.requested, &a.settled); err != nil {
			t.Fatal(err)
		}
		approvals[id] = a
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	for id, a := range approvals {
		final := a.status != string(engine.ApprovalPending)
		v.check("one final state per approval", final == a.resolved, "approval %s is %s with resolved_at set=%v", id, a.status, a.resolved)
		v.check("one approval.requested per approval", a.requested == 1, "approval %s: %d", id, a.requested)
		v.check("approval.resolved once per final approval", (final && a.settled == 1) || (!final && a.settled == 0), "approval %s (%s): %d", id, a.status, a.settled)
	}
	for id := range st.parked {
		_, ok := approvals[id]
		v.check("every parked answer is stored", ok, "approval %s answered but not stored", id)
	}
	for id, status := range st.answered {
		v.check("client answers match the stored rows (no terminal row changed)", approvals[id].status == string(status), "approval %s answered %s, stored %s", id, status, approvals[id].status)
	}

	var doubles, stuck int
	if err := pool.QueryRow(ctx, `
SELECT count(*) FROM (SELECT payload->>'invocation_id' FROM events
 WHERE tenant_id = $1 AND type = 'action.authorized' GROUP BY 1 HAVING count(*) > 1) d`, tenant).Scan(&doubles); err != nil {
		t.Fatal(err)
	}
	v.check("no double execution (one action.authorized per invocation)", doubles == 0, "%d invocations authorized twice", doubles)
	if err := pool.QueryRow(ctx, `
SELECT count(*) FROM runs r WHERE r.tenant_id = $1 AND (
       (r.status = 'RUNNING' AND r.lease_expires_at IS NULL)
    OR (r.status = 'WAITING_FOR_APPROVAL' AND NOT EXISTS (SELECT 1 FROM approvals a WHERE a.run_id = r.id AND a.status = 'pending')))`,
		tenant).Scan(&stuck); err != nil {
		t.Fatal(err)
	}
	v.check("no stuck or unreclaimable run", stuck == 0, "%d runs", stuck)

	evRows, err := pool.Query(ctx, `SELECT id FROM events WHERE tenant_id = $1`, tenant)
	if err != nil {
		t.Fatal(err)
	}
	ids, err := pgx.CollectRows(evRows, pgx.RowTo[int64])
	if err != nil {
		t.Fatal(err)
	}
	for r, got := range read {
		seen := map[int64]int{}
		for _, id := range got {
			seen[id]++
		}
		missing, repeated := 0, 0
		for _, id := range ids {
			switch seen[id] {
			case 0:
				missing++
			case 1:
			default:
				repeated++
			}
		}
		v.check("gap-free event stream from 0", missing == 0 && repeated == 0 && len(got) == len(ids),
			"reader %d: %d of %d events missing, %d repeated, %d received", r, missing, len(ids), repeated, len(got))
	}
	var report []string
	for name, c := range v.checks {
		report = append(report, name+": "+strconv.Itoa(c[0])+" held, "+strconv.Itoa(c[1])+" violated")
	}
	slices.Sort(report)
	t.Logf("invariants over %d approvals, %d events:\n  %s", len(approvals), len(ids), strings.Join(report, "\n  "))
}

package console

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/labstack/echo/v4"

	"gatehouse/api"
	"gatehouse/auth"
	"gatehouse/engine"
	"gatehouse/handlers/internal/httpx"
	"gatehouse/internal/testdb"
	"gatehouse/rules"
	"gatehouse/service"
)

// queueSizes are the queue lengths BenchmarkQueuePage renders; each lives in
// its own tenant so one database holds all three.
var queueSizes = []int{100, 1_000, 10_000}

const benchPrincipals = `principals:
  - {id: q100, tenant_id: bench-q100, scopes: [run.read, run.write, approval.read, approval.resolve, demo.write]}
  - {id: q1000, tenant_id: bench-q1000, scopes: [run.read, run.write, approval.read, approval.resolve, demo.write]}
  - {id: q10000, tenant_id: bench-q10000, scopes: [run.read, run.write, approval.read, approval.resolve, demo.write]}
  - {id: u1, tenant_id: bench-u1, scopes: [run.read, run.write, approval.read, approval.resolve, demo.write]}
  - {id: u10, tenant_id: bench-u10, scopes: [run.read, run.write, approval.read, approval.resolve, demo.write]}
  - {id: u40, tenant_id: bench-u40, scopes: [run.read, run.write, approval.read, approval.resolve, demo.write]}
`

// cloneApproval copies one parked approval, and the action it hangs off,
// n times with fresh ids and later creation times: the queue holds n real
// rows without n agent round trips. jsonb_populate_record keeps every other
// column as it is.
const cloneApproval = `
WITH g AS (
  SELECT n, gen_random_uuid() AS action_id, gen_random_uuid() AS inv_id
    FROM generate_series(1, $2::int) n),
copies AS (
  INSERT INTO actions
  SELECT (jsonb_populate_record(x, jsonb_build_object('id', g.inv_id, 'action_id', g.action_id))).*
    FROM actions x JOIN approvals ap ON (x.run_id, x.action_id) = (ap.run_id, ap.action_id), g
   WHERE ap.id = $1
  RETURNING id)
INSERT INTO approvals
SELECT (jsonb_populate_record(ap, jsonb_build_object(
          'id', gen_random_uuid(), 'action_id', g.action_id, 'tool_invocation_id', g.inv_id,
          'created_at', ap.created_at + g.n * interval '1 millisecond'))).*
  FROM approvals ap, g
 WHERE ap.id = $1`

// BenchmarkQueuePage renders the queue page handler (list, count, the
// expiring-soon group, cards or rows, template) for queues of 100, 1,000
// and 10,000 pending approvals, in both views. Keyset pagination, the
// capped count and the expiry index keep the time per page flat.
func BenchmarkQueuePage(b *testing.B) {
	bc := newBenchConsole(b)
	svc, dir := bc.svc, bc.dir
	render := func(b *testing.B, p engine.Principal, target string) { bc.serve(b, p, target, (*Console).Queue) }
	for _, n := range queueSizes {
		p, _ := dir.ByID(fmt.Sprintf("q%d", n))
		fillQueue(b, svc, p, n)
		for _, view := range []string{"cards", "list"} {
			b.Run(fmt.Sprintf("pending=%d/view=%s", n, view), func(b *testing.B) { render(b, p, "/?view="+view) })
		}
	}
	// A page 9,000 approvals deep costs what the first does: the cursor is
	// an index condition, not a filter over the pages before it.
	p, _ := dir.ByID("q10000")
	cursor := cursorAfter(b, svc, p, 9_000)
	b.Run("pending=10000/after=9000", func(b *testing.B) { render(b, p, "/?cursor="+cursor) })
}

// BenchmarkApprovalDetail renders the detail page with its context
// queries beside queues of 100, 1,000 and 10,000 pending approvals. The
// queue's approvals are all the same call in one run, so the page of a
// fresh run's identical request counts n identical requests pending
// (identical=n), and the page of one of the queue's own approvals reads a
// run of n steps (steps=n): both stay flat on their indexes.
func BenchmarkApprovalDetail(b *testing.B) {
	ctx := context.Background()
	bc := newBenchConsole(b)
	for _, n := range queueSizes {
		p, _ := bc.dir.ByID(fmt.Sprintf("q%d", n))
		fillQueue(b, bc.svc, p, n)
		fresh := parkOne(b, bc.svc, p)
		page, err := bc.svc.ListApprovals(ctx, p, service.ApprovalFilter{Limit: 1})
		if err != nil || len(page.Items) == 0 {
			b.Fatalf("queue: %v", err)
		}
		for name, id := range map[string]string{"identical": fresh, "steps": page.Items[0].ID} {
			b.Run(fmt.Sprintf("%s=%d", name, n), func(b *testing.B) {
				bc.serveParam(b, p, "/approvals/"+id, "id", id, (*Console).ApprovalShow)
			})
		}
	}
}

// cursorAfter pages through p's queue and returns the cursor after its
// first n approvals.
func cursorAfter(b *testing.B, svc *service.Service, p engine.Principal, n int) string {
	b.Helper()
	cursor := ""
	for seen := 0; seen < n; seen += 200 {
		page, err := svc.ListApprovals(context.Background(), p, service.ApprovalFilter{Limit: 200, Cursor: cursor})
		if err != nil || page.NextCursor == "" {
			b.Fatalf("page after %d: %v", seen, err)
		}
		cursor = page.NextCursor
	}
	return cursor
}

// fillQueue parks one real approval for p's tenant and clones it to n
// pending approvals, unless an earlier run of the benchmark already did.
func fillQueue(b *testing.B, svc *service.Service, p engine.Principal, n int) {
	b.Helper()
	ctx := context.Background()
	pool := testdb.New(b)
	var have int
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM approvals WHERE tenant_id = $1 AND status = 'pending'`, p.TenantID).Scan(&have); err != nil {
		b.Fatal(err)
	}
	if have >= n {
		return
	}
	approvalID := parkOne(b, svc, p)
	if _, err := pool.Exec(ctx, cloneApproval, approvalID, n-have-1); err != nil {
		b.Fatal(err)
	}
	if _, err := pool.Exec(ctx, `ANALYZE approvals, actions`); err != nil {
		b.Fatal(err)
	}
}

// BenchmarkQueueUpdates is the live queue's poll after changed=N approvals
// were requested: one op renders every changed card, so the cost per card
// is what the page pays per new approval.
func BenchmarkQueueUpdates(b *testing.B) {
	ctx := context.Background()
	bc := newBenchConsole(b)
	svc, dir := bc.svc, bc.dir
	for _, n := range []int{1, 10, 40} {
		p, _ := dir.ByID(fmt.Sprintf("u%d", n))
		cursor, err := svc.EventWatermark(ctx, p)
		if err != nil {
			b.Fatal(err)
		}
		for range n {
			parkOne(b, svc, p)
		}
		b.Run(fmt.Sprintf("changed=%d", n), func(b *testing.B) {
			bc.serve(b, p, "/queue/updates?after="+url.QueryEscape(cursor), (*Console).QueueUpdates)
		})
	}
}

// benchConsole is a console over a real service on the package's database,
// for the benchmarks to drive handlers directly.
type benchConsole struct {
	svc *service.Service
	dir *auth.Directory
	cn  *Console
	e   *echo.Echo
}

func newBenchConsole(b *testing.B) benchConsole {
	b.Helper()
	ctx := context.Background()
	pool := testdb.New(b)
	set, err := rules.Load(rules.Options{})
	if err != nil {
		b.Fatal(err)
	}
	dir, err := auth.Parse([]byte(benchPrincipals))
	if err != nil {
		b.Fatal(err)
	}
	svc, err := service.New(ctx, service.Config{Pool: pool, Policy: set, Principals: dir})
	if err != nil {
		b.Fatal(err)
	}
	sessions, err := service.NewConsoleSessions(pool, service.LoginThrottle{})
	if err != nil {
		b.Fatal(err)
	}
	cn := New(Config{Service: svc, Directory: dir, Policy: set, Sessions: sessions, BaseURL: "http://127.0.0.1:8080", Now: time.Now})
	return benchConsole{svc: svc, dir: dir, cn: cn, e: echo.New()}
}

// serve runs handler on GET target as p's signed-in session, once an op.
func (bc benchConsole) serve(b *testing.B, p engine.Principal, target string, handler func(*Console, echo.Context) error) {
	bc.serveParam(b, p, target, "", "", handler)
}

// serveParam is serve for a route with a path parameter (name = value).
func (bc benchConsole) serveParam(b *testing.B, p engine.Principal, target, name, value string, handler func(*Console, echo.Context) error) {
	b.ReportAllocs()
	for b.Loop() {
		rec := httptest.NewRecorder()
		c := bc.e.NewContext(httptest.NewRequest(http.MethodGet, target, nil), rec)
		if name != "" {
			c.SetParamNames(name)
			c.SetParamValues(value)
		}
		httpx.SetPrincipal(c, p)
		c.Set(ctxConsoleSession, consoleSession{Principal: p, CSRF: "bench"})
		if err := handler(bc.cn, c); err != nil || rec.Code != http.StatusOK {
			b.Fatalf("GET %s: %d %v", target, rec.Code, err)
		}
	}
}

// parkOne parks one real approval for p's tenant through the service and
// returns its id.
func parkOne(b *testing.B, svc *service.Service, p engine.Principal) string {
	b.Helper()
	ctx := context.Background()
	run, err := svc.SubmitRun(ctx, p, api.SubmitRunInput{SessionID: uuid.NewString(), AgentID: "bench", AgentVersion: "1"})
	if err != nil {
		b.Fatal(err)
	}
	run, ok, err := svc.ClaimRun(ctx, p, api.ClaimInput{WorkerID: "bench", LeaseSeconds: 60, RunID: run.ID})
	if err != nil || !ok {
		b.Fatalf("claim: %v %v", ok, err)
	}
	res, err := svc.Propose(ctx, p, run.ID, api.Lease{WorkerID: "bench", FencingToken: run.FencingToken}, engine.ActionRequest{
		ActionID: uuid.NewString(), Kind: engine.ActionToolCall, Name: "demo.external_write", Summary: "set the status of record 42",
		StepNumber: 1, Arguments: map[string]any{"record": "42", "field": "status", "value": "shipped"}, OriginTrust: engine.TrustUser,
	})
	if err != nil || res.ApprovalID == "" {
		b.Fatalf("park: %+v %v", res, err)
	}
	return res.ApprovalID
}

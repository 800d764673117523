package mcpgw_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"gatehouse/api"
	"gatehouse/auth"
	"gatehouse/engine"
	"gatehouse/handlers"
	"gatehouse/internal/metrics"
	"gatehouse/internal/testdb"
	"gatehouse/mcpgw"
	"gatehouse/rules"
	"gatehouse/service"
)

// The test binary doubles as a stdio upstream: the demo server plus a
// crash tool that kills the process mid-call, every call it received
// appended to the file GATEHOUSE_MCPGW_CALLS names.
const upstreamEnv = "GATEHOUSE_MCPGW_TEST_UPSTREAM"

func TestMain(m *testing.M) {
	if os.Getenv(upstreamEnv) == "1" {
		runStdioUpstream()
		return
	}
	os.Exit(m.Run())
}

func runStdioUpstream() {
	log := os.Getenv("GATEHOUSE_MCPGW_CALLS")
	s := mcpgw.DemoServer(func(tool string, _ json.RawMessage) { appendLine(log, tool) })
	s.AddTool(&mcp.Tool{Name: "stall", Description: "Answers after 20 s, past the gateway's call timeout.", InputSchema: map[string]any{"type": "object"}},
		func(ctx context.Context, _ *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			appendLine(log, "stall")
			select {
			case <-time.After(20 * time.Second):
			case <-ctx.Done():
			}
			return &mcp.CallToolResult{}, nil
		})
	s.AddTool(&mcp.Tool{Name: "crash", Description: "Exits the upstream mid-call.", InputSchema: map[string]any{"type": "object"}},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			appendLine(log, "crash")
			os.Exit(3)
			return nil, nil
		})
	if err := s.Run(context.Background(), &mcp.StdioTransport{}); err != nil {
		os.Exit(1)
	}
}

func appendLine(file, line string) {
	if file == "" {
		return
	}
	f, err := os.OpenFile(file, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600)
	if err != nil {
		return
	}
	defer f.Close()
	fmt.Fprintln(f, line)
}

// gatewayYAML classifies the in-process upstream "demo" (Streamable HTTP)
// and, when %[2]s is set, the stdio upstream "proc" (this test binary).
const gatewayYAML = `
progress_interval: 200ms
call_timeout: 3s
upstreams:
  - id: demo
    http: {url: %[1]q}
    tools:
      - {name: echo, version: "1", side_effect: none, risk: low, idempotency: read_only, arguments: [message]}
      - {name: list_notes, version: "1", side_effect: none, risk: low, idempotency: read_only}
      - {name: add_note, version: "1", side_effect: external_write, risk: high, idempotency: non_idempotent,
         required_scopes: [mcp.demo.write], arguments: [title, body]}
      - {name: describe_url, version: "1", side_effect: network_read, risk: low, idempotency: read_only,
         arguments: [url], urls: [url]}
      - {name: run_command, version: "1", side_effect: code_execution, risk: medium, idempotency: non_idempotent,
         arguments: [command], commands: [command]}
%[2]s`

const procYAML = `
  - id: proc
    stdio:
      command: %[1]q
      args: ["-test.run=^$"]
      env: {GATEHOUSE_MCPGW_TEST_UPSTREAM: "1", GATEHOUSE_MCPGW_CALLS: %[2]q}
    tools:
      - {name: echo, version: "1", side_effect: none, risk: low, idempotency: read_only, arguments: [message]}
      - {name: crash, version: "1", side_effect: none, risk: low, idempotency: non_idempotent}
      - {name: stall, version: "1", side_effect: none, risk: low, idempotency: non_idempotent}
`

type harness struct {
	t        testing.TB
	svc      *service.Service
	gw       *mcpgw.Gateway
	endpoint string
	tenant   string
	tokens   map[string]string // principal id -> bearer token
	dir      *auth.Directory
	procLog  string // calls the stdio upstream received, one per line
	upstream string // the in-process upstream's URL
	// upstreamServer is the in-process upstream, one server for every
	// session (the gateway's and a benchmark's direct one).
	upstreamServer *mcp.Server
	policy         *rules.Set
	sessions       *service.ConsoleSessions
	exe            string // this test binary, the stdio upstream

	mu       sync.Mutex
	forwards map[string]int // calls the in-process upstream received, by tool
}

type harnessOpts struct {
	proc  bool
	now   func() time.Time
	extra string // more upstreams, YAML list items
	// writeTimeout is the server's, as `console serve` sets one.
	writeTimeout time.Duration
}

// principals of every harness tenant: an agent holding the demo server's
// scopes, one missing mcp.demo.use, one missing mcp.demo.write, an
// approver; and an agent of another tenant.
const principalsYAML = `principals:
  - {id: agent, tenant_id: %[1]s, scopes: [run.read, run.write, run.cancel, mcp.demo.use, mcp.demo.write, mcp.proc.use, mcp.everything.use], tokens: [{name: a, sha256: %[3]q}]}
  - {id: nouse, tenant_id: %[1]s, scopes: [run.read, run.write, mcp.demo.write], tokens: [{name: a, sha256: %[4]q}]}
  - {id: nowrite, tenant_id: %[1]s, scopes: [run.read, run.write, mcp.demo.use], tokens: [{name: a, sha256: %[5]q}]}
  - {id: approver, tenant_id: %[1]s, scopes: [approval.read, approval.resolve, run.read]}
  - {id: other, tenant_id: %[2]s, scopes: [run.read, run.write, run.cancel, approval.read, approval.resolve, mcp.demo.use, mcp.demo.write], tokens: [{name: a, sha256: %[6]q}]}
`

func setup(t testing.TB, o harnessOpts) *harness {
	t.Helper()
	h := &harness{t: t, tenant: "t" + strings.ReplaceAll(uuid.NewString()[:13], "-", ""), tokens: map[string]string{}, forwards: map[string]int{}}

	h.upstreamServer = mcpgw.DemoServer(func(tool string, _ json.RawMessage) { h.count(tool) })
	// A command tool for the matrix and hardline cases; it runs nothing.
	h.upstreamServer.AddTool(&mcp.Tool{Name: "run_command", InputSchema: map[string]any{"type": "object"}},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			h.count("run_command")
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "ran"}}}, nil
		})
	up := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return h.upstreamServer }, nil))
	t.Cleanup(up.Close)
	h.upstream = up.URL

	proc := ""
	if o.proc {
		exe, err := os.Executable()
		if err != nil {
			t.Fatal(err)
		}
		h.exe, h.procLog = exe, filepath.Join(t.TempDir(), "calls")
		proc = fmt.Sprintf(procYAML, exe, h.procLog)
	}
	cfg, err := mcpgw.Parse("gateway.yaml", fmt.Appendf(nil, gatewayYAML, up.URL, proc+o.extra))
	if err != nil {
		t.Fatal(err)
	}
	policy, err := rules.Load(cfg.PolicyOptions(rules.Options{}))
	if err != nil {
		t.Fatal(err)
	}
	h.policy = policy
	hashes := []any{h.tenant, h.tenant + "x"}
	for _, id := range []string{"agent", "nouse", "nowrite", "other"} {
		tok, sum, err := auth.NewToken()
		if err != nil {
			t.Fatal(err)
		}
		h.tokens[id] = tok
		hashes = append(hashes, sum)
	}
	if h.dir, err = auth.Parse(fmt.Appendf(nil, principalsYAML, hashes...)); err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	pool := testdb.New(t)
	m := metrics.New()
	h.svc, err = service.New(ctx, service.Config{Pool: pool, Policy: policy, Principals: h.dir, Now: o.now, Metrics: m, SkipProfileAudit: true})
	if err != nil {
		t.Fatal(err)
	}
	h.gw, err = mcpgw.New(ctx, mcpgw.Options{Config: cfg, Service: h.svc, Catalog: policy.Catalog(), ReplicaID: "test"})
	if err != nil {
		t.Fatal(err)
	}
	sessions, err := service.NewConsoleSessions(pool, service.LoginThrottle{})
	if err != nil {
		t.Fatal(err)
	}
	h.sessions = sessions
	ts := httptest.NewUnstartedServer(nil)
	base := "http://" + ts.Listener.Addr().String()
	srv, err := handlers.New(handlers.Config{
		Service: h.svc, Directory: h.dir, Policy: policy, Metrics: m, BaseURL: base, Sessions: sessions,
		SessionKeys: [][]byte{make([]byte, 32)}, MCP: h.gw,
		RateLimit: handlers.RateLimit{PerSecond: 10000, Burst: 10000},
	})
	if err != nil {
		t.Fatal(err)
	}
	ts.Config.Handler = srv.Handler()
	ts.Config.WriteTimeout = o.writeTimeout
	ts.Start()
	t.Cleanup(func() {
		h.gw.Close()
		ts.Close()
	})
	h.endpoint = base + "/mcp"
	return h
}

func (h *harness) principal(id string) engine.Principal {
	p, ok := h.dir.ByID(id)
	if !ok {
		h.t.Fatalf("no principal %s", id)
	}
	return p
}

// connect opens an MCP client session as a principal, with the official
// SDK's client over Streamable HTTP. progress, when set, sees the
// session's progress notifications.
func (h *harness) connect(id string, progress func(*mcp.ProgressNotificationParams)) *mcp.ClientSession {
	h.t.Helper()
	opts := &mcp.ClientOptions{}
	if progress != nil {
		opts.ProgressNotificationHandler = func(_ context.Context, r *mcp.ProgressNotificationClientRequest) { progress(r.Params) }
	}
	c := mcp.NewClient(&mcp.Implementation{Name: "test-client", Version: "1.0"}, opts)
	cs, err := c.Connect(h.t.Context(), &mcp.StreamableClientTransport{Endpoint: h.endpoint, HTTPClient: bearerClient(h.tokens[id])}, nil)
	if err != nil {
		h.t.Fatalf("connecting as %s: %v", id, err)
	}
	h.t.Cleanup(func() { _ = cs.Close() })
	return cs
}

func bearerClient(token string) *http.Client {
	return &http.Client{Transport: bearer{token: token}}
}

type bearer struct{ token string }

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return http.DefaultTransport.RoundTrip(r)
}

func call(t *testing.T, cs *mcp.ClientSession, tool string, args map[string]any) *mcp.CallToolResult {
	t.Helper()
	res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: tool, Arguments: args})
	if err != nil {
		t.Fatalf("calling %s: %v", tool, err)
	}
	return res
}

func text(res *mcp.CallToolResult) string {
	var b strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return b.String()
}

// denial reads a tool error as the gate's denial result, failing unless
// it is exactly the six fields.
func denial(t *testing.T, res *mcp.CallToolResult) engine.DenialResult {
	t.Helper()
	if !res.IsError {
		t.Fatalf("want a denial, got a result: %s", text(res))
	}
	var fields map[string]any
	if err := json.Unmarshal([]byte(text(res)), &fields); err != nil {
		t.Fatalf("denial is not JSON: %q", text(res))
	}
	if len(fields) != 6 {
		t.Fatalf("denial has %d fields, want the six of the thin result: %v", len(fields), fields)
	}
	var d engine.DenialResult
	_ = json.Unmarshal([]byte(text(res)), &d)
	return d
}

func (h *harness) count(tool string) {
	h.mu.Lock()
	h.forwards[tool]++
	h.mu.Unlock()
}

func (h *harness) forwarded(tool string) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.forwards[tool]
}

func (h *harness) procCalls() []string {
	b, err := os.ReadFile(h.procLog)
	if err != nil {
		return nil
	}
	var out []string
	sc := bufio.NewScanner(strings.NewReader(string(b)))
	for sc.Scan() {
		out = append(out, sc.Text())
	}
	return out
}

// pendingApproval waits for the one pending approval of the tenant.
func (h *harness) pendingApproval() api.Approval {
	h.t.Helper()
	approver := h.principal("approver")
	deadline := time.Now().Add(15 * time.Second)
	for time.Now().Before(deadline) {
		page, err := h.svc.ListApprovals(h.t.Context(), approver, service.ApprovalFilter{})
		if err != nil {
			h.t.Fatal(err)
		}
		if len(page.Items) > 0 {
			if len(page.Items) != 1 {
				h.t.Fatalf("want one pending approval, have %d", len(page.Items))
			}
			return page.Items[0]
		}
		time.Sleep(20 * time.Millisecond)
	}
	h.t.Fatal("no approval appeared")
	return api.Approval{}
}

func (h *harness) resolve(id string, r engine.ApprovalResolutionType) {
	h.t.Helper()
	if _, err := h.svc.ResolveApproval(h.t.Context(), h.principal("approver"), id, r, ""); err != nil {
		h.t.Fatal(err)
	}
}

// runs lists the runs of a tenant's principal, from their run.submitted
// events, once there are want of them (an event becomes readable a moment
// after its commit while older transactions are open).
func (h *harness) runs(p engine.Principal, want int) []api.Run {
	h.t.Helper()
	var out []api.Run
	eventually(h.t, fmt.Sprintf("%d runs", want), func() bool {
		evs, err := h.svc.ListEvents(h.t.Context(), p, service.EventFilter{Limit: 500})
		if err != nil {
			h.t.Fatal(err)
		}
		out = out[:0]
		for _, e := range evs {
			if e.Type == api.EventRunSubmitted {
				r, err := h.svc.GetRun(h.t.Context(), p, e.RunID)
				if err != nil {
					h.t.Fatal(err)
				}
				out = append(out, r)
			}
		}
		return len(out) == want
	})
	return out
}

func (h *harness) invocations(runID string) []api.Invocation {
	h.t.Helper()
	inv, err := h.svc.ListInvocations(h.t.Context(), h.principal("agent"), runID)
	if err != nil {
		h.t.Fatal(err)
	}
	return inv
}

// eventually retries cond until it holds or 10 s pass.
func eventually(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("never: %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// asyncCall calls a tool in the background.
func asyncCall(ctx context.Context, cs *mcp.ClientSession, tool string, args map[string]any) <-chan callResult {
	out := make(chan callResult, 1)
	go func() {
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: args, Meta: mcp.Meta{"progressToken": "p-" + tool}})
		out <- callResult{res, err}
	}()
	return out
}

type callResult struct {
	res *mcp.CallToolResult
	err error
}

func wait(t *testing.T, ch <-chan callResult) *mcp.CallToolResult {
	t.Helper()
	select {
	case r := <-ch:
		if r.err != nil {
			t.Fatalf("call: %v", r.err)
		}
		return r.res
	case <-time.After(20 * time.Second):
		t.Fatal("the call did not return")
	}
	return nil
}

type mcpgwHint = mcpgw.Hint

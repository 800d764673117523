package mcpgw_test

import (
	"context"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"gatehouse/api"
	"gatehouse/auth"
	"gatehouse/engine"
	"gatehouse/handlers"
	"gatehouse/internal/metrics"
	"gatehouse/mcpgw"
	"gatehouse/service"
)

func TestGatewayAllowedCallIsForwardedOnceRecordedAndTheRunEndsWithTheSession(t *testing.T) {
	t.Parallel()
	h := setup(t, harnessOpts{})
	cs := h.connect("agent", nil)
	res := call(t, cs, "demo.echo", map[string]any{"message": "hello"})
	if res.IsError || text(res) != "hello" {
		t.Fatalf("echo: %v %q", res.IsError, text(res))
	}
	if n := h.forwarded("echo"); n != 1 {
		t.Fatalf("forwarded %d times, want 1", n)
	}
	runs := h.runs(h.principal("agent"), 1)
	inv := h.invocations(runs[0].ID)
	if len(inv) != 1 || inv[0].ToolName != "demo.echo" || inv[0].Status != api.InvocationSucceeded || inv[0].OriginTrust != engine.TrustKnowledge {
		t.Fatalf("invocation: %+v", inv)
	}
	if runs[0].AgentID != "mcp:test-client" || runs[0].AgentVersion != "1.0" {
		t.Fatalf("run agent: %s %s", runs[0].AgentID, runs[0].AgentVersion)
	}
	_ = cs.Close()
	eventually(t, "the run completes when the session closes", func() bool {
		r, err := h.svc.GetRun(t.Context(), h.principal("agent"), runs[0].ID)
		return err == nil && r.Status == api.RunCompleted
	})
}

func TestGatewayDeniedCallReturnsOnlyTheThinDenial(t *testing.T) {
	t.Parallel()
	h := setup(t, harnessOpts{})
	cs := h.connect("agent", nil)
	// code_execution on an MCP server is not an isolated target: denied by the matrix.
	d := denial(t, call(t, cs, "demo.run_command", map[string]any{"command": "ls"}))
	if d.ReasonCode != "policy.matrix.code_execution" || d.Status != "denied" || d.Action != "demo.run_command" {
		t.Fatalf("denial: %+v", d)
	}
	if h.forwarded("run_command") != 0 {
		t.Fatal("a denied call reached the upstream")
	}
	// An argument the catalog entry does not declare is unclassifiable.
	d = denial(t, call(t, cs, "demo.echo", map[string]any{"message": "x", "extra": "y"}))
	if d.ReasonCode != engine.ReasonUnclassifiable {
		t.Fatalf("undeclared argument: %+v", d)
	}
}

func TestGatewayHardlineBlocksCommandAndMetadataURLArguments(t *testing.T) {
	t.Parallel()
	h := setup(t, harnessOpts{})
	cs := h.connect("agent", nil)
	for _, c := range []struct {
		tool string
		args map[string]any
	}{
		{"demo.run_command", map[string]any{"command": "rm -rf /"}},
		{"demo.describe_url", map[string]any{"url": "http://169.254.169.254/latest/meta-data/"}},
	} {
		d := denial(t, call(t, cs, c.tool, c.args))
		if !strings.HasPrefix(d.ReasonCode, "policy.hardline.") {
			t.Fatalf("%s %v: %+v", c.tool, c.args, d)
		}
	}
	// The near miss: a public URL is an operator-classified read-only
	// network read of an MCP server, allowed.
	res := call(t, cs, "demo.describe_url", map[string]any{"url": "https://example.com/a"})
	if res.IsError || !strings.Contains(text(res), "host example.com") {
		t.Fatalf("near miss: %q", text(res))
	}
	if h.forwarded("run_command") != 0 || h.forwarded("describe_url") != 1 {
		t.Fatalf("forwards: %v", h.forwards)
	}
}

func TestGatewayHidesUnclassifiedToolsAndShowsThemAsHints(t *testing.T) {
	t.Parallel()
	h := setup(t, harnessOpts{})
	cs := h.connect("agent", nil)
	var names []string
	for tool, err := range cs.Tools(t.Context(), nil) {
		if err != nil {
			t.Fatal(err)
		}
		names = append(names, tool.Name)
	}
	slices.Sort(names)
	want := []string{"demo.add_note", "demo.describe_url", "demo.echo", "demo.list_notes", "demo.run_command"}
	if !slices.Equal(names, want) {
		t.Fatalf("tools/list: %v, want %v", names, want)
	}
	if _, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "demo.export_notebook", Arguments: map[string]any{"to": "x"}}); err == nil {
		t.Fatal("an unclassified tool was callable")
	}
	if h.forwarded("export_notebook") != 0 {
		t.Fatal("an unclassified tool reached the upstream")
	}
	i := slices.IndexFunc(h.gw.Hints(), func(hint mcpgwHint) bool { return hint.Tool == "export_notebook" })
	if i < 0 || h.gw.Hints()[i].Classified {
		t.Fatalf("hints: %+v", h.gw.Hints())
	}
	if j := slices.IndexFunc(h.gw.Hints(), func(hint mcpgwHint) bool { return hint.Tool == "echo" }); j < 0 || !h.gw.Hints()[j].Annotations.ReadOnlyHint {
		t.Fatal("the upstream's readOnlyHint is not shown as a hint")
	}
}

func TestGatewayApprovedCallIsRevalidatedAndForwardedExactlyOnce(t *testing.T) {
	t.Parallel()
	h := setup(t, harnessOpts{})
	var mu sync.Mutex
	var progress []*mcp.ProgressNotificationParams
	cs := h.connect("agent", func(p *mcp.ProgressNotificationParams) {
		mu.Lock()
		progress = append(progress, p)
		mu.Unlock()
	})
	pending := asyncCall(t.Context(), cs, "demo.add_note", map[string]any{"title": "t1", "body": "b"})
	a := h.pendingApproval()
	if a.ToolName != "demo.add_note" || a.SideEffect != engine.SideEffectExternalWrite {
		t.Fatalf("card: %+v", a)
	}
	eventually(t, "a progress notification naming the expiry", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(progress) > 0 && strings.Contains(progress[len(progress)-1].Message, "expires at "+a.ExpiresAt.UTC().Format(time.RFC3339)) && progress[len(progress)-1].Total > 0
	})
	if h.forwarded("add_note") != 0 {
		t.Fatal("forwarded before approval")
	}
	h.resolve(a.ID, engine.ResolutionApproveOnce)
	res := wait(t, pending)
	if res.IsError || text(res) != "added note t1" {
		t.Fatalf("approved call: %q", text(res))
	}
	if n := h.forwarded("add_note"); n != 1 {
		t.Fatalf("forwarded %d times, want exactly 1", n)
	}
	inv := h.invocations(a.RunID)
	if len(inv) != 1 || inv[0].Status != api.InvocationSucceeded {
		t.Fatalf("invocations: %+v", inv)
	}
	// The session goes on in the same run, with the lease taken back.
	if res := call(t, cs, "demo.echo", map[string]any{"message": "after"}); text(res) != "after" {
		t.Fatalf("after approval: %q", text(res))
	}
	h.runs(h.principal("agent"), 1)
}

func TestGatewayDeniedAfterWaitIsTheDenialResult(t *testing.T) {
	t.Parallel()
	h := setup(t, harnessOpts{})
	cs := h.connect("agent", nil)
	pending := asyncCall(t.Context(), cs, "demo.add_note", map[string]any{"title": "t", "body": "b"})
	h.resolve(h.pendingApproval().ID, engine.ResolutionDeny)
	d := denial(t, wait(t, pending))
	if d.ReasonCode != engine.ReasonApprovalDenied {
		t.Fatalf("denial: %+v", d)
	}
	if h.forwarded("add_note") != 0 {
		t.Fatal("a denied call reached the upstream")
	}
}

func TestGatewayExpiredApprovalIsTheDenialResultAndANewRunServesTheSession(t *testing.T) {
	t.Parallel()
	// A clock of its own, far before every other test's, so the reaper
	// pass below expires only this test's approval.
	epoch := time.Date(2001, 1, 1, 0, 0, 0, 0, time.UTC)
	var elapsed atomic.Int64
	now := func() time.Time { return epoch.Add(time.Duration(elapsed.Load())) }
	h := setup(t, harnessOpts{now: now})
	cs := h.connect("agent", nil)
	pending := asyncCall(t.Context(), cs, "demo.add_note", map[string]any{"title": "t", "body": "b"})
	a := h.pendingApproval()
	elapsed.Add(int64(a.ExpiresAt.Sub(now()) + time.Second))
	if n, err := h.svc.ExpireDue(t.Context(), 100); err != nil || n != 1 {
		t.Fatalf("expire: %d %v", n, err)
	}
	d := denial(t, wait(t, pending))
	if d.ReasonCode != engine.ReasonApprovalExpired {
		t.Fatalf("denial: %+v", d)
	}
	// The expired approval failed its run; the session's next call gets a new one.
	if res := call(t, cs, "demo.echo", map[string]any{"message": "again"}); text(res) != "again" {
		t.Fatalf("after expiry: %q", text(res))
	}
	runs := h.runs(h.principal("agent"), 2)
	if runs[0].Status != api.RunFailed || runs[0].SessionID != runs[1].SessionID {
		t.Fatalf("runs: %+v", runs)
	}
	if h.forwarded("add_note") != 0 {
		t.Fatal("an expired call reached the upstream")
	}
}

func TestGatewayDisconnectWhileWaitingThenRetryFindsTheApproval(t *testing.T) {
	t.Parallel()
	h := setup(t, harnessOpts{})
	cs := h.connect("agent", nil)
	args := map[string]any{"body": "b", "title": "t"}
	ctx, leave := context.WithCancel(t.Context())
	first := asyncCall(ctx, cs, "demo.add_note", args)
	a := h.pendingApproval()
	leave() // the client gives up waiting
	if r := <-first; r.err == nil {
		t.Fatalf("the abandoned call returned a result: %q", text(r.res))
	}
	h.resolve(a.ID, engine.ResolutionApproveOnce)
	// The same call again, arguments in another order: the same approval.
	res := call(t, cs, "demo.add_note", map[string]any{"title": "t", "body": "b"})
	if res.IsError || text(res) != "added note t" {
		t.Fatalf("retry: %q", text(res))
	}
	page, err := h.svc.ListApprovals(t.Context(), h.principal("approver"), service.ApprovalFilter{Status: service.StatusResolved})
	if err != nil || len(page.Items) != 1 {
		t.Fatalf("want the one approval, have %d (%v)", len(page.Items), err)
	}
	if n := h.forwarded("add_note"); n != 1 {
		t.Fatalf("forwarded %d times, want 1", n)
	}
}

func TestGatewayUpstreamCrashMidCallIsUncertainAndNotRetried(t *testing.T) {
	t.Parallel()
	h := setup(t, harnessOpts{proc: true})
	cs := h.connect("agent", nil)
	res := call(t, cs, "proc.crash", nil)
	if !res.IsError || !strings.Contains(text(res), "uncertain") {
		t.Fatalf("crash: %v %q", res.IsError, text(res))
	}
	runs := h.runs(h.principal("agent"), 1)
	inv := h.invocations(runs[0].ID)
	if len(inv) != 1 || inv[0].Status != api.InvocationUncertain {
		t.Fatalf("invocations: %+v", inv)
	}
	if calls := h.procCalls(); !slices.Equal(calls, []string{"crash"}) {
		t.Fatalf("upstream received %v, want one crash call", calls)
	}
	// The next call starts the upstream again; the crashed call is not resent.
	if res := call(t, cs, "proc.echo", map[string]any{"message": "up"}); text(res) != "up" {
		t.Fatalf("after the crash: %q", text(res))
	}
	if calls := h.procCalls(); !slices.Equal(calls, []string{"crash", "echo"}) {
		t.Fatalf("upstream received %v", calls)
	}
}

func TestStdioBridgeForwardsToTheGatewayUnderTheToken(t *testing.T) {
	t.Parallel()
	h := setup(t, harnessOpts{})
	b, err := mcpgw.NewBridge(t.Context(), h.endpoint, h.tokens["agent"])
	if err != nil {
		t.Fatal(err)
	}
	local, remote := mcp.NewInMemoryTransports()
	served := make(chan error, 1)
	go func() { served <- b.Serve(t.Context(), local) }()
	var progressed sync.Once
	got := make(chan struct{})
	c := mcp.NewClient(&mcp.Implementation{Name: "desktop", Version: "2"}, &mcp.ClientOptions{
		ProgressNotificationHandler: func(context.Context, *mcp.ProgressNotificationClientRequest) { progressed.Do(func() { close(got) }) },
	})
	cs, err := c.Connect(t.Context(), remote, nil)
	if err != nil {
		t.Fatal(err)
	}
	if res := call(t, cs, "demo.echo", map[string]any{"message": "via stdio"}); text(res) != "via stdio" {
		t.Fatalf("echo: %q", text(res))
	}
	pending := asyncCall(t.Context(), cs, "demo.add_note", map[string]any{"title": "s", "body": "b"})
	a := h.pendingApproval()
	select {
	case <-got:
	case <-time.After(10 * time.Second):
		t.Fatal("no progress notification crossed the bridge")
	}
	h.resolve(a.ID, engine.ResolutionApproveOnce)
	if res := wait(t, pending); text(res) != "added note s" {
		t.Fatalf("approved: %q", text(res))
	}
	// The run is the token's principal's: the bridge adds no authority.
	if runs := h.runs(h.principal("agent"), 1); runs[0].PrincipalID != "agent" {
		t.Fatalf("run principal: %s", runs[0].PrincipalID)
	}
	_ = cs.Close()
	if err := <-served; err != nil {
		t.Fatal(err)
	}
}

func TestPolicyPageListsEachUpstreamsToolsWithTheirDecisionAndHints(t *testing.T) {
	t.Parallel()
	h := setup(t, harnessOpts{})
	// A dev-mode console (it signs the dev principal in) over the same gateway.
	ts := httptest.NewUnstartedServer(nil)
	base := "http://" + ts.Listener.Addr().String()
	srv, err := handlers.New(handlers.Config{
		Service: h.svc, Directory: auth.Dev(), Policy: h.policy, Metrics: metrics.New(), BaseURL: base,
		Sessions: h.sessions, SessionKeys: [][]byte{make([]byte, 32)}, DevMode: true, MCP: h.gw,
	})
	if err != nil {
		t.Fatal(err)
	}
	ts.Config.Handler = srv.Handler()
	ts.Start()
	t.Cleanup(ts.Close)
	jar, _ := cookiejar.New(nil)
	c := &http.Client{Jar: jar}
	resp, err := c.Get(base + "/policy")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	page := string(body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("policy page: %d", resp.StatusCode)
	}
	for _, want := range []string{
		`data-tool="demo.add_note"`, "require_approval", // in the catalog, with its effective decision
		`data-tool="demo/export_notebook"`, "unclassified (hidden)", // listed by the upstream, not classified
		`data-tool="demo/echo"`, "readOnly", // the upstream's hint, shown
	} {
		if !strings.Contains(page, want) {
			t.Fatalf("the policy page lacks %q", want)
		}
	}

	// In dev mode an MCP client needs no token: it is the dev principal,
	// who holds no mcp scope unless the file grants it.
	dev, err := mcp.NewClient(&mcp.Implementation{Name: "dev", Version: "1"}, nil).Connect(t.Context(), &mcp.StreamableClientTransport{Endpoint: base + "/mcp"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer dev.Close()
	if d := denial(t, call(t, dev, "demo.echo", map[string]any{"message": "x"})); d.ReasonCode != engine.ReasonScopeMissing {
		t.Fatalf("dev principal without mcp scopes: %+v", d)
	}
	// A web page cannot borrow it: cross-origin browser requests are refused.
	req, _ := http.NewRequestWithContext(t.Context(), http.MethodPost, base+"/mcp", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"ping"}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Sec-Fetch-Site", "cross-site")
	resp, err = http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusForbidden {
		t.Fatalf("cross-origin POST to /mcp: %d", resp.StatusCode)
	}
}

func TestGatewayReChecksTheListingWhenAnUpstreamsToolsChange(t *testing.T) {
	t.Parallel()
	h := setup(t, harnessOpts{})
	changed := make(chan struct{}, 8)
	c := mcp.NewClient(&mcp.Implementation{Name: "test-client", Version: "1.0"}, &mcp.ClientOptions{
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) { changed <- struct{}{} },
	})
	cs, err := c.Connect(t.Context(), &mcp.StreamableClientTransport{Endpoint: h.endpoint, HTTPClient: bearerClient(h.tokens["agent"])}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cs.Close() })
	// The upstream adds a tool nobody classified and withdraws a classified one.
	h.upstreamServer.AddTool(&mcp.Tool{Name: "wipe_everything", InputSchema: map[string]any{"type": "object"}},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			h.count("wipe_everything")
			return &mcp.CallToolResult{}, nil
		})
	h.upstreamServer.RemoveTools("list_notes")
	eventually(t, "the gateway re-lists: the new tool is a hint, the withdrawn one gone", func() bool {
		var newTool, withdrawn bool
		for _, hint := range h.gw.Hints() {
			newTool = newTool || (hint.Tool == "wipe_everything" && !hint.Classified)
			withdrawn = withdrawn || (hint.Tool == "list_notes" && !hint.Listed)
		}
		return newTool && withdrawn
	})
	select {
	case <-changed:
	case <-time.After(10 * time.Second):
		t.Fatal("the client heard no list_changed")
	}
	var names []string
	for tool, err := range cs.Tools(t.Context(), nil) {
		if err != nil {
			t.Fatal(err)
		}
		names = append(names, tool.Name)
	}
	if slices.Contains(names, "demo.wipe_everything") || slices.Contains(names, "demo.list_notes") || !slices.Contains(names, "demo.echo") {
		t.Fatalf("tools/list after the change: %v", names)
	}
	if _, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "demo.wipe_everything"}); err == nil || h.forwarded("wipe_everything") != 0 {
		t.Fatal("a new unclassified tool was callable")
	}
}

func TestGatewayPassesResourcesAndPromptsThroughReadOnlyToHoldersOfTheUseScope(t *testing.T) {
	t.Parallel()
	h := setup(t, harnessOpts{})
	cs := h.connect("agent", nil)
	call(t, cs, "demo.echo", map[string]any{"message": "m"})
	var uris []string
	for r, err := range cs.Resources(t.Context(), nil) {
		if err != nil {
			t.Fatal(err)
		}
		uris = append(uris, r.URI)
	}
	if !slices.Equal(uris, []string{"notes://index"}) {
		t.Fatalf("resources: %v", uris)
	}
	rr, err := cs.ReadResource(t.Context(), &mcp.ReadResourceParams{URI: "notes://index"})
	if err != nil || len(rr.Contents) != 1 {
		t.Fatalf("read: %v %v", rr, err)
	}
	gp, err := cs.GetPrompt(t.Context(), &mcp.GetPromptParams{Name: "demo.summarize_notes"})
	if err != nil || len(gp.Messages) != 1 {
		t.Fatalf("prompt: %v %v", gp, err)
	}
	// Without mcp.demo.use nothing of the upstream is readable.
	nouse := h.connect("nouse", nil)
	if _, err := nouse.ReadResource(t.Context(), &mcp.ReadResourceParams{URI: "notes://index"}); err == nil || !strings.Contains(err.Error(), "mcp.demo.use") {
		t.Fatalf("read without mcp.demo.use: %v", err)
	}
	if _, err := nouse.GetPrompt(t.Context(), &mcp.GetPromptParams{Name: "demo.summarize_notes"}); err == nil {
		t.Fatal("prompt without mcp.demo.use")
	}
	// Reads are not proposals: the run holds only the tool call.
	if inv := h.invocations(h.runs(h.principal("agent"), 1)[0].ID); len(inv) != 1 {
		t.Fatalf("invocations: %d", len(inv))
	}
}

func TestGatewayAnotherCallWhileOneWaitsIsToldSoAndAClosedSessionCancelsItsParkedRun(t *testing.T) {
	t.Parallel()
	h := setup(t, harnessOpts{})
	cs := h.connect("agent", nil)
	ctx, leave := context.WithCancel(t.Context())
	pending := asyncCall(ctx, cs, "demo.add_note", map[string]any{"title": "t", "body": "b"})
	a := h.pendingApproval()
	res := call(t, cs, "demo.echo", map[string]any{"message": "meanwhile"})
	if !res.IsError || !strings.Contains(text(res), "waiting for approval") || h.forwarded("echo") != 0 {
		t.Fatalf("a call while another waits: %v %q", res.IsError, text(res))
	}
	leave() // the client gives up its call, then closes the session
	<-pending
	_ = cs.Close()
	eventually(t, "the parked run is cancelled and its card leaves the queue", func() bool {
		r, err := h.svc.GetRun(t.Context(), h.principal("agent"), a.RunID)
		ap, aerr := h.svc.GetApproval(t.Context(), h.principal("approver"), a.ID)
		return err == nil && aerr == nil && r.Status == api.RunCancelled && ap.Status == engine.ApprovalCancelled
	})
	if h.forwarded("add_note") != 0 {
		t.Fatal("a cancelled call reached the upstream")
	}
}

// A call outwaits the server's write timeout (serve's is 60 s): /mcp lifts
// it, since a human may take hours.
func TestGatewayWaitOutlastsTheServersWriteTimeout(t *testing.T) {
	t.Parallel()
	h := setup(t, harnessOpts{writeTimeout: 500 * time.Millisecond})
	cs := h.connect("agent", nil)
	pending := asyncCall(t.Context(), cs, "demo.add_note", map[string]any{"title": "slow", "body": "b"})
	a := h.pendingApproval()
	time.Sleep(1500 * time.Millisecond) // the human takes longer than the write timeout
	h.resolve(a.ID, engine.ResolutionApproveOnce)
	if res := wait(t, pending); res.IsError || text(res) != "added note slow" {
		t.Fatalf("after the write timeout: %q", text(res))
	}
}

func TestGatewayUpstreamTimeoutIsUncertainAndNotRetried(t *testing.T) {
	t.Parallel()
	h := setup(t, harnessOpts{proc: true})
	cs := h.connect("agent", nil)
	res := call(t, cs, "proc.stall", nil)
	if !res.IsError || !strings.Contains(text(res), "uncertain") {
		t.Fatalf("stall: %v %q", res.IsError, text(res))
	}
	inv := h.invocations(h.runs(h.principal("agent"), 1)[0].ID)
	if len(inv) != 1 || inv[0].Status != api.InvocationUncertain {
		t.Fatalf("invocations: %+v", inv)
	}
	if calls := h.procCalls(); !slices.Equal(calls, []string{"stall"}) {
		t.Fatalf("upstream received %v, want one stall call", calls)
	}
}

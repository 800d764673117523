package mcpgw_test

import (
	"bytes"
	"errors"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"gatehouse/api"
	"gatehouse/engine"
	"gatehouse/service"
)

// Gate 3 through the gateway: the upstream runs exactly the calls the
// service authorized. Whatever the decision, a call reaches the upstream
// only as an invocation that went AUTHORIZED and then had its outcome
// recorded; denied, waiting and unclassified calls never do.
func TestGate03SingleGateThroughTheGateway(t *testing.T) {
	t.Parallel()
	h := setup(t, harnessOpts{})
	cs := h.connect("agent", nil)
	call(t, cs, "demo.echo", map[string]any{"message": "a"})
	call(t, cs, "demo.describe_url", map[string]any{"url": "https://example.com/"})
	call(t, cs, "demo.run_command", map[string]any{"command": "ls"})                   // matrix deny
	call(t, cs, "demo.describe_url", map[string]any{"url": "http://169.254.169.254/"}) // hardline
	if _, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "demo.export_notebook"}); err == nil {
		t.Fatal("an unclassified tool answered")
	}
	pending := asyncCall(t.Context(), cs, "demo.add_note", map[string]any{"title": "x", "body": "y"})
	a := h.pendingApproval()
	if h.forwarded("add_note") != 0 {
		t.Fatal("a waiting call reached the upstream")
	}
	h.resolve(a.ID, engine.ResolutionApproveOnce)
	wait(t, pending)

	executed := 0
	for _, inv := range h.invocations(h.runs(h.principal("agent"), 1)[0].ID) {
		switch inv.Status {
		case api.InvocationSucceeded, api.InvocationFailed, api.InvocationUncertain:
			executed++
		case api.InvocationDenied:
		default:
			t.Fatalf("invocation left %s: %+v", inv.Status, inv)
		}
	}
	h.mu.Lock()
	total := 0
	for _, n := range h.forwards {
		total += n
	}
	h.mu.Unlock()
	if executed != 3 || total != executed {
		t.Fatalf("the upstream ran %d calls; the gate authorized %d (want 3 and 3)", total, executed)
	}
}

// Gate 7 through the gateway: another tenant's sessions, runs and cards
// are invisible, and a session cannot be borrowed with another token.
func TestGate07CrossTenantThroughTheGateway(t *testing.T) {
	t.Parallel()
	h := setup(t, harnessOpts{})
	mine := h.connect("agent", nil)
	pending := asyncCall(t.Context(), mine, "demo.add_note", map[string]any{"title": "mine", "body": "b"})
	a := h.pendingApproval()
	other := h.principal("other")
	if _, err := h.svc.GetRun(t.Context(), other, a.RunID); !errors.Is(err, service.ErrNotFound) {
		t.Fatalf("another tenant read the run: %v", err)
	}
	page, err := h.svc.ListApprovals(t.Context(), other, service.ApprovalFilter{})
	if err != nil || len(page.Items) != 0 {
		t.Fatalf("another tenant sees %d cards (%v)", len(page.Items), err)
	}
	if _, err := h.svc.ResolveApproval(t.Context(), other, a.ID, engine.ResolutionApproveOnce, ""); !errors.Is(err, service.ErrNotFound) {
		t.Fatalf("another tenant resolved the card: %v", err)
	}
	// The other tenant's own session works, in its own tenant.
	theirs := h.connect("other", nil)
	if res := call(t, theirs, "demo.echo", map[string]any{"message": "theirs"}); text(res) != "theirs" {
		t.Fatalf("other tenant: %q", text(res))
	}
	if runs := h.runs(other, 1); runs[0].TenantID != other.TenantID {
		t.Fatalf("run tenant %s", runs[0].TenantID)
	}
	// Borrowing the first session with the other tenant's token is refused.
	body := `{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"demo.echo","arguments":{"message":"hijack"}}}`
	req, _ := http.NewRequestWithContext(t.Context(), http.MethodPost, h.endpoint, strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+h.tokens["other"])
	req.Header.Set("Mcp-Session-Id", mine.ID())
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Protocol-Version", "2025-11-25")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusForbidden {
		t.Fatalf("borrowed session: status %d, want 403", resp.StatusCode)
	}
	h.resolve(a.ID, engine.ResolutionDeny)
	wait(t, pending)
	if h.forwarded("echo") != 1 {
		t.Fatalf("echo forwarded %d times", h.forwarded("echo"))
	}
}

// Gate 12 through the gateway: exact scopes, mcp.demo.use included, on
// the run's stamp; one MCP scope never admits another.
func TestGate12ExactScopesThroughTheGateway(t *testing.T) {
	t.Parallel()
	h := setup(t, harnessOpts{})
	nouse := h.connect("nouse", nil)
	for _, tool := range []string{"demo.echo", "demo.add_note"} {
		args := map[string]any{"message": "m"}
		if tool == "demo.add_note" {
			args = map[string]any{"title": "t", "body": "b"}
		}
		d := denial(t, call(t, nouse, tool, args))
		if d.ReasonCode != engine.ReasonScopeMissing || !strings.Contains(d.Message, "mcp.demo.use") || strings.Contains(d.Message, "mcp.demo.write") {
			t.Fatalf("%s without mcp.demo.use: %+v", tool, d)
		}
	}
	nowrite := h.connect("nowrite", nil)
	if res := call(t, nowrite, "demo.echo", map[string]any{"message": "ok"}); text(res) != "ok" {
		t.Fatalf("echo with mcp.demo.use: %q", text(res))
	}
	d := denial(t, call(t, nowrite, "demo.add_note", map[string]any{"title": "t", "body": "b"}))
	if d.ReasonCode != engine.ReasonScopeMissing || !strings.Contains(d.Message, "mcp.demo.write") || strings.Contains(d.Message, "mcp.demo.use") {
		t.Fatalf("add_note without mcp.demo.write: %+v", d)
	}
	if h.forwarded("add_note") != 0 || h.forwarded("echo") != 1 {
		t.Fatalf("forwards: %v", h.forwards)
	}
}

// Gate 13 through the gateway: the run is stamped with the session
// principal's scopes, exactly, at submission.
func TestGate13ScopeStampIsTheSessionPrincipals(t *testing.T) {
	t.Parallel()
	h := setup(t, harnessOpts{})
	for _, id := range []string{"agent", "nowrite"} {
		call(t, h.connect(id, nil), "demo.echo", map[string]any{"message": id})
	}
	for _, run := range h.runs(h.principal("agent"), 2) {
		p := h.principal(run.PrincipalID)
		if !slices.Equal(run.PrincipalScopes, p.Scopes) {
			t.Fatalf("run of %s stamped %v, want %v", run.PrincipalID, run.PrincipalScopes, p.Scopes)
		}
	}
}

// The real third-party server: @modelcontextprotocol/server-everything over
// stdio, installed by scripts/mcp-everything.sh (make test sets
// MCP_EVERYTHING).
func TestEverythingUpstreamOverStdio(t *testing.T) {
	t.Parallel()
	bin := everythingBin(t)
	h := setup(t, harnessOpts{extra: `
  - id: everything
    stdio: {command: ` + bin + `, args: [stdio]}
    tools:
      - {name: echo, version: "1", side_effect: none, risk: low, idempotency: read_only, arguments: [message]}
      - {name: get-sum, version: "1", side_effect: none, risk: low, idempotency: read_only, arguments: [a, b]}
      - {name: toggle-simulated-logging, version: "1", side_effect: external_write, risk: high, idempotency: non_idempotent}
`})
	cs := h.connect("agent", nil)
	var names []string
	for tool, err := range cs.Tools(t.Context(), nil) {
		if err != nil {
			t.Fatal(err)
		}
		names = append(names, tool.Name)
	}
	if !slices.Contains(names, "everything.echo") || slices.Contains(names, "everything.get-env") {
		t.Fatalf("tools/list: %v", names)
	}
	if res := call(t, cs, "everything.echo", map[string]any{"message": "third party"}); res.IsError || !strings.Contains(text(res), "third party") {
		t.Fatalf("echo: %q", text(res))
	}
	if res := call(t, cs, "everything.get-sum", map[string]any{"a": 2, "b": 40}); res.IsError || !strings.Contains(text(res), "42") {
		t.Fatalf("get-sum: %q", text(res))
	}
	pending := asyncCall(t.Context(), cs, "everything.toggle-simulated-logging", nil)
	a := h.pendingApproval()
	h.resolve(a.ID, engine.ResolutionApproveOnce)
	if res := wait(t, pending); res.IsError || !strings.Contains(strings.ToLower(text(res)), "logging") {
		t.Fatalf("approved toggle: %q", text(res))
	}
	inv := h.invocations(a.RunID)
	for _, i := range inv {
		if i.Status != api.InvocationSucceeded {
			t.Fatalf("invocation %s %s", i.ToolName, i.Status)
		}
	}
	if len(inv) != 3 {
		t.Fatalf("invocations: %d", len(inv))
	}
}

// everythingBin is the server-everything bin: MCP_EVERYTHING, else
// installed by the script; the test skips only when npm is absent.
func everythingBin(t *testing.T) string {
	t.Helper()
	if p := os.Getenv("MCP_EVERYTHING"); p != "" {
		return p
	}
	if _, err := exec.LookPath("npm"); err != nil {
		t.Skip("npm is absent: install npm (or set MCP_EVERYTHING) to run the gateway against @modelcontextprotocol/server-everything")
	}
	var stderr bytes.Buffer
	cmd := exec.CommandContext(t.Context(), filepath.Join("..", "scripts", "mcp-everything.sh"))
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("scripts/mcp-everything.sh: %v\n%s", err, stderr.String())
	}
	return strings.TrimSpace(string(out))
}

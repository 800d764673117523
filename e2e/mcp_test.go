package e2e

import (
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"gatehouse/client"
	"gatehouse/engine"
)

// mcpConfig puts the binary's own demo upstream behind the gateway and,
// when it is installed, the npm reference server.
const mcpConfig = `
progress_interval: 500ms
upstreams:
  - id: demo
    stdio: {command: %q, args: [mcp, demo-upstream]}
    tools:
      - {name: echo, version: "1", side_effect: none, risk: low, idempotency: read_only, arguments: [message]}
      - {name: add_note, version: "1", side_effect: external_write, risk: high, idempotency: non_idempotent,
         required_scopes: [mcp.demo.write], arguments: [title, body]}
%s`

// TestMCPGatewayBinaryCardInTheConsole: the real binary with CONSOLE_MCP,
// the official SDK's client at /mcp, a call that waits for a human, its
// card (upstream and tool in the tool name) approved in Chromium, and the
// call forwarded once; the npm reference server's echo as well when
// MCP_EVERYTHING names it.
func TestMCPGatewayBinaryCardInTheConsole(t *testing.T) {
	t.Parallel()
	extra := ""
	if bin := os.Getenv("MCP_EVERYTHING"); bin != "" {
		extra = fmt.Sprintf(`  - id: everything
    stdio: {command: %q, args: [stdio]}
    tools:
      - {name: echo, version: "1", side_effect: none, risk: low, idempotency: read_only, arguments: [message]}
`, bin)
	}
	file := filepath.Join(t.TempDir(), "mcp.yaml")
	if err := os.WriteFile(file, fmt.Appendf(nil, mcpConfig, binary, extra), 0o600); err != nil {
		t.Fatal(err)
	}
	srv := startServer(t, serverOptions{Env: []string{"CONSOLE_MCP=" + file}})
	ctx := testContext(t)

	c := mcp.NewClient(&mcp.Implementation{Name: "e2e-client", Version: "1"}, nil)
	cs, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: srv.BaseURL + "/mcp",
		HTTPClient: &http.Client{Transport: bearerRoundTripper{srv.Token("mcpagent")}}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "demo.echo", Arguments: map[string]any{"message": "through the binary"}})
	if err != nil || res.IsError || mcpText(res) != "through the binary" {
		t.Fatalf("echo: %v %v", err, res)
	}
	if extra != "" {
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "everything.echo", Arguments: map[string]any{"message": "npm"}})
		if err != nil || res.IsError || !strings.Contains(mcpText(res), "npm") {
			t.Fatalf("everything.echo: %v %v", err, res)
		}
	}

	done := make(chan *mcp.CallToolResult, 1)
	go func() {
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "demo.add_note", Arguments: map[string]any{"title": "from e2e", "body": "b"}})
		if err != nil {
			res = &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: err.Error()}}}
		}
		done <- res
	}()
	bob := srv.Client("bob")
	var approvalID string
	deadline := time.Now().Add(20 * time.Second)
	for approvalID == "" && time.Now().Before(deadline) {
		page, err := bob.ListApprovals(ctx, client.ApprovalQuery{})
		if err != nil {
			t.Fatal(err)
		}
		for _, a := range page.Items {
			if a.ToolName == "demo.add_note" {
				approvalID = a.ID
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	if approvalID == "" {
		t.Fatal("no card for the MCP call")
	}

	b := newBrowser(t)
	login(t, b, srv, "bob")
	card := `#card-` + approvalID
	tool := get(t, b, "the card's tool", chromedp.Text(css(card+` [data-testid="tool"]`)))
	if tool != "demo.add_note" {
		t.Fatalf("the card names %q, want the upstream and tool demo.add_note", tool)
	}
	do(t, b, "approve the MCP call", chromedp.Click(css(card+` [data-testid="approve"]`)))

	select {
	case res := <-done:
		if res.IsError || mcpText(res) != "added note from e2e" {
			t.Fatalf("approved call: %q", mcpText(res))
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the approved call did not return")
	}
	a, err := bob.GetApproval(ctx, approvalID)
	if err != nil || a.Status != engine.ApprovalApproved || a.ResolvedBy != "bob" {
		t.Fatalf("approval: %+v %v", a, err)
	}
}

type bearerRoundTripper struct{ token string }

func (b bearerRoundTripper) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return http.DefaultTransport.RoundTrip(r)
}

func mcpText(res *mcp.CallToolResult) string {
	var b strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return b.String()
}

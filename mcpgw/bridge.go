package mcpgw

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Bridge is `console mcp stdio`: for MCP clients that launch a local
// process, a thin stdio front of a running server's /mcp. It decides
// nothing and keeps nothing: it lists the gateway's tools as its own and
// forwards each call, with the client's progress token, to the gateway
// over Streamable HTTP under GATEHOUSE_TOKEN, so the gate stays in the
// server, one place, whichever way a client connects.
type Bridge struct {
	remote *mcp.ClientSession
	server *mcp.Server

	mu    sync.Mutex
	local *mcp.ServerSession // the stdio client's session, for progress
	names []string           // the tools listed now
}

// NewBridge connects to the gateway at endpoint (http://host:port/mcp)
// with a bearer token; without one it connects as the dev principal,
// which only a server in AUTH_MODE=dev admits.
func NewBridge(ctx context.Context, endpoint, token string) (*Bridge, error) {
	b := &Bridge{}
	b.server = mcp.NewServer(&mcp.Implementation{Name: "gatehouse", Title: "Gatehouse MCP gateway (stdio bridge)", Version: "0.1"}, &mcp.ServerOptions{
		Capabilities: &mcp.ServerCapabilities{Tools: &mcp.ToolCapabilities{ListChanged: true}},
	})
	client := mcp.NewClient(&mcp.Implementation{Name: "gatehouse-stdio-bridge", Version: "0.1"}, &mcp.ClientOptions{
		Capabilities: &mcp.ClientCapabilities{},
		ToolListChangedHandler: func(ctx context.Context, _ *mcp.ToolListChangedRequest) {
			if err := b.mirror(ctx); err != nil {
				b.server.RemoveTools(b.names...)
			}
		},
		ProgressNotificationHandler: func(ctx context.Context, r *mcp.ProgressNotificationClientRequest) {
			b.mu.Lock()
			local := b.local
			b.mu.Unlock()
			if local != nil {
				_ = local.NotifyProgress(ctx, r.Params)
			}
		},
	})
	header := http.Header{}
	if token != "" {
		header.Set("Authorization", "Bearer "+token)
	}
	remote, err := client.Connect(ctx, &mcp.StreamableClientTransport{
		Endpoint:   endpoint,
		HTTPClient: &http.Client{Transport: headerTransport{base: http.DefaultTransport, header: header}},
	}, nil)
	if err != nil {
		return nil, fmt.Errorf("mcpgw: connecting to the gateway at %s: %w", endpoint, err)
	}
	b.remote = remote
	if err := b.mirror(ctx); err != nil {
		_ = remote.Close()
		return nil, err
	}
	return b, nil
}

// mirror lists the gateway's tools as the bridge's own.
func (b *Bridge) mirror(ctx context.Context) error {
	tools, err := listTools(ctx, b.remote)
	if err != nil {
		return fmt.Errorf("mcpgw: listing the gateway's tools: %w", err)
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.server.RemoveTools(b.names...)
	b.names = b.names[:0]
	for _, t := range tools {
		t.InputSchema = objectSchema(t.InputSchema)
		b.server.AddTool(t, b.forward)
		b.names = append(b.names, t.Name)
	}
	return nil
}

func (b *Bridge) forward(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	b.mu.Lock()
	b.local = req.Session
	b.mu.Unlock()
	p := &mcp.CallToolParams{Name: req.Params.Name, Arguments: req.Params.Arguments}
	if token := req.Params.GetProgressToken(); token != nil {
		p.SetProgressToken(token)
	}
	return b.remote.CallTool(ctx, p)
}

// Serve speaks MCP on t (stdin and stdout for `console mcp stdio`) until
// the client leaves or ctx ends, then closes the gateway session, which
// ends its run.
func (b *Bridge) Serve(ctx context.Context, t mcp.Transport) error {
	defer b.remote.Close()
	if err := b.server.Run(ctx, t); err != nil && !errors.Is(err, context.Canceled) {
		return err
	}
	return nil
}

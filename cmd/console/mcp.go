package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"gatehouse/auth"
	"gatehouse/handlers"
	"gatehouse/mcpgw"
	"gatehouse/rules"
	"gatehouse/service"
)

// runMCP is `console mcp stdio|demo-upstream`.
func runMCP(ctx context.Context, env envConfig, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		return fmt.Errorf("%w: mcp needs stdio or demo-upstream", errUsage)
	}
	t := &mcp.IOTransport{Reader: io.NopCloser(stdin), Writer: nopWriteCloser{stdout}}
	switch args[0] {
	case "stdio":
		fs := flag.NewFlagSet("mcp stdio", flag.ContinueOnError)
		fs.SetOutput(stderr)
		baseURL := fs.String("url", env.ServerURL, "server base URL; the gateway is its /mcp (GATEHOUSE_URL)")
		token := fs.String("token", env.Token, "bearer token of the principal the calls run as (GATEHOUSE_TOKEN)")
		if err := fs.Parse(args[1:]); err != nil {
			return fmt.Errorf("%w: %w", errUsage, err)
		}
		b, err := mcpgw.NewBridge(ctx, strings.TrimRight(*baseURL, "/")+"/mcp", *token)
		if err != nil {
			return err
		}
		return b.Serve(ctx, t)
	case "demo-upstream":
		if err := mcpgw.DemoServer(nil).Run(ctx, t); err != nil && !errors.Is(err, context.Canceled) {
			return err
		}
		return nil
	}
	return fmt.Errorf("%w: unknown mcp command %q", errUsage, args[0])
}

type nopWriteCloser struct{ io.Writer }

func (nopWriteCloser) Close() error { return nil }

// loadMCP reads the MCP gateway's file (CONSOLE_MCP), when one is named,
// adding its tools to the policy options.
func loadMCP(file string, opts rules.Options) (*mcpgw.Config, rules.Options, error) {
	if file == "" {
		return nil, opts, nil
	}
	m, err := mcpgw.LoadFile(file)
	if err != nil {
		return nil, opts, fmt.Errorf("loading the MCP gateway's upstreams: %w", err)
	}
	return m, m.PolicyOptions(opts), nil
}

// devMCPScopes gives the dev principal the file's dev_principal_scopes:
// in dev mode it holds no mcp scope otherwise.
func devMCPScopes(cfg serveConfig, m *mcpgw.Config, dir *auth.Directory) (*auth.Directory, error) {
	if !cfg.devMode || m == nil || len(m.DevPrincipalScopes) == 0 {
		return dir, nil
	}
	return dir.WithScopes(auth.DevPrincipalID, m.DevPrincipalScopes)
}

// startGateway connects the gateway to its upstreams (nil without
// CONSOLE_MCP); it closes, ending every client session's run, when ctx
// ends.
func startGateway(ctx context.Context, in serveInputs, svc *service.Service, logger *slog.Logger) (handlers.MCPGateway, error) {
	if in.mcp == nil {
		return nil, nil
	}
	gw, err := mcpgw.New(ctx, mcpgw.Options{Config: in.mcp, Service: svc, Catalog: in.policy.Catalog(), Logger: logger, ReplicaID: replicaID()})
	if err != nil {
		return nil, err
	}
	context.AfterFunc(ctx, gw.Close)
	logger.Info("mcp gateway", "path", "/mcp", "upstreams", len(in.mcp.Upstreams), "config", in.mcp.File)
	return gw, nil
}

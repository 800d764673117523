package mcpgw

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"os"
	"os/exec"
	"slices"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// upstream is the gateway's client of one operator MCP server. The
// connection is made on demand and made again after it dropped (a crashed
// stdio process is started anew on the next call); a call in flight when
// it dropped is not retried.
type upstream struct {
	g   *Gateway
	cfg Upstream

	mu       sync.Mutex
	cs       *mcp.ClientSession
	listed   []*mcp.Tool // the last listing, for hints
	readOnly readOnly    // the resources, templates and prompts mirrored now
}

func newUpstream(g *Gateway, cfg Upstream) *upstream { return &upstream{g: g, cfg: cfg} }

// connectTimeout bounds a handshake and the listings after it: an
// upstream that hangs there must not hold the server's start.
const connectTimeout = 30 * time.Second

// connect returns the live session, connecting (and listing the tools)
// when there is none.
func (u *upstream) connect(ctx context.Context) (*mcp.ClientSession, error) {
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.cs != nil {
		return u.cs, nil
	}
	ctx, cancel := context.WithTimeout(ctx, connectTimeout)
	defer cancel()
	client := mcp.NewClient(&mcp.Implementation{Name: "gatehouse-gateway", Version: "0.1"}, &mcp.ClientOptions{
		Logger: u.g.log,
		// list_changed re-reads the listing and re-checks it against the
		// operator's classification: a new tool stays hidden until the
		// operator classifies it and restarts the server.
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) {
			u.g.wg.Go(func() { u.relist(u.g.closing) })
		},
		ResourceListChangedHandler: func(context.Context, *mcp.ResourceListChangedRequest) {
			u.g.wg.Go(func() { u.relist(u.g.closing) })
		},
		PromptListChangedHandler: func(context.Context, *mcp.PromptListChangedRequest) {
			u.g.wg.Go(func() { u.relist(u.g.closing) })
		},
		Capabilities: &mcp.ClientCapabilities{},
	})
	t, err := u.transport()
	if err != nil {
		return nil, err
	}
	cs, err := client.Connect(ctx, t, nil)
	if err != nil {
		return nil, fmt.Errorf("mcpgw: connecting to upstream %s: %w", u.cfg.ID, err)
	}
	tools, err := listTools(ctx, cs)
	if err != nil {
		_ = cs.Close()
		return nil, fmt.Errorf("mcpgw: listing the tools of upstream %s: %w", u.cfg.ID, err)
	}
	u.cs, u.listed = cs, tools
	u.g.syncTools(u, tools)
	u.g.syncReadOnly(ctx, u, cs)
	u.g.wg.Go(func() {
		_ = cs.Wait()
		u.mu.Lock()
		if u.cs == cs {
			u.cs = nil
		}
		u.mu.Unlock()
		u.g.log.Info("mcp upstream disconnected", "upstream", u.cfg.ID)
	})
	return cs, nil
}

// reconnectEvery is how often a disconnected upstream is tried again in
// the background (a call tries at once).
const reconnectEvery = 10 * time.Second

// keepConnected connects the upstream again when it is down, so the tools
// of one that was down at start get listed. It never resends a call.
func (u *upstream) keepConnected(ctx context.Context) {
	t := time.NewTicker(reconnectEvery)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			u.mu.Lock()
			down := u.cs == nil
			u.mu.Unlock()
			if down {
				if _, err := u.connect(ctx); err != nil {
					u.g.log.Debug("mcp upstream still unreachable", "upstream", u.cfg.ID, "error", err)
				}
			}
		}
	}
}

func (u *upstream) relist(ctx context.Context) {
	u.mu.Lock()
	cs := u.cs
	u.mu.Unlock()
	if cs == nil {
		return
	}
	tools, err := listTools(ctx, cs)
	if err != nil {
		u.g.log.Warn("mcp upstream: re-listing tools after list_changed failed", "upstream", u.cfg.ID, "error", err)
		return
	}
	u.mu.Lock()
	defer u.mu.Unlock()
	u.listed = tools
	u.g.syncTools(u, tools)
	u.g.syncReadOnly(ctx, u, cs)
}

func listTools(ctx context.Context, cs *mcp.ClientSession) ([]*mcp.Tool, error) {
	var out []*mcp.Tool
	for t, err := range cs.Tools(ctx, nil) {
		if err != nil {
			return nil, err
		}
		out = append(out, t)
	}
	return out, nil
}

// transport builds the way to the upstream from the configuration; the
// values of headers_from_env are read now, so a rotated secret takes
// effect on the next connection.
func (u *upstream) transport() (mcp.Transport, error) {
	if s := u.cfg.Stdio; s != nil {
		// The command is the operator's, from CONSOLE_MCP; nothing a
		// client sends reaches it. It lives as long as the gateway.
		cmd := exec.CommandContext(u.g.closing, s.Command, s.Args...) //nolint:gosec // G204: operator configuration
		cmd.Env = os.Environ()
		for _, k := range slices.Sorted(maps.Keys(s.Env)) {
			cmd.Env = append(cmd.Env, k+"="+s.Env[k])
		}
		cmd.Stderr = os.Stderr
		return &mcp.CommandTransport{Command: cmd}, nil
	}
	h := http.Header{}
	for name, env := range u.cfg.HTTP.HeadersFromEnv {
		v, ok := os.LookupEnv(env)
		if !ok {
			return nil, fmt.Errorf("mcpgw: upstream %s: header %s comes from %s, which is not set", u.cfg.ID, name, env)
		}
		h.Set(name, v)
	}
	return &mcp.StreamableClientTransport{
		Endpoint:   u.cfg.HTTP.URL,
		HTTPClient: &http.Client{Transport: headerTransport{base: http.DefaultTransport, header: h}},
		// A call in flight is forwarded once; the transport's reconnects
		// would resume streams, never resend a call, but keep them few.
		MaxRetries: 1,
	}, nil
}

type headerTransport struct {
	base   http.RoundTripper
	header http.Header
}

func (t headerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	for k, v := range t.header {
		r.Header[k] = v
	}
	return t.base.RoundTrip(r)
}

// outcome is what became of a forwarded call.
type outcome int

const (
	outcomeSucceeded outcome = iota
	outcomeFailed            // the upstream answered with an error: nothing, or nothing known, was done twice
	outcomeUncertain         // no answer: the call may or may not have run
)

// call forwards one authorized call, once. raw are the arguments exactly
// as the client sent them (or as the gate modified them). The context is
// the gateway's, not the client's: a client that leaves mid-call does not
// turn a call the upstream completes into an unknown one.
func (u *upstream) call(name string, raw any) (*mcp.CallToolResult, outcome) {
	ctx, cancel := context.WithTimeout(u.g.closing, u.g.cfg.CallTimeout)
	defer cancel()
	cs, err := u.connect(ctx)
	if err != nil {
		// Not connected: nothing was sent.
		return nil, outcomeFailed
	}
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: raw})
	switch {
	case err == nil && res.IsError:
		return res, outcomeFailed
	case err == nil:
		return res, outcomeSucceeded
	case rejected(err):
		return nil, outcomeFailed
	}
	u.g.log.Warn("mcp upstream call ended without an answer; recorded uncertain", "upstream", u.cfg.ID, "tool", name, "error", errorClass(err))
	return nil, outcomeUncertain
}

// rejected reports an upstream error that says the request was refused
// before anything ran: it could not be parsed or named no such method or
// tool, or its parameters were invalid.
func rejected(err error) bool {
	var we *jsonrpc.Error
	if !errors.As(err, &we) {
		return false
	}
	switch we.Code {
	case jsonrpc.CodeParseError, jsonrpc.CodeInvalidRequest, jsonrpc.CodeMethodNotFound, jsonrpc.CodeInvalidParams:
		return true
	}
	return false
}

// errorClass describes an upstream error for the log: an upstream's
// JSON-RPC error by its code only, since its message may quote the
// arguments, and logs never carry argument values.
func errorClass(err error) string {
	var we *jsonrpc.Error
	if errors.As(err, &we) {
		return fmt.Sprintf("upstream error %d", we.Code)
	}
	return err.Error()
}

// classify splits a listing into the tools the operator classified (by
// upstream name) and the names of the rest.
func (u *upstream) classify(listed []*mcp.Tool) (map[string]*mcp.Tool, []string) {
	classified := map[string]*mcp.Tool{}
	var unclassified []string
	for _, t := range listed {
		if slices.ContainsFunc(u.cfg.Tools, func(c Tool) bool { return c.Upstream == t.Name }) {
			classified[t.Name] = t
		} else {
			unclassified = append(unclassified, t.Name)
		}
	}
	return classified, unclassified
}

func (u *upstream) hints() []Hint {
	u.mu.Lock()
	listed, connected := u.listed, u.cs != nil
	u.mu.Unlock()
	var out []Hint
	for _, t := range listed {
		h := Hint{Upstream: u.cfg.ID, Tool: t.Name, Title: t.Title, Annotations: t.Annotations, Listed: true, Disconnected: !connected}
		if i := slices.IndexFunc(u.cfg.Tools, func(c Tool) bool { return c.Upstream == t.Name }); i >= 0 {
			h.CatalogName, h.Classified = u.cfg.Tools[i].Spec.Name, true
		}
		out = append(out, h)
	}
	for _, c := range u.cfg.Tools {
		if !slices.ContainsFunc(listed, func(t *mcp.Tool) bool { return t.Name == c.Upstream }) {
			out = append(out, Hint{Upstream: u.cfg.ID, Tool: c.Upstream, CatalogName: c.Spec.Name, Classified: true, Disconnected: !connected})
		}
	}
	return out
}

func (u *upstream) close() {
	u.mu.Lock()
	cs := u.cs
	u.cs = nil
	u.mu.Unlock()
	if cs != nil {
		_ = cs.Close()
	}
}

package mcpgw

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"gatehouse/api"
	"gatehouse/engine"
	"gatehouse/service"
)

// Service is the part of the one gate the gateway drives, in process:
// *service.Service satisfies it. The gateway calls nothing else, so every
// decision is the service's.
type Service interface {
	SubmitRun(ctx context.Context, p engine.Principal, in api.SubmitRunInput) (api.Run, error)
	ClaimRun(ctx context.Context, p engine.Principal, in api.ClaimInput) (api.Run, bool, error)
	GetRun(ctx context.Context, p engine.Principal, runID string) (api.Run, error)
	Heartbeat(ctx context.Context, p engine.Principal, runID string, lease api.Lease, leaseSeconds int) (api.Run, error)
	Propose(ctx context.Context, p engine.Principal, runID string, lease api.Lease, req engine.ActionRequest) (api.ProposeResult, error)
	Resume(ctx context.Context, p engine.Principal, runID, invocationID string, lease api.Lease, in api.ResumeInput) (api.ResumeResult, error)
	RecordResult(ctx context.Context, p engine.Principal, runID, invocationID string, lease api.Lease, status string) (api.WorkerInvocation, error)
	CompleteRun(ctx context.Context, p engine.Principal, runID string, lease api.Lease, status string) (api.Run, error)
	CancelRun(ctx context.Context, p engine.Principal, runID string) (api.Run, error)
	ListEvents(ctx context.Context, p engine.Principal, f service.EventFilter) ([]api.Event, error)
}

var _ Service = (*service.Service)(nil)

// Options wires a Gateway.
type Options struct {
	Config  *Config
	Service Service
	// Catalog is the catalog the gate classifies with; the gateway lists
	// an upstream's tool only when it is there (it always is when the
	// policy was loaded with Config.PolicyOptions).
	Catalog *engine.Catalog
	Logger  *slog.Logger
	// ReplicaID names this process in the runs' leases.
	ReplicaID string
}

// Gateway is the MCP server clients connect to and the MCP client of
// every upstream.
type Gateway struct {
	cfg       *Config
	svc       Service
	catalog   *engine.Catalog
	log       *slog.Logger
	server    *mcp.Server
	handler   http.Handler
	upstreams map[string]*upstream
	workerID  string

	mu       sync.Mutex
	sessions map[*mcp.ServerSession]*session

	// closing ends the background work of sessions and upstreams.
	closing context.Context
	stop    context.CancelFunc
	wg      sync.WaitGroup

	// leaseSeconds is the lease the gateway holds on a session's run;
	// heartbeats renew it at a third of that.
	leaseSeconds int
}

// sessionProtocols are the protocol versions the gateway speaks: the ones
// with sessions. From 2026-07-28 MCP is sessionless, and a Gatehouse run is
// a client session; clients of the newer protocol fall back to these.
var sessionProtocols = []string{"2025-11-25", "2025-06-18", "2025-03-26"}

// New builds the gateway and connects to every upstream; an upstream that
// cannot be reached now is tried again every reconnectEvery (and on a
// call), so a server starts with one of its upstreams down and lists its
// tools once it is up.
func New(ctx context.Context, opts Options) (*Gateway, error) {
	if opts.Config == nil || opts.Service == nil || opts.Catalog == nil {
		return nil, errors.New("mcpgw: options need a config, a service and the catalog")
	}
	g := &Gateway{
		cfg: opts.Config, svc: opts.Service, catalog: opts.Catalog, log: opts.Logger,
		upstreams: map[string]*upstream{}, sessions: map[*mcp.ServerSession]*session{},
		workerID: "mcp-gateway/" + opts.ReplicaID, leaseSeconds: 60,
	}
	if g.log == nil {
		g.log = slog.New(slog.DiscardHandler)
	}
	for _, u := range g.cfg.Upstreams {
		for _, t := range u.Tools {
			if _, ok := g.catalog.Lookup(t.Spec.Name); !ok {
				return nil, fmt.Errorf("mcpgw: tool %s of %s is not in the loaded catalog (load the policy with Config.PolicyOptions)", t.Spec.Name, g.cfg.File)
			}
		}
	}
	g.closing, g.stop = context.WithCancel(context.WithoutCancel(ctx))
	g.server = mcp.NewServer(&mcp.Implementation{Name: "gatehouse", Title: "Gatehouse MCP gateway", Version: "0.1"}, &mcp.ServerOptions{
		Logger:                    g.log,
		SupportedProtocolVersions: sessionProtocols,
		Capabilities: &mcp.ServerCapabilities{
			Tools:     &mcp.ToolCapabilities{ListChanged: true},
			Resources: &mcp.ResourceCapabilities{ListChanged: true},
			Prompts:   &mcp.PromptCapabilities{ListChanged: true},
		},
	})
	for _, uc := range g.cfg.Upstreams {
		g.upstreams[uc.ID] = newUpstream(g, uc)
	}
	for _, u := range g.upstreams {
		if _, err := u.connect(ctx); err != nil {
			g.log.Warn("mcp upstream unreachable at start; tried again in the background", "upstream", u.cfg.ID, "error", err)
		}
		g.wg.Go(func() { u.keepConnected(g.closing) })
	}
	bound := auth.RequireBearerToken(verifyPrincipal, &auth.RequireBearerTokenOptions{AllowMissingExpiration: true})(
		mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return g.server }, &mcp.StreamableHTTPOptions{
			Logger:         g.log,
			SessionTimeout: g.cfg.SessionTimeout,
			// The console's Host allowlist already guards every route.
			DisableLocalhostProtection: true,
		}))
	g.handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodDelete {
			g.ending(r)
		}
		if r.Header.Get("Authorization") == "" {
			// The dev principal comes without a token; the SDK's
			// middleware wants a header, and verifyPrincipal reads only
			// the principal already authenticated.
			r = r.Clone(r.Context())
			r.Header.Set("Authorization", "Bearer authenticated-upstream")
		}
		bound.ServeHTTP(w, r)
	})
	return g, nil
}

// Handler serves MCP over Streamable HTTP. The request context must carry
// the authenticated principal (WithPrincipal); handlers mounts it behind
// the API's bearer authentication.
func (g *Gateway) Handler() http.Handler { return g.handler }

// Close ends every session (completing or cancelling its run) and
// disconnects the upstreams.
func (g *Gateway) Close() {
	g.mu.Lock()
	sessions := make([]*session, 0, len(g.sessions))
	for _, s := range g.sessions {
		sessions = append(sessions, s)
	}
	g.mu.Unlock()
	for _, s := range sessions {
		s.stopWaits()
		_ = s.ss.Close()
	}
	g.stop()
	for _, u := range g.upstreams {
		u.close()
	}
	g.wg.Wait()
}

// ending stops the waits of the session a client is closing (DELETE): the
// SDK closes a session only once its calls in flight returned, and a call
// waiting for a human would hold the close for hours. Only the session's
// own principal ends it; anyone else's DELETE is refused by the SDK.
func (g *Gateway) ending(r *http.Request) {
	p, ok := r.Context().Value(principalKey{}).(engine.Principal)
	id := r.Header.Get("Mcp-Session-Id")
	if !ok || id == "" {
		return
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	for ss, s := range g.sessions {
		if ss.ID() == id && s.principal.TenantID == p.TenantID && s.principal.ID == p.ID {
			s.stopWaits()
		}
	}
}

type principalKey struct{}

// WithPrincipal returns ctx carrying the principal that authenticated the
// request; the gateway takes it, never a header, as the session's.
func WithPrincipal(ctx context.Context, p engine.Principal) context.Context {
	return context.WithValue(ctx, principalKey{}, p)
}

// verifyPrincipal hands the SDK the principal the API's bearer
// authentication found. Its UserID binds an MCP session to that principal:
// the SDK refuses a request for the session from anyone else.
func verifyPrincipal(ctx context.Context, _ string, req *http.Request) (*auth.TokenInfo, error) {
	p, ok := req.Context().Value(principalKey{}).(engine.Principal)
	if !ok || p.ID == "" {
		return nil, auth.ErrInvalidToken
	}
	return &auth.TokenInfo{UserID: p.TenantID + "/" + p.ID, Extra: map[string]any{"principal": p}}, nil
}

// principalOf is the principal of an MCP request.
func principalOf(extra *mcp.RequestExtra) (engine.Principal, bool) {
	if extra == nil || extra.TokenInfo == nil {
		return engine.Principal{}, false
	}
	p, ok := extra.TokenInfo.Extra["principal"].(engine.Principal)
	return p, ok
}

// session returns the gateway's state for a client session, creating it
// on the session's first call; it ends with the client session.
func (g *Gateway) session(ss *mcp.ServerSession, p engine.Principal) *session {
	g.mu.Lock()
	defer g.mu.Unlock()
	if s, ok := g.sessions[ss]; ok {
		return s
	}
	s := newSession(g, ss, p)
	g.sessions[ss] = s
	g.wg.Go(func() {
		done := make(chan struct{})
		go func() { _ = ss.Wait(); close(done) }()
		s.keepLease(g.closing, done)
		g.mu.Lock()
		delete(g.sessions, ss)
		g.mu.Unlock()
		s.stopWaits()
		s.end()
	})
	return s
}

// syncTools makes the gateway list exactly the classified tools an
// upstream lists now. A tool the operator did not classify is hidden, not
// listed-and-denied: its name and schema are the upstream's words, not the
// operator's, and a client that cannot see a tool cannot be talked into
// calling it. Hiding costs debuggability, so each unclassified tool is
// logged and shown on the policy page (Hints).
func (g *Gateway) syncTools(u *upstream, listed []*mcp.Tool) {
	classified, unclassified := u.classify(listed)
	var remove []string
	for _, t := range u.cfg.Tools {
		if _, ok := classified[t.Upstream]; !ok {
			remove = append(remove, t.Spec.Name)
		}
	}
	if len(remove) > 0 {
		g.server.RemoveTools(remove...)
	}
	for _, t := range u.cfg.Tools {
		lt, ok := classified[t.Upstream]
		if !ok {
			continue
		}
		g.server.AddTool(&mcp.Tool{
			Name:        t.Spec.Name,
			Title:       lt.Title,
			Description: lt.Description,
			InputSchema: objectSchema(lt.InputSchema),
			Annotations: lt.Annotations,
		}, g.callHandler(u, t))
	}
	for _, name := range unclassified {
		g.log.Warn("mcp upstream lists a tool the operator has not classified; hidden from clients", "upstream", u.cfg.ID, "tool", name)
	}
}

// objectSchema is the upstream's input schema when it is a JSON object of
// type object (what the SDK requires of a listed tool), else the schema
// that admits any object: the gate, not the schema, decides.
func objectSchema(s any) any {
	if m, ok := s.(map[string]any); ok && m["type"] == "object" {
		return m
	}
	return map[string]any{"type": "object"}
}

// Hint is what an upstream says about one of its tools, for the operator
// classifying it: never an input of any decision.
type Hint struct {
	Upstream     string
	Tool         string // the upstream's name
	CatalogName  string // "" when the operator has not classified it
	Title        string
	Annotations  *mcp.ToolAnnotations
	Listed       bool // the upstream lists it now
	Classified   bool
	Disconnected bool // the upstream is not connected; Listed is from the last listing
}

// Hints lists every upstream's tools as last listed, classified or not,
// and the classified tools the upstream does not list (Listed false).
func (g *Gateway) Hints() []Hint {
	var out []Hint
	for _, uc := range g.cfg.Upstreams {
		out = append(out, g.upstreams[uc.ID].hints()...)
	}
	return out
}

// now is the gateway's only clock read: deadlines shown to clients, never
// a decision (the service keeps its own clock).
func now() time.Time { return time.Now() }

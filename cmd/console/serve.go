package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/labstack/echo/v4"

	"gatehouse/auth"
	"gatehouse/engine"
	"gatehouse/handlers"
	"gatehouse/handlers/console"
	"gatehouse/internal/metrics"
	"gatehouse/internal/pgdb"
	"gatehouse/mcpgw"
	"gatehouse/migrations"
	"gatehouse/notify"
	"gatehouse/rules"
	"gatehouse/service"
)

// serveConfig is `console serve`'s configuration: the environment
// (envConfig) as defaults, flags over them.
type serveConfig struct {
	databaseURL    string
	addr           string
	baseURL        string
	principals     string
	devMode        bool
	sessionKeys    string
	policyProfile  string
	policyDir      string
	toolsFile      string
	mcpFile        string
	reaperInterval time.Duration
	demo           bool
	dbMaxConns     int
	ratePerSecond  float64
	rateBurst      int
	trustXFF       bool
	allowedHosts   string
	shutdownGrace  time.Duration
	notifyFile     string
	// stepUpWindow is how recent an authentication a critical approval
	// needs; 0 turns the step-up off.
	stepUpWindow time.Duration
	// getenv reads the variable the principals file names for the OIDC
	// client secret.
	getenv func(string) string
	// advisory is the advisory layer's environment (advisor.go).
	advisory   advisoryEnv
	grantSites string
	// vapid is the Web Push key pair from the environment; empty: the
	// pair stored in the database (generated on first start). Never a
	// flag: a private key on a command line shows in the process list.
	vapid vapidKeys
}

func parseServeConfig(env envConfig, args []string, stderr io.Writer) (serveConfig, error) {
	var cfg serveConfig
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&cfg.databaseURL, "database-url", env.DatabaseURL, "PostgreSQL connection string (DATABASE_URL)")
	fs.StringVar(&cfg.addr, "addr", env.Addr, "listen address (CONSOLE_ADDR)")
	fs.StringVar(&cfg.baseURL, "base-url", env.BaseURL, "absolute origin of the console (CONSOLE_BASE_URL; default http://ADDR)")
	fs.StringVar(&cfg.principals, "principals", env.Principals, "principals file (CONSOLE_PRINCIPALS)")
	fs.BoolVar(&cfg.devMode, "dev", env.DevMode, "development auth: one principal with every scope, loopback only (AUTH_MODE=dev)")
	fs.StringVar(&cfg.sessionKeys, "session-keys", env.SessionKeys, "comma-separated hex cookie keys, first signs (CONSOLE_SESSION_KEYS)")
	fs.StringVar(&cfg.policyProfile, "policy-profile", env.PolicyProfile, "default policy profile (CONSOLE_POLICY_PROFILE)")
	fs.StringVar(&cfg.policyDir, "policy-dir", env.PolicyDir, "operator profiles directory (CONSOLE_POLICY_DIR)")
	fs.StringVar(&cfg.toolsFile, "tools", env.ToolsFile, "operator tool catalog (CONSOLE_TOOLS)")
	fs.StringVar(&cfg.mcpFile, "mcp", env.MCPFile, "MCP gateway upstreams and their tools' catalog entries (CONSOLE_MCP)")
	fs.BoolVar(&cfg.demo, "demo", false, "run the demo agent in-process (dev mode only)")
	fs.StringVar(&cfg.allowedHosts, "allowed-hosts", env.AllowedHosts, "comma-separated further Host names to answer for, beyond the base URL's (CONSOLE_ALLOWED_HOSTS)")
	fs.BoolVar(&cfg.trustXFF, "trust-x-forwarded-for", env.TrustXFF, "take the client address from X-Forwarded-For set by a proxy on a private network (CONSOLE_TRUST_XFF=1)")
	fs.StringVar(&cfg.notifyFile, "notify", env.Notify, "notification channels and routes (CONSOLE_NOTIFY)")
	fs.StringVar(&cfg.grantSites, "browser-grant-sites", env.GrantSites, "site scopes browser task grants may be offered for, per tenant (CONSOLE_BROWSER_GRANT_SITES)")
	fs.DurationVar(&cfg.shutdownGrace, "shutdown-grace", 15*time.Second, "how long in-flight requests may finish at shutdown")
	reaper := fs.String("reaper-interval", env.ReaperInterval, "expiry reaper period; 0 disables it here (CONSOLE_REAPER_INTERVAL)")
	maxConns := fs.String("db-max-conns", env.DBMaxConns, "database pool size (CONSOLE_DB_MAX_CONNS)")
	rate := fs.String("rate-limit", env.RateLimit, "API requests per second per principal (CONSOLE_RATE_LIMIT)")
	burst := fs.String("rate-burst", env.RateBurst, "API burst per principal (CONSOLE_RATE_BURST)")
	stepUp := fs.String("step-up-window", env.StepUpWindow, "how recent a sign-in approving a critical action needs; 0 turns the step-up off (CONSOLE_STEP_UP_WINDOW)")
	if err := fs.Parse(args); err != nil {
		return cfg, fmt.Errorf("%w: %w", errUsage, err)
	}
	if fs.NArg() > 0 {
		return cfg, fmt.Errorf("%w: serve takes no arguments", errUsage)
	}
	var err error
	if cfg.reaperInterval, err = time.ParseDuration(*reaper); err != nil || cfg.reaperInterval < 0 {
		return cfg, fmt.Errorf("reaper interval %q: want a duration such as 5s, or 0", *reaper)
	}
	if cfg.dbMaxConns, err = strconv.Atoi(*maxConns); err != nil || cfg.dbMaxConns < 2 {
		return cfg, fmt.Errorf("db max conns %q: want an integer of at least 2", *maxConns)
	}
	if cfg.ratePerSecond, err = strconv.ParseFloat(*rate, 64); err != nil || cfg.ratePerSecond <= 0 {
		return cfg, fmt.Errorf("rate limit %q: want a positive number", *rate)
	}
	if cfg.rateBurst, err = strconv.Atoi(*burst); err != nil || cfg.rateBurst < 1 {
		return cfg, fmt.Errorf("rate burst %q: want a positive integer", *burst)
	}
	if cfg.stepUpWindow, err = time.ParseDuration(*stepUp); err != nil || cfg.stepUpWindow < 0 {
		return cfg, fmt.Errorf("step-up window %q: want a duration such as 10m, or 0", *stepUp)
	}
	cfg.getenv = env.Getenv
	if cfg.databaseURL == "" {
		return cfg, errors.New("DATABASE_URL is not set (`make run` starts a local PostgreSQL)")
	}
	if cfg.devMode && !isLoopback(cfg.addr) {
		return cfg, fmt.Errorf("AUTH_MODE=dev refuses to listen on %q: use a loopback address such as 127.0.0.1:8080", cfg.addr)
	}
	if cfg.demo && !cfg.devMode {
		return cfg, errors.New("--demo needs AUTH_MODE=dev")
	}
	if cfg.baseURL == "" {
		cfg.baseURL = "http://" + cfg.addr
	}
	if cfg.vapid, err = envVAPIDKeys(env); err != nil {
		return cfg, err
	}
	cfg.advisory = env.Advisory
	return cfg, nil
}

// isLoopback reports whether a listen address binds only the loopback
// interface; an empty host binds every interface.
func isLoopback(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// runServe is `console serve`: load the policy and the principals,
// migrate, wire the service and the HTTP server, then serve until ctx ends.
func runServe(ctx context.Context, env envConfig, args []string, stderr io.Writer) error {
	cfg, err := parseServeConfig(env, args, stderr)
	if err != nil {
		return err
	}
	logger, err := newLogger(stderr, env.LogFormat, env.LogLevel, cfg.devMode)
	if err != nil {
		return err
	}
	in, err := loadServeInputs(cfg)
	if err != nil {
		return err
	}
	pool, err := openPool(ctx, cfg)
	if err != nil {
		return err
	}
	defer pool.Close()
	applied, err := migrations.Up(ctx, pool)
	if err != nil {
		return err
	}
	logger.Info("migrations applied", "count", len(applied))
	svc, srv, err := buildServer(ctx, cfg, in, pool, logger)
	if err != nil {
		return err
	}
	return serveUntilDone(ctx, cfg, in, svc, srv.Handler(), logger, func() {
		if cfg.devMode {
			banner(stderr, cfg, env.DataDir)
		}
	})
}

// serveInputs is what serve reads before it touches the database.
type serveInputs struct {
	policy *rules.Set
	dir    *auth.Directory
	keys   [][]byte
	// demoToken is the in-process demo agent's bearer token (--demo).
	demoToken string
	// notify is the CONSOLE_NOTIFY file (or the demo's), nil for none.
	notify *notify.Config
	// oidcSecret is the OIDC client secret from the variable the
	// principals file names.
	oidcSecret string
	// mcp is the MCP gateway's configuration (CONSOLE_MCP), or nil.
	mcp *mcpgw.Config
	// grantSites are CONSOLE_BROWSER_GRANT_SITES's site scopes.
	grantSites *engine.GrantSites
}

// loadServeInputs loads the policy, the principals and the cookie keys,
// and mints the demo agent's token.
func loadServeInputs(cfg serveConfig) (serveInputs, error) {
	var in serveInputs
	var opts rules.Options
	var err error
	in.mcp, opts, err = loadMCP(cfg.mcpFile, rules.Options{PolicyDir: cfg.policyDir, ToolsFile: cfg.toolsFile, DefaultProfile: cfg.policyProfile})
	if err != nil {
		return in, err
	}
	if in.policy, err = rules.Load(opts); err != nil {
		return in, fmt.Errorf("loading policy: %w", err)
	}
	if in.dir, err = loadPrincipals(cfg); err != nil {
		return in, err
	}
	if in.dir, err = devMCPScopes(cfg, in.mcp, in.dir); err != nil {
		return in, err
	}
	if in.keys, err = sessionKeys(cfg); err != nil {
		return in, err
	}
	if in.oidcSecret, err = oidcSecret(cfg, in.dir); err != nil {
		return in, err
	}
	if in.notify, err = loadNotify(cfg); err != nil {
		return in, err
	}
	if in.grantSites, err = rules.LoadGrantSites(cfg.grantSites); err != nil {
		return in, fmt.Errorf("loading browser grant sites: %w", err)
	}
	if cfg.demo {
		// Minted per process and kept in memory: the demo agent is the only
		// holder and it dies with the server.
		if in.demoToken, _, err = auth.NewToken(); err != nil {
			return in, err
		}
		if in.dir, err = in.dir.WithToken(auth.DevPrincipalID, in.demoToken); err != nil {
			return in, err
		}
	}
	return in, nil
}

// buildServer wires the service, the console's sessions and the HTTP
// handlers over pool, with the metrics the service reports into.
func buildServer(ctx context.Context, cfg serveConfig, in serveInputs, pool *pgxpool.Pool, logger *slog.Logger) (*service.Service, *handlers.Server, error) {
	m := metrics.New()
	vapid, err := cfg.vapidKeys(ctx, pool)
	if err != nil {
		return nil, nil, err
	}
	notifications, err := notifications(cfg, in, vapid, logger)
	if err != nil {
		return nil, nil, err
	}
	adv, err := cfg.advisory.compose(in.policy, logger)
	if err != nil {
		return nil, nil, err
	}
	svc, err := service.New(ctx, service.Config{
		Pool:            pool,
		Policy:          in.policy,
		Principals:      in.dir,
		Logger:          logger,
		Metrics:         m,
		ReplicaID:       replicaID(),
		Notify:          notifications,
		Advisor:         adv,
		AdvisoryObserve: cfg.advisory.observe,
		GrantSites:      in.grantSites,
	})
	if err != nil {
		return nil, nil, fmt.Errorf("starting service: %w", err)
	}
	sessions, err := service.NewConsoleSessions(pool, service.LoginThrottle{})
	if err != nil {
		return nil, nil, err
	}
	sso, err := newOIDC(ctx, cfg, in)
	if err != nil {
		return nil, nil, err
	}
	gateway, err := startGateway(ctx, in, svc, logger)
	if err != nil {
		return nil, nil, err
	}
	ipExtractor := echo.ExtractIPDirect()
	if cfg.trustXFF {
		ipExtractor = echo.ExtractIPFromXFFHeader()
	}
	srv, err := handlers.New(handlers.Config{
		Service:      svc,
		Directory:    in.dir,
		Policy:       in.policy,
		Logger:       logger,
		Metrics:      m,
		BaseURL:      cfg.baseURL,
		ListenAddr:   cfg.addr,
		AllowedHosts: splitList(cfg.allowedHosts),
		DevMode:      cfg.devMode,
		SessionKeys:  in.keys,
		// A newcomer's terminal (make run) shows what happens, not every
		// request; LOG_LEVEL=debug brings the request lines back.
		RequestLogLevel: requestLogLevel(cfg.devMode),
		Sessions:        sessions,
		RateLimit:       handlers.RateLimit{PerSecond: cfg.ratePerSecond, Burst: cfg.rateBurst},
		IPExtractor:     ipExtractor,
		// The private half is the delivery worker's (notify's webpush
		// channel); the console only hands browsers the public one.
		VAPIDPublicKey: vapid.public,
		OIDC:           sso,
		StepUpWindow:   stepUpWindow(cfg.stepUpWindow),
		MCP:            gateway,
	})
	if err != nil {
		return nil, nil, err
	}
	return svc, srv, nil
}

// serveUntilDone listens, runs the event listener, the reaper and the demo
// agent beside the HTTP server, and when ctx ends gives in-flight requests
// the shutdown grace before it stops them all.
func serveUntilDone(ctx context.Context, cfg serveConfig, in serveInputs, svc *service.Service, h http.Handler, logger *slog.Logger, listening func()) error {
	ln, err := (&net.ListenConfig{}).Listen(ctx, "tcp", cfg.addr)
	if err != nil {
		return fmt.Errorf("listening on %s: %w", cfg.addr, err)
	}
	httpSrv := &http.Server{
		Handler:           h,
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       30 * time.Second,
		// Above the 30 s event long-poll.
		WriteTimeout: 60 * time.Second,
		IdleTimeout:  120 * time.Second,
		ErrorLog:     slog.NewLogLogger(logger.Handler(), slog.LevelWarn),
	}

	bg, stopBG := context.WithCancel(ctx)
	defer stopBG()
	var wg sync.WaitGroup
	// The listener only speeds up event long-polls; they poll without it.
	wg.Go(func() { svc.RunListener(bg) })
	if cfg.reaperInterval > 0 {
		wg.Go(func() { svc.RunReaper(bg, cfg.reaperInterval) })
	}
	wg.Go(func() { svc.RunNotifier(bg, notifierInterval) })
	serveErr := make(chan error, 1)
	go func() { serveErr <- httpSrv.Serve(ln) }()
	logger.Info("serving", "addr", ln.Addr().String(), "dev_mode", cfg.devMode,
		"policy_profile", in.policy.DefaultProfile(), "reaper_interval", cfg.reaperInterval.String())
	listening()
	if cfg.demo {
		wg.Go(func() {
			if err := demoLoop(bg, cfg.baseURL, in.demoToken, logger); err != nil && bg.Err() == nil {
				logger.Error("demo agent stopped", "error", err)
			}
		})
	}

	select {
	case err = <-serveErr:
		err = fmt.Errorf("serving: %w", err)
	case <-ctx.Done():
		logger.Info("shutting down")
		shutCtx, cancel := context.WithTimeout(context.Background(), cfg.shutdownGrace)
		err = httpSrv.Shutdown(shutCtx)
		cancel()
		if err != nil {
			err = fmt.Errorf("shutting down: %w", err)
		}
	}
	stopBG()
	wg.Wait()
	if err == nil {
		logger.Info("stopped")
	}
	return err
}

func loadPrincipals(cfg serveConfig) (*auth.Directory, error) {
	if cfg.devMode {
		return auth.Dev(), nil
	}
	return auth.Load(cfg.principals)
}

// oidcSecret reads the OIDC client secret from the variable the
// principals file names: named and empty refuses the start, since the
// provider would refuse every sign-in.
func oidcSecret(cfg serveConfig, dir *auth.Directory) (string, error) {
	o, ok := dir.OIDC()
	if !ok || o.ClientSecretEnv == "" {
		return "", nil
	}
	secret := cfg.getenv(o.ClientSecretEnv)
	if secret == "" {
		return "", fmt.Errorf("the principals file's oidc.client_secret_env names %s, which is not set", o.ClientSecretEnv)
	}
	return secret, nil
}

// oidcDiscoveryTimeout bounds the identity provider's discovery at start.
const oidcDiscoveryTimeout = 15 * time.Second

// newOIDC discovers the identity provider of the principals file's oidc
// section (nil when there is none): an issuer that does not answer
// refuses the start, not the first sign-in.
func newOIDC(ctx context.Context, cfg serveConfig, in serveInputs) (*console.OIDC, error) {
	o, ok := in.dir.OIDC()
	if !ok {
		return nil, nil
	}
	ctx, cancel := context.WithTimeout(ctx, oidcDiscoveryTimeout)
	defer cancel()
	return console.NewOIDC(ctx, o, in.oidcSecret, strings.TrimSuffix(cfg.baseURL, "/")+console.OIDCCallbackPath, nil)
}

// stepUpWindow is the handlers' setting for a window read as 0 = off.
func stepUpWindow(d time.Duration) time.Duration {
	if d == 0 {
		return -1
	}
	return d
}

func openPool(ctx context.Context, cfg serveConfig) (*pgxpool.Pool, error) {
	return pgdb.Open(ctx, cfg.databaseURL, int32(cfg.dbMaxConns))
}

// sessionKeys decodes CONSOLE_SESSION_KEYS. In dev mode, without keys, one
// is generated once into .data/ so console logins survive restarts.
func sessionKeys(cfg serveConfig) ([][]byte, error) {
	raw := cfg.sessionKeys
	if raw == "" && cfg.devMode {
		var err error
		if raw, err = devSessionKey(filepath.Join(".data", "session.key")); err != nil {
			return nil, err
		}
	}
	if raw == "" {
		return nil, errors.New("CONSOLE_SESSION_KEYS is required outside AUTH_MODE=dev (comma-separated hex keys of at least 32 bytes)")
	}
	var keys [][]byte
	for i, k := range strings.Split(raw, ",") {
		b, err := hex.DecodeString(strings.TrimSpace(k))
		if err != nil || len(b) < 32 {
			return nil, fmt.Errorf("CONSOLE_SESSION_KEYS: key %d is not hex of at least 32 bytes", i+1)
		}
		keys = append(keys, b)
	}
	return keys, nil
}

func devSessionKey(path string) (string, error) {
	if b, err := os.ReadFile(path); err == nil {
		return strings.TrimSpace(string(b)), nil
	} else if !errors.Is(err, os.ErrNotExist) {
		return "", fmt.Errorf("reading dev session key: %w", err)
	}
	k := make([]byte, 32)
	if _, err := rand.Read(k); err != nil {
		return "", fmt.Errorf("generating dev session key: %w", err)
	}
	s := hex.EncodeToString(k)
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return "", fmt.Errorf("writing dev session key: %w", err)
	}
	if err := os.WriteFile(path, []byte(s+"\n"), 0o600); err != nil {
		return "", fmt.Errorf("writing dev session key: %w", err)
	}
	return s, nil
}

// replicaID names this process in leases and audit rows.
func replicaID() string {
	host, err := os.Hostname()
	if err != nil {
		host = "unknown"
	}
	return host + "-" + strconv.Itoa(os.Getpid())
}

// splitList splits a comma-separated setting, dropping empty entries.
func splitList(v string) []string {
	var out []string
	for _, s := range strings.Split(v, ",") {
		if s = strings.TrimSpace(s); s != "" {
			out = append(out, s)
		}
	}
	return out
}

// Package e2e tests the real binary end to end: `console serve` on a
// loopback port against its own PostgreSQL database, driven over HTTP (and,
// in the console tests, by headless Chromium).
package e2e

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"gatehouse/auth"
	"gatehouse/client"
	"gatehouse/internal/testdb"
)

var loadFlag = flag.Bool("load", false, "run the load test (make loadtest)")

var (
	binary    string // the console binary built once by TestMain
	artifacts string // where server logs are kept
)

func TestMain(m *testing.M) {
	flag.Parse()
	os.Exit(runMain(m))
}

func runMain(m *testing.M) int {
	tmp, err := os.MkdirTemp("", "gatehouse-e2e-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "e2e:", err)
		return 1
	}
	defer os.RemoveAll(tmp)
	artifacts = os.Getenv("ARTIFACTS")
	if artifacts == "" {
		artifacts = filepath.Join(tmp, "artifacts")
	}
	if err := os.MkdirAll(artifacts, 0o755); err != nil {
		fmt.Fprintln(os.Stderr, "e2e:", err)
		return 1
	}
	binary = filepath.Join(tmp, "console")
	build := exec.Command("go", "build", "-o", binary, "./cmd/console")
	build.Dir = ".."
	build.Stdout, build.Stderr = os.Stdout, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "e2e: building the console binary:", err)
		return 1
	}
	return m.Run()
}

// principalSpec is one principal of the test principals file.
type principalSpec struct {
	id, tenant string
	scopes     []string
}

// runScopes and approverScopes are what the test principals hold.
var (
	runScopes      = []string{"run.read", "run.write", "run.cancel"}
	approverScopes = []string{"approval.read", "approval.resolve"}
	toolScopes     = []string{"workspace.read", "workspace.write", "sandbox.execute", "demo.write", "schedule.write", "memory.write", "skill.write", "artifact.write"}
)

// testPrincipals: two tenants; alice may do everything an agent and an
// approver do, bob only approves, agent runs and reads runs as an agent
// token does (no approval scope), carol is alice's twin in another tenant,
// nobody holds no scope at all (403 tests), and mcpagent is an MCP client's
// principal (the gateway's demo and reference upstreams).
var testPrincipals = []principalSpec{
	{"alice", "acme", concat(runScopes, approverScopes, toolScopes)},
	{"agent", "acme", concat([]string{"run.read", "run.write"}, toolScopes)},
	{"bob", "acme", concat(approverScopes, []string{"run.read"})},
	{"carol", "globex", concat(runScopes, approverScopes, toolScopes)},
	{"nobody", "acme", nil},
	// viewer reads the queue and nothing else: no resolve, no run.read.
	{"viewer", "acme", []string{"approval.read"}},
	{"mcpagent", "acme", concat(runScopes, []string{"mcp.demo.use", "mcp.demo.write", "mcp.everything.use"})},
	// gina may also accept browser task grant offers and revoke grants;
	// gus is her twin in another tenant.
	{"gina", "acme", concat(approverScopes, grantScopes, []string{"run.read"})},
	{"gus", "globex", concat(approverScopes, grantScopes, []string{"run.read"})},
}

// grantScopes read and write browser task grants (ADR-0129).
var grantScopes = []string{"browser.grant.read", "browser.grant.write"}

func concat(lists ...[]string) []string {
	var out []string
	for _, l := range lists {
		out = append(out, l...)
	}
	return out
}

// serverOptions adjusts one server.
type serverOptions struct {
	// ReaperInterval is CONSOLE_REAPER_INTERVAL; zero means 1s.
	ReaperInterval time.Duration
	// PolicyDir is CONSOLE_POLICY_DIR; PolicyProfile CONSOLE_POLICY_PROFILE.
	PolicyDir     string
	PolicyProfile string
	// Env adds environment variables (NAME=value).
	Env []string
}

// server is a running `console serve`.
type server struct {
	BaseURL     string
	LogPath     string
	tokens      map[string]string
	passwords   map[string]string
	dbURL       string
	principals  string // the principals file
	sessionKeys string
}

// Token is a bearer token of the principal.
func (s *server) Token(principalID string) string { return s.tokens[principalID] }

// Password is the principal's console password.
func (s *server) Password(principalID string) string { return s.passwords[principalID] }

// Client is an API client acting as the principal.
func (s *server) Client(principalID string) *client.Client {
	c, err := client.New(s.BaseURL, s.Token(principalID), &http.Client{Timeout: 60 * time.Second})
	if err != nil {
		panic(err) // BaseURL is built by startServer and always valid
	}
	return c
}

var unsafeName = regexp.MustCompile(`[^a-zA-Z0-9]+`)

// startServer starts the binary on a fresh database and a free loopback
// port, waits for /readyz, and stops it with SIGTERM when the test ends.
func startServer(t testing.TB, opts serverOptions) *server {
	t.Helper()
	srv := newServer(t, "")
	p := srv.spawn(t, opts)
	srv.waitReady(t, p)
	return srv
}

// newServer prepares a server of the test principals on a free loopback
// port and a fresh database (dbURL "" ) or the given one; spawn starts it.
func newServer(t testing.TB, dbURL string) *server {
	t.Helper()
	name := strings.ToLower(strings.Trim(unsafeName.ReplaceAllString(t.Name(), "_"), "_"))
	if dbURL == "" {
		dbURL = testdb.NewDatabase(t, "e2e_"+name)
	}
	dir := t.TempDir()

	srv := &server{tokens: map[string]string{}, passwords: map[string]string{}, dbURL: dbURL, sessionKeys: randomHex(t, 32)}
	var yml strings.Builder
	yml.WriteString("principals:\n")
	for _, p := range testPrincipals {
		tok, sum, err := auth.NewToken()
		if err != nil {
			t.Fatal(err)
		}
		pw := "pw-" + p.id + "-" + randomHex(t, 4)
		hash, err := auth.HashPassword(pw)
		if err != nil {
			t.Fatal(err)
		}
		srv.tokens[p.id], srv.passwords[p.id] = tok, pw
		fmt.Fprintf(&yml, "  - id: %s\n    tenant_id: %s\n    display_name: %s\n    scopes: [%s]\n    password_argon2id: %q\n    tokens:\n      - {name: test, sha256: %q}\n",
			p.id, p.tenant, strings.ToUpper(p.id[:1])+p.id[1:], strings.Join(p.scopes, ", "), hash, sum)
		if profiles := principalProfiles[p.id]; len(profiles) > 0 {
			fmt.Fprintf(&yml, "    policy_profiles: [%s]\n", strings.Join(profiles, ", "))
		}
	}
	srv.principals = filepath.Join(dir, "principals.yaml")
	if err := os.WriteFile(srv.principals, []byte(yml.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	srv.BaseURL = "http://" + freeAddr(t)
	srv.LogPath = filepath.Join(artifacts, name+"-server.log")
	return srv
}

// proc is one process of a server.
type proc struct {
	cmd    *exec.Cmd
	exited chan error
	killed bool
}

// kill ends the process with SIGKILL, as a crash would, and waits for it.
func (p *proc) kill() {
	p.killed = true
	_ = p.cmd.Process.Kill()
	p.exited <- <-p.exited
}

// spawn starts a process of the server, logging to LogPath (appended to
// across restarts). Unless it was killed, it is stopped with SIGTERM when
// the test ends, and must exit cleanly.
func (srv *server) spawn(t testing.TB, opts serverOptions) *proc {
	t.Helper()
	reaper := opts.ReaperInterval
	if reaper == 0 {
		reaper = time.Second
	}
	logFile, err := os.OpenFile(srv.LogPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(binary, "serve")
	cmd.Env = append(os.Environ(),
		"DATABASE_URL="+srv.dbURL,
		"CONSOLE_ADDR="+strings.TrimPrefix(srv.BaseURL, "http://"),
		"CONSOLE_BASE_URL="+srv.BaseURL,
		"CONSOLE_PRINCIPALS="+srv.principals,
		"CONSOLE_SESSION_KEYS="+srv.sessionKeys,
		"CONSOLE_REAPER_INTERVAL="+reaper.String(),
		"CONSOLE_POLICY_DIR="+opts.PolicyDir,
		"CONSOLE_POLICY_PROFILE="+opts.PolicyProfile,
		"AUTH_MODE=",
		// The log tests parse JSON lines; the default would be text on a
		// terminal or in dev mode.
		"LOG_FORMAT=json",
		// Tests drive the API far harder than an agent; the rate limit has
		// its own test.
		"CONSOLE_RATE_LIMIT=100000",
		"CONSOLE_RATE_BURST=100000",
	)
	cmd.Env = append(cmd.Env, opts.Env...)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p := &proc{cmd: cmd, exited: make(chan error, 1)}
	go func() { p.exited <- cmd.Wait() }()
	t.Cleanup(func() {
		defer logFile.Close()
		if p.killed {
			return
		}
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case err := <-p.exited:
			if err != nil {
				t.Errorf("server exited with %v; log: %s", err, srv.LogPath)
			}
		case <-time.After(20 * time.Second):
			_ = cmd.Process.Kill()
			t.Logf("killed server exited: %v", <-p.exited)
			t.Errorf("server ignored SIGTERM; log: %s", srv.LogPath)
		}
	})
	return p
}

// waitReady waits until the server answers /readyz.
func (srv *server) waitReady(t testing.TB, p *proc) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		select {
		case err := <-p.exited:
			p.exited <- err
			t.Fatalf("server exited before ready (%v):\n%s", err, tail(srv.LogPath))
		default:
		}
		resp, err := http.Get(srv.BaseURL + "/readyz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("server not ready after 60s:\n%s", tail(srv.LogPath))
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// freeAddr finds a free loopback port. The server cannot report the port
// of 127.0.0.1:0, so the test picks one; the race with another process
// taking it in between is accepted.
func freeAddr(t testing.TB) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

func randomHex(t testing.TB, n int) string {
	t.Helper()
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(b)
}

// tail is the end of a log file, for failure messages.
func tail(path string) string {
	b, _ := os.ReadFile(path)
	if len(b) > 4000 {
		b = b[len(b)-4000:]
	}
	return string(bytes.TrimSpace(b))
}

// ctx is a per-test context bounded so a hung server fails the test.
func testContext(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

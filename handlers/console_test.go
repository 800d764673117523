package handlers

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"

	"gatehouse/api"
	"gatehouse/auth"
	"gatehouse/engine"
	"gatehouse/handlers/console"
	"gatehouse/internal/metrics"
	"gatehouse/internal/testdb"
	"gatehouse/rules"
	"gatehouse/service"
)

// testPassword is every bundle principal's console password.
const testPassword = "correct horse battery staple"

// passwordHash is computed once per test binary: argon2id at 64 MiB is the
// slow part of a setup.
var passwordHash = sync.OnceValues(func() (string, error) { return auth.HashPassword(testPassword) })

// testClock is the server's settable clock.
type testClock struct{ ns atomic.Int64 }

func (c *testClock) Now() time.Time          { return time.Unix(0, c.ns.Load()) }
func (c *testClock) Advance(d time.Duration) { c.ns.Add(int64(d)) }

// bundlePrincipals are the principals of every bundle: full acts as agent
// and approver, reader only reads approvals.
var bundlePrincipals = []struct {
	name   string
	scopes []string
}{
	{"full", []string{"approval.read", "approval.resolve", "run.read", "run.write", "demo.write"}},
	{"reader", []string{"approval.read"}},
	{"canceller", []string{"approval.read", "run.read", "run.cancel"}},
}

// bundle is the console and API of one test over the package's real
// database. Its tenant, principal ids and client address are its own, so
// parallel tests share no sessions and no login-throttle keys.
type bundle struct {
	t      *testing.T
	s      *Server
	svc    *service.Service
	base   string // http://127.0.0.1:port
	clock  *testClock
	suffix string
	ip     string // the client address the server sees unless X-Test-Peer says otherwise
}

// consoleCookie is the console cookie's name on a plain-HTTP base URL.
const consoleCookie = "gh_session"

// testPeerHeader lets a test pose as another client address.
const testPeerHeader = "X-Test-Peer"

// setup starts a bundle; adjust edits the login throttle (zero: the default).
func setup(t *testing.T, adjust ...func(*service.LoginThrottle)) *bundle {
	t.Helper()
	return setupWith(t, bundleOptions{adjust: adjust})
}

// bundleOptions shape a bundle beyond the defaults.
type bundleOptions struct {
	adjust []func(*service.LoginThrottle)
	// oidc is the principals file's oidc section (YAML lines, indented
	// for the top level) and each principal's mapping by name; sso builds
	// the console's relying party once the bundle's address is known.
	oidc    string
	mapping map[string]string
	sso     func(b *bundle, dir *auth.Directory) *console.OIDC
}

// setupWith starts a bundle shaped by o.
func setupWith(t *testing.T, o bundleOptions) *bundle {
	t.Helper()
	hash, err := passwordHash()
	if err != nil {
		t.Fatal(err)
	}
	b := &bundle{t: t, clock: &testClock{}, suffix: randHex(t, 4)}
	b.clock.ns.Store(time.Now().UnixNano())
	b.ip = "10.9." + fmt.Sprint(randByte(t)) + "." + fmt.Sprint(randByte(t))
	tenant := "t-" + b.suffix
	var yml strings.Builder
	yml.WriteString(o.oidc)
	yml.WriteString("principals:\n")
	for _, p := range bundlePrincipals {
		mapping := ""
		if m := o.mapping[p.name]; m != "" {
			mapping = ", oidc: " + m
		}
		fmt.Fprintf(&yml, "  - {id: %s, tenant_id: %s, scopes: [%s], password_argon2id: %q%s}\n",
			b.id(p.name), tenant, strings.Join(p.scopes, ", "), hash, mapping)
	}
	dir, err := auth.Parse([]byte(yml.String()))
	if err != nil {
		t.Fatal(err)
	}
	set, err := rules.Load(rules.Options{})
	if err != nil {
		t.Fatal(err)
	}
	pool := testdb.New(t)
	b.svc, err = service.New(context.Background(), service.Config{Pool: pool, Policy: set, Principals: dir, Now: b.clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	var throttle service.LoginThrottle
	for _, f := range o.adjust {
		f(&throttle)
	}
	sessions, err := service.NewConsoleSessions(pool, throttle)
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewUnstartedServer(nil)
	b.base = "http://" + ts.Listener.Addr().String()
	cfg := Config{
		Service: b.svc, Directory: dir, Policy: set, Metrics: metrics.New(), Sessions: sessions,
		BaseURL: b.base, Now: b.clock.Now, SessionKeys: [][]byte{[]byte(randHex(t, 32))},
		VAPIDPublicKey: testVAPIDPublic,
		IPExtractor: func(r *http.Request) string {
			if ip := r.Header.Get(testPeerHeader); ip != "" {
				return ip
			}
			return b.ip
		},
	}
	if o.sso != nil {
		cfg.OIDC = o.sso(b, dir)
	}
	if b.s, err = New(cfg); err != nil {
		t.Fatal(err)
	}
	ts.Config.Handler = b.s.Handler()
	ts.Start()
	t.Cleanup(ts.Close)
	return b
}

func randHex(t testing.TB, n int) string {
	t.Helper()
	buf := make([]byte, n)
	if _, err := rand.Read(buf); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(buf)
}

func randByte(t testing.TB) byte {
	t.Helper()
	var buf [1]byte
	if _, err := rand.Read(buf[:]); err != nil {
		t.Fatal(err)
	}
	return buf[0]
}

// id is a bundle principal's id.
func (b *bundle) id(name string) string { return name + "-" + b.suffix }

// browser is a cookie-keeping client that does not follow redirects, so
// tests see each answer.
func (b *bundle) browser() *http.Client {
	jar, err := cookiejar.New(nil)
	if err != nil {
		b.t.Fatal(err)
	}
	return &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
}

// reply is a finished response.
type reply struct {
	Status int
	Header http.Header
	Body   string
}

// do sends one request; header holds name, value pairs.
func (b *bundle) do(hc *http.Client, method, path, contentType string, body io.Reader, header ...string) reply {
	b.t.Helper()
	req, err := http.NewRequestWithContext(context.Background(), method, b.base+path, body)
	if err != nil {
		b.t.Fatal(err)
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	for i := 0; i+1 < len(header); i += 2 {
		if strings.EqualFold(header[i], "Host") {
			req.Host = header[i+1]
			continue
		}
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := hc.Do(req)
	if err != nil {
		b.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		b.t.Fatal(err)
	}
	return reply{Status: resp.StatusCode, Header: resp.Header, Body: string(raw)}
}

func (b *bundle) get(hc *http.Client, path string, header ...string) reply {
	b.t.Helper()
	return b.do(hc, http.MethodGet, path, "", nil, header...)
}

// postForm posts a urlencoded form.
func (b *bundle) postForm(hc *http.Client, path string, form url.Values, header ...string) reply {
	b.t.Helper()
	return b.do(hc, http.MethodPost, path, "application/x-www-form-urlencoded", strings.NewReader(form.Encode()), header...)
}

var csrfField = regexp.MustCompile(`name="_csrf" value="([^"]+)"`)

// formToken is the _csrf value of a page.
func (b *bundle) formToken(page reply) string {
	b.t.Helper()
	m := csrfField.FindStringSubmatch(page.Body)
	if m == nil {
		b.t.Fatalf("no form token in the page (%d): %.300s", page.Status, page.Body)
	}
	return m[1]
}

// loginForm opens the sign-in form in hc and returns its token.
func (b *bundle) loginToken(hc *http.Client) string {
	b.t.Helper()
	return b.formToken(b.get(hc, "/login"))
}

// login signs the bundle principal name in with password through the form.
func (b *bundle) login(hc *http.Client, name, password string, header ...string) reply {
	b.t.Helper()
	return b.postForm(hc, "/login", url.Values{"_csrf": {b.loginToken(hc)}, "id": {b.id(name)}, "password": {password}}, header...)
}

// park parks a run of the full principal on an approval and returns the
// approval.
func (b *bundle) park() api.Approval {
	b.t.Helper()
	return b.parkAction("demo.external_write", "set the status of record 42", map[string]any{"record": "42", "field": "status", "value": "shipped"})
}

// parkAction parks one action of tool name through the service and
// returns its approval.
func (b *bundle) parkAction(name, summary string, args map[string]any) api.Approval {
	b.t.Helper()
	ctx := context.Background()
	p, _ := b.s.cfg.Directory.ByID(b.id("full"))
	run, err := b.svc.SubmitRun(ctx, p, api.SubmitRunInput{SessionID: uuid.NewString(), AgentID: "test", AgentVersion: "1"})
	if err != nil {
		b.t.Fatal(err)
	}
	run, ok, err := b.svc.ClaimRun(ctx, p, api.ClaimInput{WorkerID: "w", LeaseSeconds: 60, RunID: run.ID})
	if err != nil || !ok {
		b.t.Fatalf("claim: %v %v", ok, err)
	}
	res, err := b.svc.Propose(ctx, p, run.ID, api.Lease{WorkerID: "w", FencingToken: run.FencingToken}, engine.ActionRequest{
		ActionID: uuid.NewString(), Kind: engine.ActionToolCall, Name: name, Summary: summary,
		StepNumber: 1, Arguments: args, OriginTrust: engine.TrustUser,
	})
	if err != nil || res.ApprovalID == "" {
		b.t.Fatalf("park: %+v %v", res, err)
	}
	a, err := b.svc.GetApproval(ctx, p, res.ApprovalID)
	if err != nil {
		b.t.Fatal(err)
	}
	return a
}

// signedIn is a browser signed in as name.
func (b *bundle) signedIn(name string) *http.Client {
	b.t.Helper()
	hc := b.browser()
	if r := b.login(hc, name, testPassword); r.Status != http.StatusSeeOther {
		b.t.Fatalf("sign in as %s: %d %.300s", name, r.Status, r.Body)
	}
	return hc
}

// sessionCookie is the console cookie hc holds.
func (b *bundle) sessionCookie(hc *http.Client) *http.Cookie {
	b.t.Helper()
	u, _ := url.Parse(b.base)
	for _, c := range hc.Jar.Cookies(u) {
		if c.Name == consoleCookie {
			return c
		}
	}
	b.t.Fatal("no console cookie")
	return nil
}

// withCookie is a fresh client holding only the given console cookie.
func (b *bundle) withCookie(c *http.Cookie) *http.Client {
	b.t.Helper()
	hc := b.browser()
	u, _ := url.Parse(b.base)
	hc.Jar.SetCookies(u, []*http.Cookie{c})
	return hc
}

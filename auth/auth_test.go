package auth

import (
	"context"
	"errors"
	"hash/crc32"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"gatehouse/engine"
)

func TestHashPasswordVerifies(t *testing.T) {
	t.Parallel()
	h, err := HashPassword("correct horse")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(h, "$argon2id$v=19$m=65536,t=3,p=2$") {
		t.Fatalf("hash %q lacks the PHC prefix", h)
	}
	p, err := parsePHC(h)
	if err != nil {
		t.Fatal(err)
	}
	if !p.verify("correct horse") || p.verify("correct horsf") {
		t.Fatal("verify accepted the wrong password or refused the right one")
	}
}

func TestNewTokenHasPrefixChecksumAndDigest(t *testing.T) {
	t.Parallel()
	format := regexp.MustCompile(`^gatehouse_[A-Za-z0-9]{46}$`)
	seen := map[string]bool{}
	for range 50 {
		tok, sum, err := NewToken()
		if err != nil {
			t.Fatal(err)
		}
		if !format.MatchString(tok) {
			t.Fatalf("token %q does not match %v", tok, format)
		}
		if HashToken(tok) != sum || len(sum) != 64 {
			t.Fatalf("digest %q does not match token", sum)
		}
		if tokenMalformed(tok) {
			t.Fatalf("fresh token %q fails its own checksum", tok)
		}
		if seen[tok] {
			t.Fatalf("token %q minted twice", tok)
		}
		seen[tok] = true
	}
}

// The checksum is the 6-digit base62 CRC32 (IEEE) of the 40 random
// characters; the credential rule and other tools compute it the same way.
func TestTokenChecksumIsBase62CRC32(t *testing.T) {
	t.Parallel()
	random := strings.Repeat("a", 40)
	n := crc32.ChecksumIEEE([]byte(random))
	want := ""
	for range 6 {
		want = string(base62[n%62]) + want
		n /= 62
	}
	if got := tokenChecksum(random); got != want || len(got) != 6 {
		t.Fatalf("checksum %q, want %q", got, want)
	}
	if tokenMalformed("gatehouse_" + random + want) {
		t.Fatal("a token with the right checksum is refused")
	}
}

func TestTokenMalformed(t *testing.T) {
	t.Parallel()
	tok, _, err := NewToken()
	if err != nil {
		t.Fatal(err)
	}
	body := tok[len("gatehouse_"):]
	flip := func(i int) string {
		b := []byte(tok)
		if b[i] == 'a' {
			b[i] = 'b'
		} else {
			b[i] = 'a'
		}
		return string(b)
	}
	cases := map[string]struct {
		token     string
		malformed bool
	}{
		"fresh":                   {tok, false},
		"typo in the random part": {flip(len("gatehouse_") + 3), true},
		"typo in the checksum":    {flip(len(tok) - 1), true},
		"one character short":     {tok[:len(tok)-1], true},
		"one character long":      {tok + "a", true},
		"non-base62 character":    {"gatehouse_" + body[:10] + "-" + body[11:], true},
		"prefix only":             {"gatehouse_", true},
		"old ghs_ token":          {"ghs_" + body, false},
		"no prefix at all":        {body, false},
		"empty":                   {"", false},
	}
	for name, c := range cases {
		if got := tokenMalformed(c.token); got != c.malformed {
			t.Errorf("%s: tokenMalformed(%q) = %v, want %v", name, c.token, got, c.malformed)
		}
	}
}

// A prefixed token whose checksum fails is refused before any lookup: even
// when its digest is listed, it does not authenticate. Old tokens without
// the prefix still authenticate by digest.
func TestByTokenRefusesBadChecksumBeforeLookup(t *testing.T) {
	t.Parallel()
	good, goodSum, _ := NewToken()
	typo := good[:len(good)-1] + string(base62[(strings.IndexByte(base62, good[len(good)-1])+1)%62])
	const old = "ghs_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"
	d, err := Parse([]byte("principals:\n  - id: agent\n    tenant_id: acme\n    tokens:\n" +
		"      - {name: new, sha256: \"" + goodSum + "\"}\n" +
		"      - {name: typo, sha256: \"" + HashToken(typo) + "\"}\n" +
		"      - {name: old, sha256: \"" + HashToken(old) + "\"}\n"))
	if err != nil {
		t.Fatal(err)
	}
	if p, ok := d.ByToken(good); !ok || p.ID != "agent" {
		t.Fatalf("the new-format token: %+v, %v", p, ok)
	}
	if _, ok := d.ByToken(typo); ok {
		t.Fatal("a token failing its checksum authenticated: it was looked up")
	}
	if p, ok := d.ByToken(old); !ok || p.ID != "agent" {
		t.Fatalf("the old ghs_ token: %+v, %v", p, ok)
	}
}

func writeFile(t *testing.T, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "principals.yaml")
	if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestLoadAuthenticates(t *testing.T) {
	t.Parallel()
	pw, err := HashPassword("s3cret")
	if err != nil {
		t.Fatal(err)
	}
	tokA, sumA, _ := NewToken()
	tokB, sumB, _ := NewToken()
	path := writeFile(t, `principals:
  - id: alice
    tenant_id: acme
    scopes: [approval.read, run.read]
    password_argon2id: "`+pw+`"
    tokens:
      - {name: laptop, sha256: "`+sumA+`"}
  - id: carol
    tenant_id: globex
    tokens:
      - {name: ci, sha256: "`+sumB+`"}
`)
	d, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	if p, ok := d.ByToken(tokA); !ok || p.ID != "alice" || p.TenantID != "acme" {
		t.Fatalf("ByToken(alice) = %+v, %v", p, ok)
	}
	if p, ok := d.ByToken(tokB); !ok || p.ID != "carol" {
		t.Fatalf("ByToken(carol) = %+v, %v", p, ok)
	}
	if _, ok := d.ByToken(tokA + "x"); ok {
		t.Fatal("a wrong token authenticated")
	}
	if _, ok := d.ByToken(""); ok {
		t.Fatal("the empty token authenticated")
	}
	if _, ok := d.Principal("globex", "alice"); ok {
		t.Fatal("alice found in another tenant")
	}
	if _, ok := d.Principal("acme", "alice"); !ok {
		t.Fatal("alice not found in her tenant")
	}
	if _, ok, err := d.Login(context.Background(), "alice", "s3cret"); !ok || err != nil {
		t.Fatalf("right password refused: %v", err)
	}
	for _, c := range [][2]string{{"alice", "wrong"}, {"carol", "s3cret"}, {"nobody", "s3cret"}} {
		if _, ok, err := d.Login(context.Background(), c[0], c[1]); ok || err != nil {
			t.Fatalf("Login(%q) = %v, %v", c[0], ok, err)
		}
	}
	p, _ := d.ByID("alice")
	p.Scopes[0] = "mutated"
	if again, _ := d.ByID("alice"); again.Scopes[0] != "approval.read" {
		t.Fatal("ByID returned shared slices")
	}
}

// TestMCPScopesCanBeHeld: a principal may hold grammar-valid MCP scopes, the
// only way an MCP server's tools can ever pass the scope check.
func TestMCPScopesCanBeHeld(t *testing.T) {
	t.Parallel()
	d, err := Load(writeFile(t, "principals:\n  - id: a\n    tenant_id: t\n    scopes: [run.write, mcp.files.use, mcp.files.read]\n"))
	if err != nil {
		t.Fatal(err)
	}
	p, _ := d.ByID("a")
	if missing := engine.MissingScopes([]string{"mcp.files.use", "mcp.files.read"}, p.Scopes); missing != nil {
		t.Fatalf("missing %v", missing)
	}
}

func TestLoadRefusesInvalid(t *testing.T) {
	t.Parallel()
	_, sum, _ := NewToken()
	cases := map[string]struct{ body, want string }{
		"unknown key":   {"principals:\n  - id: a\n    tenant_id: t\n    scope: [run.read]\n", "line 4"},
		"duplicate id":  {"principals:\n  - id: a\n    tenant_id: t\n  - id: a\n    tenant_id: u\n", "line 4: principal \"a\": duplicate id"},
		"unknown scope": {"principals:\n  - id: a\n    tenant_id: t\n    scopes: [run.everything]\n", "neither in the vocabulary"},
		"mcp no verb":   {"principals:\n  - id: a\n    tenant_id: t\n    scopes: [mcp.files]\n", "neither in the vocabulary"},
		"mcp bad id":    {"principals:\n  - id: a\n    tenant_id: t\n    scopes: [mcp.Files.use]\n", "neither in the vocabulary"},
		"scope twice":   {"principals:\n  - id: a\n    tenant_id: t\n    scopes: [run.read, run.read]\n", "listed twice"},
		"no tenant":     {"principals:\n  - id: a\n", "tenant_id is required"},
		"bad digest":    {"principals:\n  - id: a\n    tenant_id: t\n    tokens: [{name: x, sha256: abc}]\n", "64 hex digits"},
		"reused token":  {"principals:\n  - id: a\n    tenant_id: t\n    tokens: [{name: x, sha256: " + sum + "}]\n  - id: b\n    tenant_id: t\n    tokens: [{name: y, sha256: " + sum + "}]\n", "already listed"},
		"bad password":  {"principals:\n  - id: a\n    tenant_id: t\n    password_argon2id: plain\n", "password_argon2id"},
		"huge memory":   {"principals:\n  - id: a\n    tenant_id: t\n    password_argon2id: \"$argon2id$v=19$m=99999999,t=3,p=2$c2FsdHNhbHQ$aGFzaGhhc2hoYXNoaGFzaA\"\n", "out of range"},
		"empty":         {"", "empty file"},
		"two documents": {"principals:\n  - id: a\n    tenant_id: t\n---\nprincipals: []\n", "more than one"},
		"no principals": {"principals: []\n", "no principals"},
		"profile twice": {"principals:\n  - id: a\n    tenant_id: t\n    policy_profiles: [strict, strict]\n", "policy_profiles"},
		"empty profile": {"principals:\n  - id: a\n    tenant_id: t\n    policy_profiles: [\"\"]\n", "policy_profiles"},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			_, err := Load(writeFile(t, c.body))
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("err = %v, want it to contain %q", err, c.want)
			}
		})
	}
}

// policy_profiles reach the principal; without it a principal may name
// only the server default; the dev principal may name any profile.
func TestLoadCarriesPolicyProfiles(t *testing.T) {
	t.Parallel()
	d, err := Parse([]byte("principals:\n  - {id: a, tenant_id: t, policy_profiles: [strict, audit]}\n  - {id: b, tenant_id: t}\n"))
	if err != nil {
		t.Fatal(err)
	}
	a, _ := d.ByID("a")
	if !slices.Equal(a.PolicyProfiles, []string{"strict", "audit"}) || a.AnyPolicyProfile {
		t.Fatalf("a = %+v", a)
	}
	a.PolicyProfiles[0] = "mutated"
	if again, _ := d.ByID("a"); again.PolicyProfiles[0] != "strict" {
		t.Fatal("ByID returned a shared policy_profiles slice")
	}
	if b, _ := d.ByID("b"); len(b.PolicyProfiles) != 0 || b.AnyPolicyProfile {
		t.Fatalf("b = %+v", b)
	}
	if dev, _ := Dev().ByID(DevPrincipalID); !dev.AnyPolicyProfile {
		t.Fatal("the dev principal may not name every profile")
	}
}

func TestDevHoldsTheVocabulary(t *testing.T) {
	t.Parallel()
	p, ok := Dev().Principal("dev", DevPrincipalID)
	if !ok {
		t.Fatal("dev principal missing")
	}
	if len(p.Scopes) != 43 {
		t.Fatalf("dev holds %d scopes, want 43", len(p.Scopes))
	}
	for _, s := range p.Scopes {
		if strings.HasPrefix(s, "mcp.") {
			t.Fatalf("dev holds %q", s)
		}
	}
}

// Every slot taken (as by in-flight sign-ins): Login gives up when its
// context ends, quickly and without running argon2; a freed slot lets
// the queued ones through. Not parallel: it reads the allocation counter.
func TestLoginBoundsConcurrentVerifications(t *testing.T) {
	pw, err := HashPassword("s3cret")
	if err != nil {
		t.Fatal(err)
	}
	d, err := Parse([]byte("principals:\n  - {id: alice, tenant_id: acme, password_argon2id: \"" + pw + "\"}\n"))
	if err != nil {
		t.Fatal(err)
	}
	if cap(d.slots) != runtime.NumCPU() {
		t.Fatalf("%d slots, want one per core (%d)", cap(d.slots), runtime.NumCPU())
	}
	for range cap(d.slots) {
		d.slots <- struct{}{}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	start := time.Now()
	_, ok, err := d.Login(ctx, "alice", "s3cret")
	elapsed := time.Since(start)
	runtime.ReadMemStats(&after)
	if ok || !errors.Is(err, ErrBusy) {
		t.Fatalf("Login with every slot taken: ok=%v err=%v, want ErrBusy", ok, err)
	}
	if elapsed > time.Second {
		t.Errorf("Login waited %v past its context", elapsed)
	}
	if n := after.TotalAlloc - before.TotalAlloc; n > 1<<20 {
		t.Errorf("a refused Login allocated %d bytes: argon2 ran", n)
	}

	// Three rounds of sign-ins queue behind the slots and all complete.
	var wg sync.WaitGroup
	results := make([]bool, 3*cap(d.slots))
	for i := range results {
		wg.Go(func() {
			_, results[i], _ = d.Login(context.Background(), "alice", "s3cret")
		})
	}
	for range cap(d.slots) {
		<-d.slots
	}
	wg.Wait()
	for i, ok := range results {
		if !ok {
			t.Fatalf("queued sign-in %d refused", i)
		}
	}
}

// The example principals file keeps the agent and its approvers apart: the
// agent has a token and no approval.* scope or password, each approver has
// approval.* scopes and a password and no token. Its placeholders refuse
// the start until real hashes replace them.
func TestExamplePrincipalsSeparateAgentFromApprovers(t *testing.T) {
	t.Parallel()
	raw, err := os.ReadFile("../principals.example.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Parse(raw); err == nil {
		t.Fatal("the example loads with its placeholders in place")
	}
	pw, err := HashPassword("example")
	if err != nil {
		t.Fatal(err)
	}
	_, sum, _ := NewToken()
	filled := strings.ReplaceAll(string(raw), "$argon2id$v=19$m=65536,t=3,p=2$REPLACE_WITH_SALT$REPLACE_WITH_HASH", pw)
	filled = strings.ReplaceAll(filled, "REPLACE_WITH_SHA256_FROM_NEW_TOKEN", sum)
	d, err := Parse([]byte(filled))
	if err != nil {
		t.Fatal(err)
	}
	hasToken := map[string]bool{}
	for _, te := range d.tokens {
		hasToken[te.principalID] = true
	}
	var agents, approvers int
	for _, p := range d.Principals() {
		approves := slices.ContainsFunc(p.Scopes, func(s string) bool { return strings.HasPrefix(s, "approval.") })
		_, hasPassword := d.pw[p.ID]
		switch {
		case hasToken[p.ID]:
			agents++
			if approves || hasPassword || !slices.Contains(p.Scopes, "run.write") {
				t.Errorf("agent %q: scopes %v, password %v; want run.write, no approval.*, no password", p.ID, p.Scopes, hasPassword)
			}
		case approves:
			approvers++
			if !hasPassword || !slices.Contains(p.Scopes, "approval.resolve") {
				t.Errorf("approver %q: scopes %v, password %v; want approval.resolve and a password", p.ID, p.Scopes, hasPassword)
			}
		default:
			t.Errorf("principal %q is neither an agent nor an approver", p.ID)
		}
	}
	if agents == 0 || approvers == 0 {
		t.Fatalf("%d agents and %d approvers, want both", agents, approvers)
	}
}

// The oidc section and the principals' mappings are validated at start;
// an identity maps by subject, then verified email, then groups, and
// groups leading to two principals map to none.
func TestOIDCSectionAndMapping(t *testing.T) {
	t.Parallel()
	const head = "oidc:\n  issuer: https://idp.example.com/realms/acme\n  client_id: gatehouse\n"
	bad := map[string]struct{ body, want string }{
		"http issuer":     {"oidc:\n  issuer: http://idp.example.com\n  client_id: g\nprincipals:\n  - {id: a, tenant_id: t, oidc: {subject: s}}\n", "must be https"},
		"no client":       {"oidc:\n  issuer: https://idp.example.com\nprincipals:\n  - {id: a, tenant_id: t, oidc: {subject: s}}\n", "client_id is required"},
		"bad secret env":  {head + "  client_secret_env: \"1 x\"\nprincipals:\n  - {id: a, tenant_id: t, oidc: {subject: s}}\n", "client_secret_env"},
		"openid scope":    {head + "  scopes: [openid]\nprincipals:\n  - {id: a, tenant_id: t, oidc: {subject: s}}\n", "openid"},
		"unknown key":     {head + "  tenant: x\nprincipals:\n  - {id: a, tenant_id: t, oidc: {subject: s}}\n", "tenant"},
		"no section":      {"principals:\n  - {id: a, tenant_id: t, oidc: {subject: s}}\n", "no oidc section"},
		"nobody mapped":   {head + "principals:\n  - {id: a, tenant_id: t}\n", "no principal maps"},
		"empty mapping":   {head + "principals:\n  - {id: a, tenant_id: t, oidc: {}}\n", "name a subject"},
		"subject twice":   {head + "principals:\n  - {id: a, tenant_id: t, oidc: {subject: s}}\n  - {id: b, tenant_id: t, oidc: {subject: s}}\n", "already maps"},
		"email twice":     {head + "principals:\n  - {id: a, tenant_id: t, oidc: {email: A@x.io}}\n  - {id: b, tenant_id: t, oidc: {email: a@X.io}}\n", "already maps"},
		"group twice":     {head + "principals:\n  - {id: a, tenant_id: t, oidc: {groups: [g]}}\n  - {id: b, tenant_id: t, oidc: {groups: [g]}}\n", "already maps"},
		"not an email":    {head + "principals:\n  - {id: a, tenant_id: t, oidc: {email: nobody}}\n", "not an address"},
		"redirect scheme": {head + "  redirect_url: ftp://x/cb\nprincipals:\n  - {id: a, tenant_id: t, oidc: {subject: s}}\n", "redirect_url"},
	}
	for name, c := range bad {
		if _, err := Parse([]byte(c.body)); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: err = %v, want it to contain %q", name, err, c.want)
		}
	}

	d, err := Parse([]byte(head + "  password_login: false\nprincipals:\n" +
		"  - {id: alice, tenant_id: acme, oidc: {subject: s-alice, email: Alice@Acme.example}}\n" +
		"  - {id: ops, tenant_id: acme, oidc: {groups: [ops]}}\n" +
		"  - {id: sec, tenant_id: acme, oidc: {groups: [security]}}\n"))
	if err != nil {
		t.Fatal(err)
	}
	if o, ok := d.OIDC(); !ok || d.PasswordLogin() || o.GroupsClaim != "groups" || strings.Join(o.Scopes, " ") != "email profile" {
		t.Fatalf("settings %+v, password login %v: want defaults and passwords off", o, d.PasswordLogin())
	}
	cases := []struct {
		id   Identity
		want string
		err  error
	}{
		{Identity{Subject: "s-alice", Groups: []string{"ops"}}, "alice", nil},
		{Identity{Subject: "new", Email: "alice@acme.example", EmailVerified: true}, "alice", nil},
		{Identity{Subject: "new", Email: "alice@acme.example"}, "", ErrNoPrincipal},
		{Identity{Subject: "new", Groups: []string{"staff", "ops"}}, "ops", nil},
		{Identity{Subject: "new", Groups: []string{"ops", "security"}}, "", ErrAmbiguous},
		{Identity{Subject: "new"}, "", ErrNoPrincipal},
	}
	for _, c := range cases {
		p, err := d.OIDCPrincipal(c.id)
		if p.ID != c.want || !errors.Is(err, c.err) {
			t.Errorf("%+v: %q %v, want %q %v", c.id, p.ID, err, c.want, c.err)
		}
	}
	if dev := Dev(); !dev.PasswordLogin() {
		t.Error("a directory without an oidc section turned passwords off")
	}
}

func TestWithScopesAddsValidScopesToACopy(t *testing.T) {
	d := Dev()
	grown, err := d.WithScopes(DevPrincipalID, []string{"mcp.demo.use", "mcp.demo.use", "mcp.demo.write"})
	if err != nil {
		t.Fatal(err)
	}
	p, _ := grown.ByID(DevPrincipalID)
	orig, _ := d.ByID(DevPrincipalID)
	if len(p.Scopes) != len(orig.Scopes)+2 || !slices.Contains(p.Scopes, "mcp.demo.write") {
		t.Fatalf("scopes: %d (was %d)", len(p.Scopes), len(orig.Scopes))
	}
	if slices.Contains(orig.Scopes, "mcp.demo.use") {
		t.Fatal("the original directory changed")
	}
	if _, err := d.WithScopes(DevPrincipalID, []string{"mcp"}); err == nil {
		t.Fatal("an invalid scope was granted")
	}
	if _, err := d.WithScopes("nobody", []string{"mcp.demo.use"}); err == nil {
		t.Fatal("an unknown principal was granted")
	}
}

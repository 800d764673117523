// Package auth holds the principals Gatehouse knows: bearer tokens for
// agents (only SHA-256 digests are stored) and argon2id password hashes for
// the console, read from principals.yaml at start.
package auth

import (
	"bytes"
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"runtime"
	"slices"

	"gopkg.in/yaml.v3"

	"gatehouse/engine"
)

// Directory is an immutable set of principals. It is safe for concurrent
// use; accessors return copies.
type Directory struct {
	byID   map[string]engine.Principal
	pw     map[string]phc // principal id -> password hash; absent: no console login
	tokens []tokenEntry
	// oidc is the single sign-on section (nil: none); oidcIndex maps
	// identities to principal ids.
	oidc      *OIDC
	oidcIndex oidcIndex
	// slots bounds concurrent password verifications. Each one allocates
	// the hash's memory (64 MiB for ours) and keeps a core busy, so parallel
	// sign-ins beyond the cores only queue, and unbounded they exhaust memory.
	slots chan struct{}
}

// ErrBusy is Login's answer when no verification slot came free before
// its context ended.
var ErrBusy = errors.New("auth: every password verification slot is busy")

func newDirectory() *Directory {
	return &Directory{
		byID:      map[string]engine.Principal{},
		pw:        map[string]phc{},
		oidcIndex: newOIDCIndex(),
		slots:     make(chan struct{}, runtime.NumCPU()),
	}
}

type tokenEntry struct {
	sum         [sha256.Size]byte
	principalID string
}

// dummyPHC is verified when a login names an unknown principal or one without
// a password, so such attempts cost the same argon2 work as a wrong password.
var dummyPHC = phc{
	memory:  argonMemoryKiB,
	time:    argonTime,
	threads: argonThreads,
	salt:    make([]byte, argonSaltLen),
	key:     make([]byte, argonKeyLen),
}

// File layout of principals.yaml.
type fileDoc struct {
	OIDC       *fileOIDC       `yaml:"oidc"`
	Principals []filePrincipal `yaml:"principals"`
}

type filePrincipal struct {
	ID          string   `yaml:"id"`
	TenantID    string   `yaml:"tenant_id"`
	DisplayName string   `yaml:"display_name"`
	Roles       []string `yaml:"roles"`
	Scopes      []string `yaml:"scopes"`
	// PolicyProfiles are the profiles besides the server default this
	// principal's runs may name.
	PolicyProfiles []string    `yaml:"policy_profiles"`
	Password       string      `yaml:"password_argon2id"`
	Tokens         []fileToken `yaml:"tokens"`
	// OIDC maps single sign-on identities to this principal.
	OIDC *filePrincipalOIDC `yaml:"oidc"`
}

type fileToken struct {
	Name   string `yaml:"name"`
	SHA256 string `yaml:"sha256"`
}

// Load reads and validates a principals file: strict YAML (unknown keys are
// errors), unique principal ids, scopes from the vocabulary or mcp.{server_id}.{verb}, well-formed
// password hashes and token digests, no token digest used twice. Errors
// name the file and line.
func Load(path string) (*Directory, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("auth: reading principals: %w", err)
	}
	d, err := Parse(data)
	if err != nil {
		return nil, fmt.Errorf("auth: %s: %w", path, err)
	}
	return d, nil
}

// Parse validates principals.yaml content; see Load.
func Parse(data []byte) (*Directory, error) {
	var doc fileDoc
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, errors.New("empty file: expected a principals: list")
		}
		return nil, err
	}
	var extra yaml.Node
	if err := dec.Decode(&extra); !errors.Is(err, io.EOF) {
		return nil, errors.New("more than one YAML document")
	}
	// A second, untyped pass only to learn each entry's line for messages.
	var root yaml.Node
	if err := yaml.Unmarshal(data, &root); err != nil {
		return nil, err
	}
	lines := principalLines(&root)
	line := func(i int) int {
		if i < len(lines) {
			return lines[i]
		}
		return 0
	}

	d := newDirectory()
	var err error
	if d.oidc, err = parseOIDC(doc.OIDC); err != nil {
		return nil, err
	}
	seenToken := map[[sha256.Size]byte]string{}
	for i, fp := range doc.Principals {
		if err := d.add(fp, seenToken); err != nil {
			return nil, fmt.Errorf("line %d: principal %q: %w", line(i), fp.ID, err)
		}
	}
	if len(d.byID) == 0 {
		return nil, errors.New("no principals")
	}
	switch {
	case d.oidc == nil && !d.oidcIndex.empty():
		return nil, errors.New("principals map oidc identities but the file has no oidc section")
	case d.oidc != nil && d.oidcIndex.empty():
		return nil, errors.New("the oidc section is set but no principal maps an oidc subject, email or group")
	}
	return d, nil
}

func (d *Directory) add(fp filePrincipal, seenToken map[[sha256.Size]byte]string) error {
	switch {
	case fp.ID == "":
		return errors.New("id is required")
	case fp.TenantID == "":
		return errors.New("tenant_id is required")
	}
	if _, dup := d.byID[fp.ID]; dup {
		return errors.New("duplicate id (ids are unique across tenants)")
	}
	for i, s := range fp.Scopes {
		if err := engine.ValidPrincipalScope(s); err != nil {
			return err
		}
		if slices.Contains(fp.Scopes[:i], s) {
			return fmt.Errorf("scope %q listed twice", s)
		}
	}
	for i, name := range fp.PolicyProfiles {
		if name == "" || slices.Contains(fp.PolicyProfiles[:i], name) {
			return fmt.Errorf("policy_profiles: %q is empty or listed twice", name)
		}
	}
	if fp.Password != "" {
		p, err := parsePHC(fp.Password)
		if err != nil {
			return fmt.Errorf("password_argon2id: %w", err)
		}
		d.pw[fp.ID] = p
	}
	if err := d.oidcIndex.add(fp.ID, fp.OIDC); err != nil {
		return err
	}
	for _, t := range fp.Tokens {
		raw, err := hex.DecodeString(t.SHA256)
		if err != nil || len(raw) != sha256.Size {
			return fmt.Errorf("token %q: sha256 must be 64 hex digits", t.Name)
		}
		sum := [sha256.Size]byte(raw)
		if other, dup := seenToken[sum]; dup {
			return fmt.Errorf("token %q: the same token is already listed for %q", t.Name, other)
		}
		seenToken[sum] = fp.ID
		d.tokens = append(d.tokens, tokenEntry{sum: sum, principalID: fp.ID})
	}
	d.byID[fp.ID] = engine.Principal{
		ID:             fp.ID,
		TenantID:       fp.TenantID,
		DisplayName:    fp.DisplayName,
		Roles:          slices.Clone(fp.Roles),
		Scopes:         slices.Clone(fp.Scopes),
		PolicyProfiles: slices.Clone(fp.PolicyProfiles),
	}
	return nil
}

// principalLines returns the line of each item of the top-level principals
// sequence, in order.
func principalLines(root *yaml.Node) []int {
	if root.Kind != yaml.DocumentNode || len(root.Content) == 0 {
		return nil
	}
	m := root.Content[0]
	if m.Kind != yaml.MappingNode {
		return nil
	}
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value != "principals" || m.Content[i+1].Kind != yaml.SequenceNode {
			continue
		}
		var lines []int
		for _, item := range m.Content[i+1].Content {
			lines = append(lines, item.Line)
		}
		return lines
	}
	return nil
}

// DevPrincipalID is the one principal of AUTH_MODE=dev, in tenant "dev".
const DevPrincipalID = "dev"

// Dev returns the AUTH_MODE=dev directory: principal dev in tenant dev with
// every scope of the vocabulary and no mcp.* scope (those exist only once a
// server is configured); its runs may name any loaded policy profile. It
// has no password and no token; the console logs
// it in automatically and `serve --demo` mints a token with WithToken.
func Dev() *Directory {
	d := newDirectory()
	d.byID[DevPrincipalID] = engine.Principal{
		ID:               DevPrincipalID,
		TenantID:         "dev",
		DisplayName:      "Developer",
		Scopes:           engine.ScopeVocabulary(),
		AnyPolicyProfile: true,
	}
	return d
}

// WithToken returns a copy of d in which the token's digest also
// authenticates principalID. It is for tokens minted in memory at start
// (`serve --demo`); the file remains the source of every other token.
func (d *Directory) WithToken(principalID, token string) (*Directory, error) {
	if _, ok := d.byID[principalID]; !ok {
		return nil, fmt.Errorf("auth: unknown principal %q", principalID)
	}
	cp := &Directory{byID: d.byID, pw: d.pw, tokens: slices.Clone(d.tokens), oidc: d.oidc, oidcIndex: d.oidcIndex, slots: d.slots}
	cp.tokens = append(cp.tokens, tokenEntry{sum: sha256.Sum256([]byte(token)), principalID: principalID})
	return cp, nil
}

// WithScopes returns a copy of d in which principalID also holds scopes,
// each valid for a principal. It is for the grants an operator states in a
// file read at start beside the directory (the MCP gateway's
// dev_principal_scopes); it never removes a scope.
func (d *Directory) WithScopes(principalID string, scopes []string) (*Directory, error) {
	p, ok := d.byID[principalID]
	if !ok {
		return nil, fmt.Errorf("auth: unknown principal %q", principalID)
	}
	p.Scopes = slices.Clone(p.Scopes)
	for _, s := range scopes {
		if err := engine.ValidPrincipalScope(s); err != nil {
			return nil, fmt.Errorf("auth: principal %q: %w", principalID, err)
		}
		if !slices.Contains(p.Scopes, s) {
			p.Scopes = append(p.Scopes, s)
		}
	}
	cp := &Directory{byID: maps.Clone(d.byID), pw: d.pw, tokens: d.tokens, slots: d.slots}
	cp.byID[principalID] = p
	return cp, nil
}

// ByToken authenticates a bearer token. A token in our format whose
// checksum fails is refused before any lookup (the checksum is public, so
// this tells an attacker nothing). Otherwise its digest is compared in
// constant time against every stored digest, with no early exit, so timing
// does not tell which (or whether any) entry matched.
func (d *Directory) ByToken(token string) (engine.Principal, bool) {
	if tokenMalformed(token) {
		return engine.Principal{}, false
	}
	sum := sha256.Sum256([]byte(token))
	match := -1
	for i := range d.tokens {
		eq := subtle.ConstantTimeCompare(sum[:], d.tokens[i].sum[:])
		match = subtle.ConstantTimeSelect(eq, i, match)
	}
	if match < 0 || token == "" {
		return engine.Principal{}, false
	}
	return d.ByID(d.tokens[match].principalID)
}

// ByID returns a principal by id.
func (d *Directory) ByID(id string) (engine.Principal, bool) {
	p, ok := d.byID[id]
	if !ok {
		return engine.Principal{}, false
	}
	p.Roles = slices.Clone(p.Roles)
	p.Scopes = slices.Clone(p.Scopes)
	p.PolicyProfiles = slices.Clone(p.PolicyProfiles)
	return p, true
}

// Principal returns the principal id of tenantID (service.PrincipalDirectory);
// a principal of another tenant is not found.
func (d *Directory) Principal(tenantID, id string) (engine.Principal, bool) {
	p, ok := d.ByID(id)
	if !ok || p.TenantID != tenantID {
		return engine.Principal{}, false
	}
	return p, true
}

// Login verifies a console password. Unknown ids and principals without a
// password cost one argon2 verification too, so response time does not
// reveal which ids exist. At most one verification per core runs at a
// time; Login waits for a slot until ctx ends and then returns ErrBusy
// without verifying anything.
func (d *Directory) Login(ctx context.Context, id, password string) (engine.Principal, bool, error) {
	select {
	case d.slots <- struct{}{}:
	case <-ctx.Done():
		return engine.Principal{}, false, ErrBusy
	}
	defer func() { <-d.slots }()
	h, ok := d.pw[id]
	if !ok {
		dummyPHC.verify(password)
		return engine.Principal{}, false, nil
	}
	if !h.verify(password) {
		return engine.Principal{}, false, nil
	}
	p, ok := d.ByID(id)
	return p, ok, nil
}

// Principals lists every principal in id order.
func (d *Directory) Principals() []engine.Principal {
	ids := make([]string, 0, len(d.byID))
	for id := range d.byID {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	out := make([]engine.Principal, 0, len(ids))
	for _, id := range ids {
		p, _ := d.ByID(id)
		out = append(out, p)
	}
	return out
}

// HasPassword reports whether the principal has a console password (and
// can re-enter it for a step-up).
func (d *Directory) HasPassword(id string) bool {
	_, ok := d.pw[id]
	return ok
}

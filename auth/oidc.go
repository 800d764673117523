package auth

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"slices"
	"strings"

	"gatehouse/engine"
)

// OIDC is the principals file's single sign-on section: which OpenID
// Connect provider signs people in and how the console reaches it. Who may
// sign in is decided per principal (PrincipalOIDC), never by the provider
// alone: a valid ID token of a person the file does not map is refused.
type OIDC struct {
	// Issuer is the provider's issuer URL; discovery reads
	// Issuer/.well-known/openid-configuration and the ID token's iss must
	// equal it.
	Issuer   string
	ClientID string
	// ClientSecretEnv names the environment variable holding the client
	// secret (never the file: it is shared more widely than the server's
	// environment); "" for a public client, which PKCE protects.
	ClientSecretEnv string
	// RedirectURL is the callback registered at the provider; "" for
	// CONSOLE_BASE_URL + /login/oidc/callback.
	RedirectURL string
	// Scopes are requested besides openid; default email and profile.
	Scopes []string
	// GroupsClaim names the ID-token claim holding the groups; default
	// "groups".
	GroupsClaim string
	// PasswordLogin keeps the password form available beside single
	// sign-on; false turns it off (and password re-entry for step-up).
	PasswordLogin bool
	// ButtonLabel is the sign-in button's text.
	ButtonLabel string
}

// File layout of the oidc section.
type fileOIDC struct {
	Issuer          string   `yaml:"issuer"`
	ClientID        string   `yaml:"client_id"`
	ClientSecretEnv string   `yaml:"client_secret_env"`
	RedirectURL     string   `yaml:"redirect_url"`
	Scopes          []string `yaml:"scopes"`
	GroupsClaim     string   `yaml:"groups_claim"`
	PasswordLogin   *bool    `yaml:"password_login"`
	ButtonLabel     string   `yaml:"button_label"`
}

// PrincipalOIDC maps identities at the provider to a principal: its
// subject (the provider's stable id for one person), a verified email, or
// membership in a group (everyone in it acts as this principal).
type filePrincipalOIDC struct {
	Subject string   `yaml:"subject"`
	Email   string   `yaml:"email"`
	Groups  []string `yaml:"groups"`
}

// oidcIndex finds the principal of a set of claims.
type oidcIndex struct {
	bySubject map[string]string
	byEmail   map[string]string
	byGroup   map[string]string
}

func newOIDCIndex() oidcIndex {
	return oidcIndex{bySubject: map[string]string{}, byEmail: map[string]string{}, byGroup: map[string]string{}}
}

// parseOIDC validates the oidc section.
func parseOIDC(f *fileOIDC) (*OIDC, error) {
	if f == nil {
		return nil, nil
	}
	o := &OIDC{
		Issuer: f.Issuer, ClientID: f.ClientID, ClientSecretEnv: f.ClientSecretEnv, RedirectURL: f.RedirectURL,
		Scopes: slices.Clone(f.Scopes), GroupsClaim: f.GroupsClaim, PasswordLogin: true, ButtonLabel: f.ButtonLabel,
	}
	if f.PasswordLogin != nil {
		o.PasswordLogin = *f.PasswordLogin
	}
	if o.Scopes == nil {
		o.Scopes = []string{"email", "profile"}
	}
	if o.GroupsClaim == "" {
		o.GroupsClaim = "groups"
	}
	if o.ButtonLabel == "" {
		o.ButtonLabel = "Sign in with single sign-on"
	}
	if err := checkProviderURL("issuer", o.Issuer, true); err != nil {
		return nil, err
	}
	if o.RedirectURL != "" {
		if err := checkProviderURL("redirect_url", o.RedirectURL, false); err != nil {
			return nil, err
		}
	}
	switch {
	case o.ClientID == "":
		return nil, errors.New("oidc: client_id is required")
	case o.ClientSecretEnv != "" && !validEnvName(o.ClientSecretEnv):
		return nil, fmt.Errorf("oidc: client_secret_env %q is not an environment variable name", o.ClientSecretEnv)
	}
	for i, s := range o.Scopes {
		if s == "" || s == "openid" || strings.ContainsAny(s, " \t\r\n") || slices.Contains(o.Scopes[:i], s) {
			return nil, fmt.Errorf("oidc: scope %q is empty, openid (always requested), holds a space or is listed twice", s)
		}
	}
	return o, nil
}

// checkProviderURL accepts an absolute https URL, or http on a loopback
// host (a provider on the same machine, as in tests); the issuer also
// takes no query or fragment (OpenID Connect Discovery §2).
func checkProviderURL(field, raw string, issuer bool) error {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" || u.User != nil {
		return fmt.Errorf("oidc: %s %q is not an absolute URL", field, raw)
	}
	if issuer && (u.RawQuery != "" || u.Fragment != "") {
		return fmt.Errorf("oidc: %s %q must have no query or fragment", field, raw)
	}
	switch {
	case u.Scheme == "https":
		return nil
	case u.Scheme == "http" && isLoopbackHost(u.Hostname()):
		return nil
	}
	return fmt.Errorf("oidc: %s %q must be https (http only on a loopback host)", field, raw)
}

func isLoopbackHost(h string) bool {
	if h == "localhost" {
		return true
	}
	ip := net.ParseIP(h)
	return ip != nil && ip.IsLoopback()
}

func validEnvName(s string) bool {
	for i, r := range s {
		if r != '_' && (r < 'A' || r > 'Z') && (r < 'a' || r > 'z') && (i == 0 || r < '0' || r > '9') {
			return false
		}
	}
	return s != ""
}

// add indexes one principal's mapping; each subject, email and group maps
// to one principal only, so a sign-in never has to choose between two.
func (x oidcIndex) add(id string, f *filePrincipalOIDC) error {
	if f == nil {
		return nil
	}
	if f.Subject == "" && f.Email == "" && len(f.Groups) == 0 {
		return errors.New("oidc: name a subject, an email or groups")
	}
	if f.Subject != "" {
		if other, dup := x.bySubject[f.Subject]; dup {
			return fmt.Errorf("oidc: subject %q already maps to %q", f.Subject, other)
		}
		x.bySubject[f.Subject] = id
	}
	if f.Email != "" {
		email := strings.ToLower(f.Email)
		if local, domain, ok := strings.Cut(email, "@"); !ok || local == "" || domain == "" {
			return fmt.Errorf("oidc: email %q is not an address", f.Email)
		}
		if other, dup := x.byEmail[email]; dup {
			return fmt.Errorf("oidc: email %q already maps to %q", f.Email, other)
		}
		x.byEmail[email] = id
	}
	for _, g := range f.Groups {
		if g == "" {
			return errors.New("oidc: a group name is empty")
		}
		if other, dup := x.byGroup[g]; dup {
			return fmt.Errorf("oidc: group %q already maps to %q", g, other)
		}
		x.byGroup[g] = id
	}
	return nil
}

func (x oidcIndex) empty() bool {
	return len(x.bySubject) == 0 && len(x.byEmail) == 0 && len(x.byGroup) == 0
}

// Identity is what a verified ID token says about the person signing in.
type Identity struct {
	Subject       string
	Email         string
	EmailVerified bool
	Groups        []string
}

// ErrNoPrincipal is OIDCPrincipal's answer for an identity the file maps
// to no principal; ErrAmbiguous for one whose groups map to several.
var (
	ErrNoPrincipal = errors.New("auth: no principal is mapped to this identity")
	ErrAmbiguous   = errors.New("auth: this identity's groups map to more than one principal")
)

// OIDC returns the single sign-on settings; ok is false when the file has
// no oidc section.
func (d *Directory) OIDC() (OIDC, bool) {
	if d.oidc == nil {
		return OIDC{}, false
	}
	o := *d.oidc
	o.Scopes = slices.Clone(o.Scopes)
	return o, true
}

// PasswordLogin reports whether the console offers the password form:
// always, unless the oidc section turns it off.
func (d *Directory) PasswordLogin() bool { return d.oidc == nil || d.oidc.PasswordLogin }

// OIDCPrincipal maps a verified identity to its principal, most specific
// first: the subject, then the email if the provider verified it, then
// the groups, which must all lead to one principal (ErrAmbiguous
// otherwise, rather than picking one by file order).
func (d *Directory) OIDCPrincipal(id Identity) (engine.Principal, error) {
	if d.oidc == nil {
		return engine.Principal{}, ErrNoPrincipal
	}
	pid, ok := d.oidcIndex.bySubject[id.Subject]
	if !ok && id.EmailVerified && id.Email != "" {
		pid, ok = d.oidcIndex.byEmail[strings.ToLower(id.Email)]
	}
	if !ok {
		for _, g := range id.Groups {
			gid, found := d.oidcIndex.byGroup[g]
			switch {
			case !found:
			case ok && gid != pid:
				return engine.Principal{}, ErrAmbiguous
			default:
				pid, ok = gid, true
			}
		}
	}
	if !ok {
		return engine.Principal{}, ErrNoPrincipal
	}
	p, _ := d.ByID(pid)
	return p, nil
}

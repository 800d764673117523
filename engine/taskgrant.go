package engine

import (
	"fmt"
	"slices"
	"strings"
	"time"

	wurl "github.com/nlnwa/whatwg-url/url"
)

// BrowserActTool is the one tool a browser task grant (ADR-0129) is
// offered for and covers.
const BrowserActTool = "browser.act"

// The seed fixes a task grant's size: thirty minutes, two hundred actions.
const (
	TaskGrantDuration = 30 * time.Minute
	TaskGrantBudget   = 200
)

// Why a browser.act in a session holding task grants was not covered by
// any of them (api task_grant_not_covered). Revoked grants are ignored.
const (
	GrantNotCoveredOrigin    = "origin"
	GrantNotCoveredPrefix    = "prefix"
	GrantNotCoveredExpired   = "expired"
	GrantNotCoveredExhausted = "exhausted"
)

// SiteScope is an origin and a path prefix: what the operator lets a task
// grant be offered for, and what a grant covers.
type SiteScope struct {
	Origin     string `json:"origin"`
	PathPrefix string `json:"path_prefix"`
}

// GrantSites is the operator's site scopes by tenant: only a browser.act
// whose target falls in one of its tenant's scopes gets a task grant offer.
// The zero value and nil offer nothing.
type GrantSites struct {
	byTenant map[string][]SiteScope
}

// NewGrantSites validates and freezes the scopes: each origin is an http or
// https origin in its serialized form (scheme://host[:port], lower case, no
// default port, nothing after the authority), each prefix a normalized
// absolute path, and no scope appears twice in a tenant.
func NewGrantSites(byTenant map[string][]SiteScope) (*GrantSites, error) {
	g := &GrantSites{byTenant: make(map[string][]SiteScope, len(byTenant))}
	for tenant, scopes := range byTenant {
		if tenant == "" {
			return nil, fmt.Errorf("site scopes: empty tenant id")
		}
		for i, sc := range scopes {
			if err := validSiteScope(sc); err != nil {
				return nil, fmt.Errorf("site scopes: tenant %q scope %d: %w", tenant, i+1, err)
			}
			if slices.Contains(scopes[:i], sc) {
				return nil, fmt.Errorf("site scopes: tenant %q scope %d repeats an earlier one", tenant, i+1)
			}
		}
		g.byTenant[tenant] = slices.Clone(scopes)
	}
	return g, nil
}

func validSiteScope(sc SiteScope) error {
	origin, path, ok := urlTarget(sc.Origin)
	if !ok || origin != sc.Origin || path != "/" || strings.HasSuffix(sc.Origin, "/") {
		return fmt.Errorf("origin %q is not a serialized http(s) origin such as https://shop.example", sc.Origin)
	}
	_, path, ok = urlTarget(sc.Origin + sc.PathPrefix)
	if !ok || !strings.HasPrefix(sc.PathPrefix, "/") || path != sc.PathPrefix {
		return fmt.Errorf("path_prefix %q is not a normalized absolute path", sc.PathPrefix)
	}
	return nil
}

// Offer is the site scope a task grant may be offered for when tenant's
// agent proposes a browser.act on rawURL: the tenant's scope with the
// origin and the longest prefix covering the URL's path.
func (g *GrantSites) Offer(tenant, rawURL string) (SiteScope, bool) {
	if g == nil {
		return SiteScope{}, false
	}
	origin, path, ok := urlTarget(rawURL)
	if !ok {
		return SiteScope{}, false
	}
	var best SiteScope
	found := false
	for _, sc := range g.byTenant[tenant] {
		if sc.Origin == origin && PathInPrefix(path, sc.PathPrefix) && (!found || len(sc.PathPrefix) > len(best.PathPrefix)) {
			best, found = sc, true
		}
	}
	return best, found
}

// Tenants lists the tenants with site scopes, for the start-up log.
func (g *GrantSites) Tenants() []string {
	if g == nil {
		return nil
	}
	out := make([]string, 0, len(g.byTenant))
	for t := range g.byTenant {
		out = append(out, t)
	}
	slices.Sort(out)
	return out
}

// BrowserTarget is the origin and path a browser.act acts on, read from its
// url argument the way a browser reads it (WHATWG: dot segments and their
// percent-encoded forms removed, default port dropped, host mapped). ok is
// false for anything else: no url, not a string, not http(s), userinfo
// in the authority (a classic way to disguise the host).
func BrowserTarget(args map[string]any) (origin, path string, ok bool) {
	raw, isString := args["url"].(string)
	if !isString {
		return "", "", false
	}
	return urlTarget(raw)
}

func urlTarget(raw string) (origin, path string, ok bool) {
	u, err := wurl.Parse(raw)
	if err != nil {
		return "", "", false
	}
	scheme := u.Scheme()
	if scheme != "https" && scheme != "http" || u.Username() != "" || u.Password() != "" || u.Host() == "" || u.OpaquePath() {
		return "", "", false
	}
	return scheme + "://" + u.Host(), u.Pathname(), true
}

// PathInPrefix reports whether path is under prefix at a segment boundary:
// "/cart" covers "/cart" and "/cart/2" but not "/cartel"; "/cart/" covers
// "/cart/2" but not "/cart".
func PathInPrefix(path, prefix string) bool {
	if !strings.HasPrefix(path, prefix) {
		return false
	}
	return len(path) == len(prefix) || strings.HasSuffix(prefix, "/") || path[len(prefix)] == '/'
}

// RequiresApprovalByClass reports whether d, a deterministic decision, asks
// for approval only because of what the action is: the tool rule or the
// side-effect row said REQUIRE_APPROVAL. A hardline block or any deny, a
// trust or revalidation escalation and an advisory escalation are other
// layers and never qualify, so nothing that is not a plain class approval
// can be satisfied without a human looking at it.
func RequiresApprovalByClass(d PolicyDecision) bool {
	return d.Decision == DecisionRequireApproval && (d.Layer == LayerMatrix || d.Layer == LayerToolRule)
}

package rules

import (
	"os"

	"gatehouse/engine"
)

// CodeSiteScope is a site scope the loader refused.
const CodeSiteScope = "sites.invalid"

// sitesDoc is CONSOLE_BROWSER_GRANT_SITES: per tenant, the origins and path
// prefixes a browser task grant may be offered for (ADR-0129). The operator
// owns this file; nothing a model proposes can add to it.
//
//	tenants:
//	  acme:
//	    - {origin: "https://shop.example", path_prefix: "/cart/"}
type sitesDoc struct {
	Tenants map[string][]siteDoc `yaml:"tenants"`
}

type siteDoc struct {
	Origin     string `yaml:"origin"`
	PathPrefix string `yaml:"path_prefix"`
}

// LoadGrantSites reads and validates the site scopes file; "" is no file,
// so no approval carries an offer. The server refuses to start on an error.
func LoadGrantSites(file string) (*engine.GrantSites, error) {
	if file == "" {
		return engine.NewGrantSites(nil)
	}
	b, err := os.ReadFile(file)
	if err != nil {
		return nil, &LoadError{File: file, Code: CodeRead, Msg: err.Error()}
	}
	return ParseGrantSites(file, b)
}

// ParseGrantSites is LoadGrantSites over bytes already read.
func ParseGrantSites(file string, b []byte) (*engine.GrantSites, error) {
	var doc sitesDoc
	if _, err := DecodeStrict(file, b, &doc); err != nil {
		return nil, err
	}
	byTenant := make(map[string][]engine.SiteScope, len(doc.Tenants))
	for tenant, sites := range doc.Tenants {
		for _, s := range sites {
			byTenant[tenant] = append(byTenant[tenant], engine.SiteScope{Origin: s.Origin, PathPrefix: s.PathPrefix})
		}
	}
	g, err := engine.NewGrantSites(byTenant)
	if err != nil {
		return nil, &LoadError{File: file, Code: CodeSiteScope, Msg: err.Error()}
	}
	return g, nil
}

package handlers

import (
	"encoding/json"
	"maps"
	"slices"
	"strings"
	"testing"

	"gatehouse/api"
	"gatehouse/auth"
	"gatehouse/internal/metrics"
	"gatehouse/rules"
	"gatehouse/service"
)

// newRouteOnlyServer builds a server whose routes can be listed, without a
// database; nothing in it may be called.
func newRouteOnlyServer(t *testing.T) *Server {
	t.Helper()
	s, err := New(Config{
		Service:   (*service.Service)(nil),
		Directory: auth.Dev(),
		Policy:    &rules.Set{},
		Metrics:   metrics.New(),
		Sessions:  (*service.ConsoleSessions)(nil),
		BaseURL:   "http://127.0.0.1:8080",
	})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestOpenAPIMatchesRoutes keeps the document and the router in step: every
// API route is documented and every documented operation is routed.
func TestOpenAPIMatchesRoutes(t *testing.T) {
	t.Parallel()
	s := newRouteOnlyServer(t)
	routed := map[string]bool{}
	for _, r := range s.Echo().Routes() {
		if !isAPIPath(r.Path) || strings.HasSuffix(r.Path, "*") || r.Path == "/v1" {
			continue // console routes, and echo's catch-alls for groups
		}
		routed[r.Method+" "+openAPIPath(r.Path)] = true
	}
	var doc struct {
		OpenAPI string                               `json:"openapi"`
		Paths   map[string]map[string]map[string]any `json:"paths"`
	}
	if err := json.Unmarshal(api.OpenAPI, &doc); err != nil {
		t.Fatalf("openapi.json: %v", err)
	}
	if !strings.HasPrefix(doc.OpenAPI, "3.") {
		t.Fatalf("openapi version %q, want 3.x", doc.OpenAPI)
	}
	documented := map[string]bool{}
	for path, ops := range doc.Paths {
		for method := range ops {
			documented[strings.ToUpper(method)+" "+path] = true
		}
	}
	if got, want := slices.Sorted(maps.Keys(routed)), slices.Sorted(maps.Keys(documented)); !slices.Equal(got, want) {
		t.Fatalf("router and openapi.json differ\nrouted:     %v\ndocumented: %v", got, want)
	}
}

// openAPIPath turns echo's :param segments into OpenAPI's {param}.
func openAPIPath(p string) string {
	segs := strings.Split(p, "/")
	for i, s := range segs {
		if strings.HasPrefix(s, ":") {
			segs[i] = "{" + s[1:] + "}"
		}
	}
	return strings.Join(segs, "/")
}

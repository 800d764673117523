package handlers

import (
	"net/http"
	"strings"
	"testing"
)

// Static files answer GET and HEAD; directories are 404, not a listing.
func TestStaticFiles(t *testing.T) {
	t.Parallel()
	b := setup(t)
	hc := b.browser()
	get := b.get(hc, "/static/console.css")
	if get.Status != http.StatusOK || !strings.HasPrefix(get.Header.Get("Content-Type"), "text/css") || get.Body == "" {
		t.Fatalf("GET console.css: %d %q", get.Status, get.Header.Get("Content-Type"))
	}
	head := b.do(hc, http.MethodHead, "/static/console.css", "", nil)
	if head.Status != http.StatusOK || head.Body != "" || head.Header.Get("Content-Length") != get.Header.Get("Content-Length") {
		t.Errorf("HEAD console.css: %d, length %q (GET %q), body %d bytes", head.Status,
			head.Header.Get("Content-Length"), get.Header.Get("Content-Length"), len(head.Body))
	}
	for _, path := range []string{"/static/", "/static/.", "/static/nope.css", "/static/../web.go", "/static/%2e%2e/web.go"} {
		r := b.get(hc, path)
		if r.Status != http.StatusNotFound {
			t.Errorf("GET %s: %d, want 404", path, r.Status)
		}
		if strings.Contains(r.Body, `href="console.css"`) {
			t.Errorf("GET %s lists the directory", path)
		}
	}
}

package handlers

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strings"

	"github.com/labstack/echo/v4"

	"gatehouse/handlers/internal/httpx"
)

// hostAllowlist is the set of Host header values the server answers.
//
// Without it a DNS rebinding page (a hostile name that resolves to this
// server's address) is same-origin with itself: the cross-origin check
// compares Origin with Host and passes, and in dev mode every visitor is
// signed in, so the page would drive the console. Refusing unknown Hosts
// closes that.
type hostAllowlist map[string]bool

// newHostAllowlist allows the host of baseURL, the listen address when it
// names a host, the operator's extra names, and in dev mode the loopback
// names with the listen port (so http://localhost:8080 works for
// http://127.0.0.1:8080).
func newHostAllowlist(baseURL, listenAddr string, extra []string, dev bool) (hostAllowlist, error) {
	u, err := url.Parse(baseURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("handlers: BaseURL %q is not an absolute http(s) URL", baseURL)
	}
	allow := hostAllowlist{}
	allow.add(u.Host)
	for _, h := range extra {
		if h = strings.TrimSpace(h); h == "" || strings.ContainsAny(h, "/ ") {
			return nil, fmt.Errorf("handlers: allowed host %q is not a host[:port]", h)
		}
		allow.add(h)
	}
	port := u.Port()
	if listenAddr != "" {
		host, p, err := net.SplitHostPort(listenAddr)
		if err != nil {
			return nil, fmt.Errorf("handlers: listen address %q: %w", listenAddr, err)
		}
		if ip := net.ParseIP(host); host != "" && (ip == nil || !ip.IsUnspecified()) {
			allow.add(listenAddr)
		}
		port = p
	}
	if dev {
		if port == "" {
			return nil, errors.New("handlers: dev mode needs a port in BaseURL or the listen address")
		}
		for _, h := range []string{"127.0.0.1", "localhost", "::1"} {
			allow.add(net.JoinHostPort(h, port))
		}
	}
	return allow, nil
}

func (a hostAllowlist) add(host string) { a[canonicalHost(host)] = true }

// canonicalHost lower-cases a Host value and drops a default port, so
// "Example.com:443" and "example.com" compare equal.
func canonicalHost(host string) string {
	host = strings.ToLower(host)
	for _, p := range []string{":80", ":443"} {
		if strings.HasSuffix(host, p) {
			return strings.TrimSuffix(host, p)
		}
	}
	return host
}

// isOperationalPath is answered for any Host: probes and scrapers address
// the process by whatever name or address reaches it, and these routes
// carry no credentials and change nothing.
func isOperationalPath(path string) bool {
	switch path {
	case "/healthz", "/readyz", "/metrics":
		return true
	}
	return false
}

// checkHost answers 421 Misdirected Request for a Host the server does not
// serve, before any session or token is looked at.
func (s *Server) checkHost(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		r := c.Request()
		if !s.hosts[canonicalHost(r.Host)] && !isOperationalPath(r.URL.Path) {
			return httpx.NewError(http.StatusMisdirectedRequest, httpx.CodeMisdirected, "This server does not answer for that host name.")
		}
		return next(c)
	}
}

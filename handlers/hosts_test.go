package handlers

import (
	"net"
	"net/http"
	"net/url"
	"strings"
	"testing"
)

// A DNS rebinding page reaches the server under its own name: the server
// answers 421 for any Host but its own, on the console and the API alike.
func TestHostAllowlistRefusesOtherNames(t *testing.T) {
	t.Parallel()
	b := setup(t)
	u, _ := url.Parse(b.base)
	_, port, _ := net.SplitHostPort(u.Host)
	hc := b.browser()
	for _, host := range []string{"evil.example", "evil.example:" + port, "localhost:" + port, "127.0.0.2:" + port} {
		for _, path := range []string{"/login", "/", "/v1/policy", "/static/console.css"} {
			r := b.get(hc, path, "Host", host)
			if r.Status != http.StatusMisdirectedRequest {
				t.Errorf("GET %s with Host %s: %d, want 421", path, host, r.Status)
			}
			if strings.HasPrefix(path, "/v1/") && !strings.Contains(r.Body, `"misdirected_request"`) {
				t.Errorf("API answer for Host %s is not the JSON error: %.200s", host, r.Body)
			}
		}
		if r := b.get(hc, "/healthz", "Host", host); r.Status != http.StatusOK {
			t.Errorf("/healthz with Host %s: %d, want 200 (probes use any name)", host, r.Status)
		}
	}
	for _, host := range []string{u.Host, strings.ToUpper(u.Host)} {
		if r := b.get(hc, "/login", "Host", host); r.Status != http.StatusOK {
			t.Errorf("GET /login with Host %s: %d, want 200", host, r.Status)
		}
	}
}

func TestHostAllowlistNames(t *testing.T) {
	t.Parallel()
	cases := []struct {
		base, listen string
		extra        []string
		dev          bool
		allowed      []string
		refused      []string
	}{
		{"https://gate.example.com", "0.0.0.0:8443", nil, false,
			[]string{"gate.example.com", "GATE.example.com:443"},
			[]string{"0.0.0.0:8443", "127.0.0.1:8443", "localhost:8443", "evil.example"}},
		{"http://127.0.0.1:8080", "127.0.0.1:8080", nil, false,
			[]string{"127.0.0.1:8080"},
			[]string{"localhost:8080", "[::1]:8080", "127.0.0.1:8081"}},
		{"http://127.0.0.1:8080", "127.0.0.1:8080", nil, true,
			[]string{"127.0.0.1:8080", "localhost:8080", "LocalHost:8080", "[::1]:8080"},
			[]string{"localhost:8081", "rebind.evil.example:8080", "localhost"}},
		{"https://gate.example.com", "10.0.0.5:8080", nil, false,
			[]string{"gate.example.com", "10.0.0.5:8080"},
			[]string{"10.0.0.5"}},
		// Agents in the cluster reach the server by its service name.
		{"https://gate.example.com", "0.0.0.0:8080", []string{"gatehouse.internal:8080", " Gatehouse-API "}, false,
			[]string{"gatehouse.internal:8080", "gatehouse-api", "gate.example.com"},
			[]string{"gatehouse.internal", "0.0.0.0:8080"}},
	}
	for _, c := range cases {
		allow, err := newHostAllowlist(c.base, c.listen, c.extra, c.dev)
		if err != nil {
			t.Fatalf("%s %s: %v", c.base, c.listen, err)
		}
		for _, h := range c.allowed {
			if !allow[canonicalHost(h)] {
				t.Errorf("%s %s dev=%v: %s refused", c.base, c.listen, c.dev, h)
			}
		}
		for _, h := range c.refused {
			if allow[canonicalHost(h)] {
				t.Errorf("%s %s dev=%v: %s allowed", c.base, c.listen, c.dev, h)
			}
		}
	}
	for _, base := range []string{"", "127.0.0.1:8080", "ftp://x"} {
		if _, err := newHostAllowlist(base, "", nil, false); err == nil {
			t.Errorf("BaseURL %q accepted", base)
		}
	}
}

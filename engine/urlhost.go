package engine

import (
	"net/netip"
	"strings"

	wurl "github.com/nlnwa/whatwg-url/url"
	"golang.org/x/text/unicode/norm"
)

// matchURLToken reads a token the way a browser reads a URL: the WHATWG URL
// parser, whose host parser maps the host with UTS #46 (fullwidth forms,
// ideographic dots, soft hyphens and other ignorables), reads IPv4 in every
// inet_aton form (hex, octal, dotless, short) and takes backslashes, missing
// slashes and userinfo as a browser does. Each scheme is read as http, the
// strictest reading of an authority. A token is read as:
//   - scheme:rest, when it starts with a scheme (http:host, http:\\host\);
//   - a host or host:port with http:// put in front (curl's reading of a
//     bare argument);
//   - a bare IPv6 address, which a resolver takes without brackets;
//
// and, when it is not ASCII, each of these again after NFKC, which also
// maps the fullwidth colon and slashes of a scheme.
func (h *compiledHardline) matchURLToken(tok string) bool {
	if h.matchURLReadings(tok) {
		return true
	}
	if !isASCII(tok) {
		if n := norm.NFKC.String(tok); n != tok {
			return h.matchURLReadings(n)
		}
	}
	return false
}

func (h *compiledHardline) matchURLReadings(tok string) bool {
	if i := strings.IndexByte(tok, ':'); i > 0 && validScheme(tok[:i]) {
		rest := tok[i+1:]
		if h.blockedURL("http:"+rest, specialScheme(tok[:i]) || startsWithSlash(rest)) {
			return true
		}
	}
	if h.blockedURL("http://"+tok, startsWithSlash(tok) || authorityQualified(tok)) {
		return true
	}
	if strings.Count(tok, ":") >= 2 {
		if a, err := netip.ParseAddr(strings.Trim(tok, "[]")); err == nil {
			return h.blockedAddr(a)
		}
	}
	return false
}

// specialScheme reports the schemes a browser always gives an authority:
// http:host is http://host.
func specialScheme(s string) bool {
	switch strings.ToLower(s) {
	case "http", "https", "ws", "wss", "ftp", "file":
		return true
	}
	return false
}

func startsWithSlash(s string) bool {
	return strings.HasPrefix(s, "/") || strings.HasPrefix(s, `\`)
}

// authorityQualified reports whether a bare token's authority carries
// userinfo or a port: user@host and host:8080 are addresses, not words.
func authorityQualified(tok string) bool {
	if i := strings.IndexAny(tok, `/\?#`); i >= 0 {
		tok = tok[:i]
	}
	if strings.Contains(tok, "@") {
		return true
	}
	i := strings.LastIndexByte(tok, ':')
	if i < 0 || i == len(tok)-1 {
		return false
	}
	for j := i + 1; j < len(tok); j++ {
		if tok[j] < '0' || tok[j] > '9' {
			return false
		}
	}
	return true
}

// blockedURL parses raw as a WHATWG URL and checks its host. A URL that does
// not parse is not fetched by a browser either.
func (h *compiledHardline) blockedURL(raw string, qualified bool) bool {
	u, err := wurl.Parse(raw)
	if err != nil {
		return false
	}
	host := u.Hostname()
	switch {
	case strings.HasPrefix(host, "["):
		a, err := netip.ParseAddr(strings.Trim(host, "[]"))
		return err == nil && h.blockedAddr(a)
	case u.IsIPv4():
		a, err := netip.ParseAddr(host)
		return err == nil && h.blockedAddr(a)
	}
	return h.blockedName(host, qualified)
}

// blockedAddr reports whether a, or an IPv4 address embedded in it, is in
// one of the rule's ranges. IPv6 carries IPv4 in several standard forms,
// each of which some stack routes to the IPv4 address: IPv4-mapped
// (::ffff:a.b.c.d), IPv4-compatible (::a.b.c.d), SIIT (::ffff:0:a.b.c.d),
// NAT64 (64:ff9b::/96, and 64:ff9b:1::/48 in both its /48 and /96
// layouts), 6to4 (2002:AABB:CCDD::/48) and Teredo (2001::/32, client
// address inverted in the last 32 bits).
func (h *compiledHardline) blockedAddr(a netip.Addr) bool {
	a = a.WithZone("")
	if h.inPrefixes(a.Unmap()) {
		return true
	}
	if !a.Is6() {
		return false
	}
	b := a.As16()
	v4 := func(i, j, k, l int) netip.Addr { return netip.AddrFrom4([4]byte{b[i], b[j], b[k], b[l]}) }
	zero := func(from, to int) bool {
		for _, c := range b[from:to] {
			if c != 0 {
				return false
			}
		}
		return true
	}
	last := v4(12, 13, 14, 15)
	switch {
	case zero(0, 12), // IPv4-compatible
		zero(0, 8) && b[8] == 0xff && b[9] == 0xff && zero(10, 12),               // SIIT
		b[0] == 0 && b[1] == 0x64 && b[2] == 0xff && b[3] == 0x9b && zero(4, 12): // NAT64 well-known
		return h.inPrefixes(last)
	case b[0] == 0 && b[1] == 0x64 && b[2] == 0xff && b[3] == 0x9b && b[4] == 0 && b[5] == 1: // NAT64 local use
		return h.inPrefixes(last) || h.inPrefixes(v4(6, 7, 9, 10))
	case b[0] == 0x20 && b[1] == 0x02: // 6to4
		return h.inPrefixes(v4(2, 3, 4, 5))
	case b[0] == 0x20 && b[1] == 0x01 && b[2] == 0 && b[3] == 0: // Teredo
		return h.inPrefixes(netip.AddrFrom4([4]byte{^b[12], ^b[13], ^b[14], ^b[15]}))
	}
	return false
}

func (h *compiledHardline) inPrefixes(a netip.Addr) bool {
	for _, p := range h.prefixes {
		if p.Contains(a) {
			return true
		}
	}
	return false
}

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= 0x80 {
			return false
		}
	}
	return true
}

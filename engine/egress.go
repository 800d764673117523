package engine

import (
	"net/netip"
	"net/url"
	"strings"
	"unicode/utf8"
)

// matchEgress reports whether s names a blocked host: the whole string, or
// any token of it, read as a URL, host:port, bracketed IPv6 or bare host.
// A string with percent escapes is read again after each of up to
// maxPercentDecodes decodings, so a URL nested in a query parameter
// (?u=http%3A%2F%2F169.254.169.254) is read as the URL it is.
func (h *compiledHardline) matchEgress(s string) bool {
	for range maxPercentDecodes + 1 {
		if h.matchEgressTokens(s) {
			return true
		}
		decoded, changed := percentDecode(s)
		if !changed {
			return false
		}
		s = decoded
	}
	return false
}

// maxPercentDecodes bounds how many layers of percent-encoding are peeled.
const maxPercentDecodes = 3

func (h *compiledHardline) matchEgressTokens(s string) bool {
	start := 0
	for i := 0; i <= len(s); i++ {
		if i < len(s) && !tokenBreak[s[i]] {
			continue
		}
		if i > start {
			if host, qualified := hostOf(s[start:i]); h.blockedHost(host, qualified) {
				return true
			}
		}
		start = i + 1
	}
	return false
}

// percentDecode decodes every valid %XX escape and leaves anything else as
// it is: an invalid escape elsewhere must not keep the rest encoded.
func percentDecode(s string) (string, bool) {
	if strings.IndexByte(s, '%') < 0 {
		return s, false
	}
	var b strings.Builder
	changed := false
	for i := 0; i < len(s); i++ {
		if s[i] == '%' && i+2 < len(s) && isHex(s[i+1]) && isHex(s[i+2]) {
			b.WriteByte(unhex(s[i+1])<<4 | unhex(s[i+2]))
			i += 2
			changed = true
			continue
		}
		b.WriteByte(s[i])
	}
	return b.String(), changed
}

func isHex(c byte) bool {
	return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F')
}

func unhex(c byte) byte {
	switch {
	case c >= 'a':
		return c - 'a' + 10
	case c >= 'A':
		return c - 'A' + 10
	}
	return c - '0'
}

// tokenBreak marks the bytes that separate host candidates in free text;
// ? and & also split a URL from the parameters of its query.
var tokenBreak = func() (t [256]bool) {
	for _, c := range []byte(" \t\r\n\"'`,;<>(){}|?&") {
		t[c] = true
	}
	return t
}()

// hostOf extracts the host of a URL, a host:port or a bare host, without
// allocating: scheme, userinfo, port, path, query and fragment are cut.
// qualified reports whether the token was unmistakably a network address
// (a scheme or // before the host, or a port after it) rather than a word.
func hostOf(tok string) (host string, qualified bool) {
	if i := strings.Index(tok, "://"); i >= 0 {
		tok, qualified = tok[i+3:], true
	} else if strings.HasPrefix(tok, "//") {
		tok, qualified = tok[2:], true
	} else if i := strings.IndexByte(tok, '='); i >= 0 {
		tok = tok[i+1:] // --url=host, key=value
	}
	for i := 0; i < len(tok); i++ {
		if c := tok[i]; c == '/' || c == '?' || c == '#' || c == '\\' {
			tok = tok[:i]
			break
		}
	}
	if i := strings.LastIndexByte(tok, '@'); i >= 0 {
		tok = tok[i+1:]
	}
	if strings.HasPrefix(tok, "[") {
		if i := strings.IndexByte(tok, ']'); i >= 0 {
			return tok[1:i], true
		}
		return tok[1:], true
	}
	if strings.Count(tok, ":") == 1 {
		i := strings.IndexByte(tok, ':')
		tok, qualified = tok[:i], qualified || isPort(tok[i+1:])
	}
	return tok, qualified
}

func isPort(s string) bool {
	if s == "" || len(s) > 5 {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// blockedHost reports whether host is blocked. A single-label name such as
// GCE's "metadata" is matched only when qualified: as a word in free text
// it names nothing.
func (h *compiledHardline) blockedHost(host string, qualified bool) bool {
	if unusualHost(host) {
		if strings.IndexByte(host, '%') >= 0 {
			// Percent-encoded host (or an IPv6 zone, which ParseAddr handles).
			if dec, err := url.PathUnescape(host); err == nil {
				host = dec
			}
		}
		// Ideographic and full-width dots are dots to a URL parser.
		host = wideDots.Replace(host)
	}
	host = strings.TrimRight(host, ".")
	if host == "" {
		return false
	}
	for _, name := range h.hostnames {
		if strings.EqualFold(host, name) && (qualified || strings.IndexByte(name, '.') >= 0) {
			return true
		}
	}
	if len(h.prefixes) == 0 {
		return false
	}
	addr, ok := parseHostAddr(host)
	if !ok {
		return false
	}
	for _, p := range h.prefixes {
		if p.Contains(addr) {
			return true
		}
	}
	return false
}

var wideDots = strings.NewReplacer("。", ".", "．", ".", "｡", ".")

// unusualHost reports whether host has a percent escape or a non-ASCII
// byte, the only cases that need rewriting before comparison.
func unusualHost(host string) bool {
	for i := 0; i < len(host); i++ {
		if c := host[i]; c == '%' || c >= utf8.RuneSelf {
			return true
		}
	}
	return false
}

// parseHostAddr reads an IP address in any form a resolver accepts:
// standard IPv4 and IPv6 (zones dropped, IPv4-mapped unmapped) and the
// legacy inet_aton forms 2852039166, 0xA9FEA9FE, 0251.0376.0251.0376 and
// 169.254.43518.
func parseHostAddr(host string) (netip.Addr, bool) {
	if strings.IndexByte(host, ':') < 0 {
		// The legacy parser accepts every IPv4 form, dotted quads included,
		// and fails on a host name without allocating (ParseAddr's error
		// would allocate on every name).
		return parseLegacyIPv4(host)
	}
	a, err := netip.ParseAddr(host)
	if err != nil {
		return netip.Addr{}, false
	}
	return a.WithZone("").Unmap(), true
}

func parseLegacyIPv4(s string) (netip.Addr, bool) {
	var parts [4]uint64
	n := 0
	for {
		i := strings.IndexByte(s, '.')
		part := s
		if i >= 0 {
			part = s[:i]
		}
		if n == 4 {
			return netip.Addr{}, false
		}
		v, ok := parseIPv4Part(part)
		if !ok {
			return netip.Addr{}, false
		}
		parts[n] = v
		n++
		if i < 0 {
			break
		}
		s = s[i+1:]
	}
	var ip uint64
	for i := 0; i < n-1; i++ {
		if parts[i] > 0xff {
			return netip.Addr{}, false
		}
		ip |= parts[i] << (24 - 8*i)
	}
	last := parts[n-1]
	if last >= 1<<(8*(5-n)) {
		return netip.Addr{}, false
	}
	ip |= last
	return netip.AddrFrom4([4]byte{byte(ip >> 24), byte(ip >> 16), byte(ip >> 8), byte(ip)}), true
}

func parseIPv4Part(s string) (uint64, bool) {
	base := uint64(10)
	switch {
	case len(s) > 2 && (s[:2] == "0x" || s[:2] == "0X"):
		base, s = 16, s[2:]
	case len(s) > 1 && s[0] == '0':
		base, s = 8, s[1:]
	}
	if s == "" || len(s) > 12 {
		return 0, false
	}
	var v uint64
	for i := 0; i < len(s); i++ {
		c := s[i]
		var d uint64
		switch {
		case c >= '0' && c <= '9':
			d = uint64(c - '0')
		case c >= 'a' && c <= 'f':
			d = uint64(c-'a') + 10
		case c >= 'A' && c <= 'F':
			d = uint64(c-'A') + 10
		default:
			return 0, false
		}
		if d >= base {
			return 0, false
		}
		v = v*base + d
	}
	return v, true
}

package engine

import (
	"net/netip"
	"strings"
)

// The egress_host rule reads every argument string the way a fetcher reads
// a URL. Each token of free text is read twice over: by a cheap reader that
// decides the common, unambiguous shapes (https://example.com/x, a plain
// word) without allocating, and, for everything it cannot vouch for, by the
// WHATWG URL parser a browser uses (urlhost.go). The cheap reader only ever
// says "not blocked" for a token the full reading would also pass, and
// TestPlainEgressAgreesWithWHATWG / FuzzEgressHost hold it to that.
//
// What this cannot see is what a name resolves to: a host name that
// resolves to 169.254.169.254, or DNS rebinding between check and fetch,
// is for the fetcher to refuse when it connects (docs/hardline.md).

// matchEgress reports whether s names a blocked host: any token of it read
// as a URL, host:port, bracketed or bare IPv6 address or bare host. A
// string with percent escapes is read again after each of up to
// maxPercentDecodes decodings, so a URL nested in a query parameter
// (?u=http%3A%2F%2F169.254.169.254) is read as the URL it is.
func (h *compiledHardline) matchEgress(s string) bool {
	for range maxPercentDecodes + 1 {
		if h.matchEgressText(s) {
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

// matchEgressText reads s as given and, when it holds an ASCII tab, line
// feed or carriage return, again with them removed: a URL parser drops them
// anywhere, so "169.254.\t169.254" is one host, while they split tokens here.
func (h *compiledHardline) matchEgressText(s string) bool {
	if h.matchEgressTokens(s) {
		return true
	}
	return strings.ContainsAny(s, "\t\r\n") && h.matchEgressTokens(urlIgnored.Replace(s))
}

var urlIgnored = strings.NewReplacer("\t", "", "\r", "", "\n", "")

func (h *compiledHardline) matchEgressTokens(s string) bool {
	start := 0
	for i := 0; i <= len(s); i++ {
		if i < len(s) && !tokenBreak[s[i]] {
			continue
		}
		if i > start && h.matchEgressToken(s[start:i]) {
			return true
		}
		start = i + 1
	}
	return false
}

func (h *compiledHardline) matchEgressToken(tok string) bool {
	if blocked, decided := h.plainEgress(tok); decided {
		return blocked
	}
	return h.matchURLToken(tok)
}

// plainEgress decides the tokens the allocation-free readers vouch for.
func (h *compiledHardline) plainEgress(tok string) (blocked, decided bool) {
	if addr, ok := plainIPv6URL(tok); ok {
		return h.blockedAddr(addr), true
	}
	host, qualified, ok := plainHost(tok)
	if !ok {
		return false, false
	}
	addr, isNumber, sure := plainIPv4(host)
	switch {
	case !sure:
		return false, false
	case isNumber:
		return addr.IsValid() && h.inPrefixes(addr), true
	}
	return h.blockedName(host, qualified), true
}

// plainIPv6URL reads scheme://[address] followed by nothing, a port, a
// path, a query or a fragment, when the token is printable ASCII with no
// '%', '\\' or '@' and the address is standard IPv6 text without a zone:
// for those, netip reads the same 128 bits as the WHATWG IPv6 parser, and
// without allocating. Anything else goes to the parser.
func plainIPv6URL(tok string) (netip.Addr, bool) {
	i := strings.Index(tok, "://[")
	if i < 0 || !validScheme(tok[:i]) {
		return netip.Addr{}, false
	}
	for j := 0; j < len(tok); j++ {
		if c := tok[j]; c <= ' ' || c >= 0x7f || c == '%' || c == '\\' || c == '@' {
			return netip.Addr{}, false
		}
	}
	rest := tok[i+4:]
	end := strings.IndexByte(rest, ']')
	if end < 0 {
		return netip.Addr{}, false
	}
	switch after := rest[end+1:]; {
	case after == "", after[0] == '/', after[0] == '?', after[0] == '#':
	case after[0] == ':':
		port := after[1:]
		if k := strings.IndexAny(port, "/?#"); k >= 0 {
			port = port[:k]
		}
		if !isDigits(port) && port != "" {
			return netip.Addr{}, false
		}
	default:
		return netip.Addr{}, false
	}
	addr, err := netip.ParseAddr(rest[:end])
	if err != nil || !addr.Is6() || addr.Zone() != "" {
		return netip.Addr{}, false
	}
	return addr, true
}

// tokenBreak marks the bytes that separate host candidates in free text;
// ?, & and = also split a URL from the parameters of its query (and
// --url=host from its flag).
var tokenBreak = func() (t [256]bool) {
	for _, c := range []byte(" \t\r\n\"'`,;<>(){}|?&=") {
		t[c] = true
	}
	return t
}()

// plainHost is the allocation-free reader. It accepts only a token whose
// reading is not in doubt: printable ASCII without '%', '\', '@', '[' or
// ']'; either a valid scheme followed by "://", a leading "//", or no colon
// but a final one; an authority whose port, if any, is digits; and a host
// of letters, digits and . _ ~ ! $ * + -, which a URL parser reads as the
// same host lower-cased: a domain name, or an IPv4 address when its last
// label is a number (plainIPv4). Anything else (ok false) goes to the
// WHATWG parser.
func plainHost(tok string) (host string, qualified, ok bool) {
	for i := 0; i < len(tok); i++ {
		if c := tok[i]; c <= ' ' || c >= 0x7f || c == '%' || c == '\\' || c == '@' || c == '[' || c == ']' {
			return "", false, false
		}
	}
	rest := tok
	if i := strings.Index(tok, "://"); i >= 0 {
		if !validScheme(tok[:i]) {
			return "", false, false
		}
		rest, qualified = tok[i+3:], true
	} else if strings.HasPrefix(tok, "//") {
		rest, qualified = tok[2:], true
	} else if c := strings.IndexByte(tok, ':'); c >= 0 && c != len(tok)-1 {
		// http:host, host:port, a bare IPv6 address: a parser's business.
		return "", false, false
	}
	if strings.HasPrefix(rest, "/") {
		return "", false, false // http:///host: the parser skips every slash
	}
	if i := strings.IndexAny(rest, "/?#"); i >= 0 {
		rest = rest[:i]
	}
	if i := strings.IndexByte(rest, ':'); i >= 0 {
		port := rest[i+1:]
		for j := 0; j < len(port); j++ {
			if port[j] < '0' || port[j] > '9' {
				return "", false, false
			}
		}
		qualified = qualified || port != ""
		rest = rest[:i]
	}
	for i := 0; i < len(rest); i++ {
		if c := rest[i]; !isASCIILetter(c) && (c < '0' || c > '9') && strings.IndexByte("._~!$*+-", c) < 0 {
			return "", false, false
		}
	}
	return rest, qualified, true
}

// plainIPv4 reads host as the WHATWG host parser (github.com/nlnwa/whatwg-url)
// does once it has a lower-cased ASCII host: if the last label (after one
// trailing dot) is a number, the host must be an IPv4 address, and addr is
// it, or invalid when the parser fails on it; otherwise the host is a
// domain name. sure is false when a label has a shape this reader does not
// mirror (a minus sign), which the parser then decides.
func plainIPv4(host string) (addr netip.Addr, isNumber, sure bool) {
	labels := host
	if len(labels) > 1 && labels[len(labels)-1] == '.' {
		labels = labels[:len(labels)-1]
	}
	last := labels[strings.LastIndexByte(labels, '.')+1:]
	if _, st := ipv4Number(last); st == numUnsure {
		return netip.Addr{}, false, false
	} else if st == numInvalid || last == "" {
		return netip.Addr{}, false, true
	}
	var parts [4]uint64
	n := 0
	for part := range strings.SplitSeq(labels, ".") {
		v, st := ipv4Number(part)
		switch {
		case st == numUnsure:
			return netip.Addr{}, false, false
		case st != numOK || part == "" || n == 4:
			return netip.Addr{}, true, true // the parser fails: no host
		}
		parts[n] = v
		n++
	}
	var ip uint64
	for i := range n - 1 {
		if parts[i] > 0xff {
			return netip.Addr{}, true, true
		}
		ip |= parts[i] << (24 - 8*i)
	}
	if parts[n-1] >= 1<<(8*(5-n)) {
		return netip.Addr{}, true, true
	}
	ip |= parts[n-1]
	return netip.AddrFrom4([4]byte{byte(ip >> 24), byte(ip >> 16), byte(ip >> 8), byte(ip)}), true, true
}

const (
	numOK      = iota
	numRange   // a number too large for the parser: it fails on the host
	numInvalid // not a number
	numUnsure  // a negative number, whose reading is not mirrored here
)

// ipv4Number mirrors whatwg-url's IPv4 number parser: 0x or 0X is hex and a
// leading 0 octal (an empty rest is zero), read with strconv.ParseInt,
// which also takes a leading '+'. Values past 2^40 are numRange: every one
// of them fails the host, as ParseInt's range error does.
func ipv4Number(s string) (uint64, int) {
	base := uint64(10)
	switch {
	case len(s) >= 2 && (s[:2] == "0x" || s[:2] == "0X"):
		base, s = 16, s[2:]
	case len(s) >= 2 && s[0] == '0':
		base, s = 8, s[1:]
	}
	if s == "" {
		if base == 10 {
			return 0, numInvalid
		}
		return 0, numOK
	}
	switch s[0] {
	case '-':
		return 0, numUnsure
	case '+':
		s = s[1:]
	}
	if s == "" {
		return 0, numInvalid
	}
	var v uint64
	st := numOK
	for i := 0; i < len(s); i++ {
		d := uint64(36)
		switch c := s[i]; {
		case c >= '0' && c <= '9':
			d = uint64(c - '0')
		case c >= 'a' && c <= 'z':
			d = uint64(c-'a') + 10
		case c >= 'A' && c <= 'Z':
			d = uint64(c-'A') + 10
		}
		if d >= base {
			return 0, numInvalid
		}
		if v = v*base + d; v > 1<<40 {
			v, st = 1<<40, numRange
		}
	}
	return v, st
}

// validScheme reports whether s is a URL scheme: a letter, then letters,
// digits, '+', '-' and '.'.
func validScheme(s string) bool {
	if s == "" || !isASCIILetter(s[0]) {
		return false
	}
	for i := 1; i < len(s); i++ {
		if c := s[i]; !isASCIILetter(c) && (c < '0' || c > '9') && c != '+' && c != '-' && c != '.' {
			return false
		}
	}
	return true
}

func isASCIILetter(c byte) bool { return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' }

// blockedName reports whether host (a domain name, any case, trailing dots
// allowed) is one of the rule's names. A single-label name such as GCE's
// "metadata" is matched only when qualified, as a URL host or host:port:
// as a word in free text it names nothing.
func (h *compiledHardline) blockedName(host string, qualified bool) bool {
	host = strings.TrimRight(host, ".")
	if host == "" {
		return false
	}
	for _, name := range h.hostnames {
		if strings.EqualFold(host, name) && (qualified || strings.IndexByte(name, '.') >= 0) {
			return true
		}
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

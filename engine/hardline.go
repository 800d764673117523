package engine

import (
	"fmt"
	"net/netip"
	"net/url"
	"path"
	"regexp"
	"slices"
	"strings"
)

// Hardline rule kinds.
const (
	HardlineSideEffect       = "side_effect"
	HardlineCommandRegex     = "command_regex"
	HardlinePathPattern      = "path_pattern"
	HardlineEgressHost       = "egress_host"
	HardlineCredentialEgress = "credential_egress"
)

// HardlineMessagePrefix starts every hardline rule's message_code.
const HardlineMessagePrefix = "policy.hardline."

// compiledHardline is a hardline rule with its pattern compiled once, at
// load. Matching is a pure function of the action.
type compiledHardline struct {
	id          string
	kind        string
	messageCode string
	explanation string
	args        []string // arguments read; nil reads every string value
	re          *regexp.Regexp
	prefixes    []netip.Prefix // egress_host addresses and ranges
	hostnames   []string       // egress_host names, lower case, no trailing dot
}

func compileHardline(r HardlineRule) (*compiledHardline, error) {
	h := &compiledHardline{
		id:          r.ID,
		kind:        r.Kind,
		messageCode: r.MessageCode,
		explanation: "hardline rule " + r.ID + " (" + r.Kind + ") blocks this action",
		args:        slices.Clone(r.Arguments),
	}
	switch r.Kind {
	case HardlineSideEffect, HardlineCredentialEgress:
		if r.Pattern != "" {
			return nil, fmt.Errorf("a %s rule takes no pattern", r.Kind)
		}
	case HardlineCommandRegex, HardlinePathPattern:
		if r.Pattern == "" {
			return nil, fmt.Errorf("a %s rule needs a pattern", r.Kind)
		}
		re, err := regexp.Compile(r.Pattern)
		if err != nil {
			return nil, fmt.Errorf("pattern does not compile: %w", err)
		}
		h.re = re
		if len(h.args) == 0 {
			if r.Kind == HardlineCommandRegex {
				h.args = []string{"command"}
			} else {
				h.args = []string{"path"}
			}
		}
	case HardlineEgressHost:
		if err := h.parseHosts(r.Pattern); err != nil {
			return nil, err
		}
	default:
		return nil, fmt.Errorf("unknown kind %q", r.Kind)
	}
	return h, nil
}

// parseHosts reads an egress_host pattern: a comma-separated list of
// addresses, CIDR ranges and host names.
func (h *compiledHardline) parseHosts(pattern string) error {
	for item := range strings.SplitSeq(pattern, ",") {
		item = strings.TrimSpace(item)
		switch {
		case item == "":
			continue
		case strings.Contains(item, "/"):
			p, err := netip.ParsePrefix(item)
			if err != nil {
				return fmt.Errorf("egress range %q: %w", item, err)
			}
			h.prefixes = append(h.prefixes, p.Masked())
		default:
			if a, err := netip.ParseAddr(item); err == nil {
				h.prefixes = append(h.prefixes, netip.PrefixFrom(a, a.BitLen()))
				continue
			}
			name := strings.TrimRight(strings.ToLower(item), ".")
			if name == "" || strings.ContainsAny(name, " :@[]") {
				return fmt.Errorf("egress host %q is neither an address, a range nor a host name", item)
			}
			h.hostnames = append(h.hostnames, name)
		}
	}
	if len(h.prefixes)+len(h.hostnames) == 0 {
		return fmt.Errorf("an egress_host rule needs at least one host or range")
	}
	return nil
}

// blocks reports whether the rule fires on a (whose class the rule applies
// to; the caller has checked that).
func (h *compiledHardline) blocks(a *ProposedAction) bool {
	switch h.kind {
	case HardlineSideEffect:
		return true
	case HardlineCommandRegex:
		return h.anyString(a.Arguments, false, h.re.MatchString)
	case HardlinePathPattern:
		return h.anyString(a.Arguments, false, h.matchPath)
	case HardlineEgressHost:
		return h.anyString(a.Arguments, false, h.matchEgress)
	case HardlineCredentialEgress:
		return h.anyString(a.Arguments, true, ContainsCredential)
	}
	// An unknown kind never compiles; refusing here keeps the zero value safe.
	return true
}

// anyString applies match to the strings the rule reads: the named
// arguments, or every string value at any depth (and the keys too when
// withKeys, since a credential can hide in a key).
func (h *compiledHardline) anyString(args map[string]any, withKeys bool, match func(string) bool) bool {
	if h.args == nil {
		return anyStringIn(args, withKeys, match, 0)
	}
	for _, name := range h.args {
		if v, ok := args[name]; ok && anyStringIn(v, withKeys, match, 0) {
			return true
		}
	}
	return false
}

func anyStringIn(v any, withKeys bool, match func(string) bool, depth int) bool {
	if depth > maxDepth {
		// Deeper than any honest argument: refuse rather than skip.
		return true
	}
	switch x := v.(type) {
	case string:
		return match(x)
	case map[string]any:
		for k, e := range x {
			if (withKeys && match(k)) || anyStringIn(e, withKeys, match, depth+1) {
				return true
			}
		}
	case []any:
		for _, e := range x {
			if anyStringIn(e, withKeys, match, depth+1) {
				return true
			}
		}
	case []string:
		for _, e := range x {
			if match(e) {
				return true
			}
		}
	}
	return false
}

// matchPath tests the path as given and in its normalized form, so
// "/etc//passwd", "a/../../etc" and "\etc\passwd" cannot slip past an
// anchored pattern. Clean allocates only when it changes something.
func (h *compiledHardline) matchPath(p string) bool {
	if h.re.MatchString(p) {
		return true
	}
	norm := p
	if strings.IndexByte(norm, '\\') >= 0 {
		norm = strings.ReplaceAll(norm, `\`, "/")
	}
	norm = path.Clean(norm)
	return norm != p && h.re.MatchString(norm)
}

// matchEgress reports whether s names a blocked host: the whole string, or
// any token of it, read as a URL, host:port, bracketed IPv6 or bare host.
func (h *compiledHardline) matchEgress(s string) bool {
	for len(s) > 0 {
		i := strings.IndexAny(s, " \t\r\n\"'`,;<>(){}|")
		tok := s
		if i >= 0 {
			tok, s = s[:i], s[i+1:]
		} else {
			s = ""
		}
		if tok != "" && h.blockedHost(hostOf(tok)) {
			return true
		}
	}
	return false
}

// hostOf extracts the host of a URL, a host:port or a bare host, without
// allocating: scheme, userinfo, port, path, query and fragment are cut.
func hostOf(tok string) string {
	if i := strings.Index(tok, "://"); i >= 0 {
		tok = tok[i+3:]
	} else if strings.HasPrefix(tok, "//") {
		tok = tok[2:]
	} else if i := strings.IndexByte(tok, '='); i >= 0 {
		tok = tok[i+1:] // --url=host, key=value
	}
	if i := strings.IndexAny(tok, `/?#\`); i >= 0 {
		tok = tok[:i]
	}
	if i := strings.LastIndexByte(tok, '@'); i >= 0 {
		tok = tok[i+1:]
	}
	if strings.HasPrefix(tok, "[") {
		if i := strings.IndexByte(tok, ']'); i >= 0 {
			return tok[1:i]
		}
		return tok[1:]
	}
	if strings.Count(tok, ":") == 1 {
		tok = tok[:strings.IndexByte(tok, ':')]
	}
	return tok
}

func (h *compiledHardline) blockedHost(host string) bool {
	if strings.IndexByte(host, '%') >= 0 {
		// Percent-encoded host (or an IPv6 zone, which ParseAddr handles).
		if dec, err := url.PathUnescape(host); err == nil {
			host = dec
		}
	}
	if strings.ContainsAny(host, "。．｡") {
		// Ideographic and full-width dots are dots to a URL parser.
		host = strings.NewReplacer("。", ".", "．", ".", "｡", ".").Replace(host)
	}
	host = strings.TrimRight(host, ".")
	if host == "" {
		return false
	}
	for _, name := range h.hostnames {
		if strings.EqualFold(host, name) {
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

// parseHostAddr reads an IP address in any form a resolver accepts:
// standard IPv4 and IPv6 (zones dropped, IPv4-mapped unmapped) and the
// legacy inet_aton forms 2852039166, 0xA9FEA9FE, 0251.0376.0251.0376 and
// 169.254.43518.
func parseHostAddr(host string) (netip.Addr, bool) {
	if a, err := netip.ParseAddr(host); err == nil {
		return a.WithZone("").Unmap(), true
	}
	return parseLegacyIPv4(host)
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

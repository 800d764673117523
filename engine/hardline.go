package engine

import (
	"fmt"
	"net/netip"
	"net/url"
	"path"
	"regexp"
	"regexp/syntax"
	"slices"
	"strings"
	"unicode/utf8"
)

// Hardline rule kinds.
const (
	HardlineSideEffect       = "side_effect"
	HardlineCommandRegex     = "command_regex"
	HardlinePathPattern      = "path_pattern"
	HardlineEgressHost       = "egress_host"
	HardlineCredentialEgress = "credential_egress" //nolint:gosec // a rule kind, not a credential
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
	literals    []string       // one of these is in every match (none: no filter)
	foldLiteral bool           // literals are lower case, compared ignoring ASCII case
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
		h.literals, h.foldLiteral = requiredLiterals(r.Pattern)
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
		return h.anyCommand(a.Arguments)
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

// anyCommand applies a command rule to the arguments it reads. A command
// may be a string or an argv array: an array is also read as its string
// elements joined with spaces, so ["rm", "-rf", "/"] is "rm -rf /", and
// every string in it is read on its own too (["sh", "-c", "..."]).
func (h *compiledHardline) anyCommand(args map[string]any) bool {
	for _, name := range h.args {
		if v, ok := args[name]; ok && anyCommandIn(v, h.matchCommand, 0) {
			return true
		}
	}
	return false
}

func anyCommandIn(v any, match func(string) bool, depth int) bool {
	if depth > maxDepth {
		// Deeper than any honest argument: refuse rather than skip.
		return true
	}
	switch x := v.(type) {
	case string:
		return match(x)
	case []string:
		if match(strings.Join(x, " ")) {
			return true
		}
		return slices.ContainsFunc(x, match)
	case []any:
		if match(joinStrings(x)) {
			return true
		}
		for _, e := range x {
			if anyCommandIn(e, match, depth+1) {
				return true
			}
		}
	case map[string]any:
		for _, e := range x {
			if anyCommandIn(e, match, depth+1) {
				return true
			}
		}
	}
	return false
}

// joinStrings joins an array's string elements with spaces; other elements
// are skipped, so a number slipped into an argv cannot break the command up.
func joinStrings(a []any) string {
	var b strings.Builder
	for _, e := range a {
		if s, ok := e.(string); ok {
			if b.Len() > 0 {
				b.WriteByte(' ')
			}
			b.WriteString(s)
		}
	}
	return b.String()
}

// shellQuoting is what matchCommand strips from a command before its second
// reading: quotes and backslash escapes the shell removes anyway, so
// rm -rf "/" and rm -rf \/ read as rm -rf /.
var shellQuoting = strings.NewReplacer(`"`, "", `'`, "", `\`, "")

// matchCommand tests a command as given and, when it has quotes or
// escapes, with them removed.
func (h *compiledHardline) matchCommand(s string) bool {
	if h.matchRegex(s) {
		return true
	}
	return strings.ContainsAny(s, `"'\`) && h.matchRegex(shellQuoting.Replace(s))
}

// matchRegex runs the rule's regexp, skipping it when the string lacks the
// literal every match must contain: most arguments never reach the regexp.
func (h *compiledHardline) matchRegex(s string) bool {
	if len(h.literals) > 0 && !hinted(s, h.literals, h.foldLiteral) {
		return false
	}
	return h.re.MatchString(s)
}

// requiredLiterals finds literals one of which every match of pattern
// contains, walking concatenations, groups, mandatory repeats and
// alternations of literals, and keeping the most selective set (the longest
// shortest member). Case-folded literals come back in lower case with fold
// set; a mix of folded and exact literals, or non-ASCII folding, yields none.
func requiredLiterals(pattern string) (lits []string, fold bool) {
	re, err := syntax.Parse(pattern, syntax.Perl)
	if err != nil {
		return nil, false
	}
	type set struct {
		lits []string
		fold bool
	}
	score := func(s set) int {
		if len(s.lits) == 0 {
			return 0
		}
		m := len(s.lits[0])
		for _, l := range s.lits[1:] {
			m = min(m, len(l))
		}
		return m
	}
	var walk func(re *syntax.Regexp) set
	walk = func(re *syntax.Regexp) set {
		switch re.Op {
		case syntax.OpLiteral:
			s := string(re.Rune)
			if re.Flags&syntax.FoldCase == 0 {
				return set{lits: []string{s}}
			}
			for _, r := range re.Rune {
				if r >= utf8.RuneSelf {
					return set{}
				}
			}
			return set{lits: []string{strings.ToLower(s)}, fold: true}
		case syntax.OpCapture, syntax.OpPlus:
			return walk(re.Sub[0])
		case syntax.OpRepeat:
			if re.Min >= 1 {
				return walk(re.Sub[0])
			}
		case syntax.OpConcat:
			var best set
			for _, sub := range re.Sub {
				if s := walk(sub); score(s) > score(best) {
					best = s
				}
			}
			return best
		case syntax.OpAlternate:
			var all set
			for i, sub := range re.Sub {
				s := walk(sub)
				if score(s) == 0 || (i > 0 && s.fold != all.fold) {
					return set{}
				}
				all.lits = append(all.lits, s.lits...)
				all.fold = s.fold
			}
			return all
		}
		return set{}
	}
	best := walk(re.Simplify())
	return best.lits, best.fold
}

// containsFold reports whether s contains lower (lower-case ASCII),
// ignoring ASCII case, without allocating.
func containsFold(s, lower string) bool {
	n := len(lower)
	for i := 0; i+n <= len(s); i++ {
		j := 0
		for ; j < n; j++ {
			c := s[i+j]
			if c >= 'A' && c <= 'Z' {
				c += 'a' - 'A'
			}
			if c != lower[j] {
				break
			}
		}
		if j == n {
			return true
		}
	}
	return false
}

// matchPath tests the path as given and in its normalized form, so
// "/etc//passwd", "a/../../etc" and "\etc\passwd" cannot slip past an
// anchored pattern. Clean allocates only when it changes something.
func (h *compiledHardline) matchPath(p string) bool {
	if h.matchRegex(p) {
		return true
	}
	norm := p
	if strings.IndexByte(norm, '\\') >= 0 {
		norm = strings.ReplaceAll(norm, `\`, "/")
	}
	norm = path.Clean(norm)
	return norm != p && h.matchRegex(norm)
}

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

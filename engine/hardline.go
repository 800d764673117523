package engine

import (
	"fmt"
	"net/netip"
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
	HardlineCommand          = "command"
	HardlinePathPattern      = "path_pattern"
	HardlineEgressHost       = "egress_host"
	HardlineCredentialEgress = "credential_egress" //nolint:gosec // a rule kind, not a credential
)

// HardlineWhenNetworkCapable limits a credential_egress rule to actions
// whose target can reach the network: anything but an isolated sandbox
// with networking off.
const HardlineWhenNetworkCapable = "network_capable_target"

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
	intent      intent         // command rules
	literals    []string       // one of these is in every match (none: no filter)
	foldLiteral bool           // literals are lower case, compared ignoring ASCII case
	prefixes    []netip.Prefix // egress_host addresses and ranges
	hostnames   []string       // egress_host names, lower case, no trailing dot
	needsNet    bool           // credential_egress: only on a network-capable target
}

func compileHardline(r HardlineRule) (*compiledHardline, error) {
	h := &compiledHardline{
		id:          r.ID,
		kind:        r.Kind,
		messageCode: r.MessageCode,
		explanation: "hardline rule " + r.ID + " (" + r.Kind + ") blocks this action",
		args:        slices.Clone(r.Arguments),
	}
	if r.When != "" && (r.Kind != HardlineCredentialEgress || r.When != HardlineWhenNetworkCapable) {
		return nil, fmt.Errorf("a %s rule takes no when %q", r.Kind, r.When)
	}
	switch r.Kind {
	case HardlineSideEffect, HardlineCredentialEgress:
		if r.Pattern != "" || r.Intent != "" {
			return nil, fmt.Errorf("a %s rule takes no pattern", r.Kind)
		}
		if r.Kind == HardlineCredentialEgress && len(r.Arguments) > 0 {
			// A key split across fields is found only by reading them all.
			return nil, fmt.Errorf("a %s rule reads every argument", r.Kind)
		}
		h.needsNet = r.When == HardlineWhenNetworkCapable
	case HardlineCommand:
		in, ok := parseIntent(r.Intent)
		if !ok || r.Pattern != "" {
			return nil, fmt.Errorf("a command rule names one intent (%s, %s, %s, %s, %s) and no pattern", IntentRecursiveDeleteRoot, IntentFilesystemFormat, IntentBlockDeviceWrite, IntentForkBomb, IntentRecursiveChmodRoot)
		}
		h.intent = in
	case HardlinePathPattern:
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
			h.args = []string{"path"}
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
// to; the caller has checked that). f holds what was read of a once per
// evaluation, so several command rules parse its commands once.
func (h *compiledHardline) blocks(a *ProposedAction, f *actionFacts) bool {
	switch h.kind {
	case HardlineSideEffect:
		return true
	case HardlineCommand:
		return f.commands(a).intents&h.intent != 0
	case HardlinePathPattern:
		return h.anyPath(a, h.matchPath)
	case HardlineEgressHost:
		if h.anyString(a.Arguments, h.matchEgress) {
			return true
		}
		return slices.ContainsFunc(f.commands(a).words, h.matchEgress)
	case HardlineCredentialEgress:
		if h.needsNet && !networkCapable(a.Target) {
			return false
		}
		// Commands are also read as the shell resolves their words, so
		// quotes cannot split a key the shell puts back together.
		return credentialInArgs(a.Arguments) || credentialInStrings(f.commands(a).words)
	}
	// An unknown kind never compiles; refusing here keeps the zero value safe.
	return true
}

// anyPath applies a path rule to the arguments it reads and to every
// argument the catalog declares a path.
func (h *compiledHardline) anyPath(a *ProposedAction, match func(string) bool) bool {
	if h.anyString(a.Arguments, match) {
		return true
	}
	for _, name := range a.Roles.Paths {
		if !slices.Contains(h.args, name) {
			if v, ok := a.Arguments[name]; ok && anyStringIn(v, match, 0) {
				return true
			}
		}
	}
	return false
}

// anyString applies match to the strings the rule reads: the named
// arguments, or every string value at any depth.
func (h *compiledHardline) anyString(args map[string]any, match func(string) bool) bool {
	if h.args == nil {
		return anyStringIn(args, match, 0)
	}
	for _, name := range h.args {
		if v, ok := args[name]; ok && anyStringIn(v, match, 0) {
			return true
		}
	}
	return false
}

func anyStringIn(v any, match func(string) bool, depth int) bool {
	if depth > maxDepth {
		// Deeper than any honest argument: refuse rather than skip.
		return true
	}
	switch x := v.(type) {
	case string:
		return match(x)
	case map[string]any:
		for _, e := range x {
			if anyStringIn(e, match, depth+1) {
				return true
			}
		}
	case []any:
		for _, e := range x {
			if anyStringIn(e, match, depth+1) {
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
// "/etc//passwd", "a/../../etc", "\etc\passwd", "~/.ssh" and
// "$HOME/../../etc" cannot slip past an anchored pattern. The home
// directory reads as homeDir, an absolute path, so climbing out of it
// reaches the root. Clean allocates only when it changes something.
func (h *compiledHardline) matchPath(p string) bool {
	if h.matchRegex(p) {
		return true
	}
	norm := p
	if strings.IndexByte(norm, '\\') >= 0 {
		norm = strings.ReplaceAll(norm, `\`, "/")
	}
	norm = path.Clean(homePath(norm))
	return norm != p && h.matchRegex(norm)
}

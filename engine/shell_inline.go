package engine

import (
	"encoding/base64"
	"encoding/hex"
	"regexp"
	"strings"
	"unicode/utf8"
)

// Inline interpreter code (python -c, perl -e, node -e, ruby -e, php -r,
// awk programs) is read on a best-effort basis: recursive deletes of the
// root through the languages' own calls, and shell strings handed to
// system/subprocess/exec, which are read as shell. A general-purpose
// language can build any string at run time; the sandbox, not this reader,
// is the containment (docs/hardline.md).

// codeSource is where an interpreter takes its program from.
type codeSource int

const (
	codeNone   codeSource = iota // not an interpreter, or a script file
	codeInline                   // -c/-e/-r arguments, or awk's program
	codeStdin                    // no program argument: it reads stdin
)

// inlineCode finds the code an interpreter runs from its arguments.
func inlineCode(name string, args []value) (code value, lang string, from codeSource) {
	var flags []string
	switch {
	case strings.HasPrefix(name, "python") || strings.HasPrefix(name, "pypy"):
		lang, flags = "python", []string{"c"}
	case strings.HasPrefix(name, "perl"):
		lang, flags = "perl", []string{"e", "E"}
	case name == "node" || name == "nodejs" || name == "bun" || name == "deno":
		lang, flags = "js", []string{"e", "p", "-eval", "-print", "eval"}
	case strings.HasPrefix(name, "ruby"):
		lang, flags = "ruby", []string{"e"}
	case strings.HasPrefix(name, "php"):
		lang, flags = "php", []string{"r"}
	case name == "lua" || name == "luajit" || name == "Rscript":
		lang, flags = "lua", []string{"e"}
	case name == "awk" || name == "gawk" || name == "mawk" || name == "nawk" || name == "busybox-awk":
		return awkProgram(args)
	default:
		return value{}, "", codeNone
	}
	var parts []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a.unknown {
			return value{unknown: true}, lang, codeInline
		}
		if a.s == "eval" && name == "deno" && i+1 < len(args) {
			return args[i+1], lang, codeInline
		}
		if a.s == "-" {
			return value{}, lang, codeStdin
		}
		if !strings.HasPrefix(a.s, "-") || a.s == "--" {
			if len(parts) == 0 {
				return value{}, lang, codeNone // a script file: outside the action
			}
			break
		}
		opt := strings.TrimPrefix(a.s, "-")
		for _, f := range flags {
			// The flag's code: attached (--eval=code, -c'code'), or the next
			// argument.
			attached, matched := "", false
			if long := strings.HasPrefix(f, "-") || len(f) > 1; long {
				attached, matched = strings.CutPrefix(opt, f+"=")
				matched = matched || opt == f
			} else if j := strings.Index(opt, f); j >= 0 && !strings.HasPrefix(opt, "-") {
				// A cluster (-le, -Bc) ends in the flag.
				attached, matched = opt[j+1:], true
			}
			switch {
			case !matched:
			case attached != "":
				parts = append(parts, attached)
			case i+1 < len(args):
				i++
				if args[i].unknown {
					return value{unknown: true}, lang, codeInline
				}
				parts = append(parts, args[i].s)
			}
		}
	}
	if len(parts) == 0 {
		return value{}, lang, codeStdin
	}
	return value{s: strings.Join(parts, "\n")}, lang, codeInline
}

func awkProgram(args []value) (value, string, codeSource) {
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a.unknown:
			return value{unknown: true}, "awk", codeInline
		case a.s == "-f" || strings.HasPrefix(a.s, "--file"):
			return value{}, "", codeNone
		case a.s == "-F" || a.s == "-v":
			i++
		case a.s == "--":
			if i+1 < len(args) {
				return args[i+1], "awk", codeInline
			}
			return value{}, "", codeNone
		case strings.HasPrefix(a.s, "-") && len(a.s) > 1:
		default:
			return a, "awk", codeInline
		}
	}
	return value{}, "", codeNone
}

var (
	// rmtreeCall: the languages' recursive deletes, with a literal path.
	rmtreeCall = regexp.MustCompile(`(?:\brmtree|\brm_rf|\brm_r|\bremove_tree|\brmSync|\brmdirSync|\bremovedirs|\.rm\b|\.rmdir\b|\bRemoveAll)\s*\(?\s*`)
	// shellCall: calls that hand a string to a shell or run an argv.
	shellCall = regexp.MustCompile(`(?:\bos\.system|\bos\.popen|\bsubprocess\.[A-Za-z_]+|\bcommands\.getoutput|\bsystem|\bexecSync|\bexecFileSync|\bexecFile|\bspawnSync|\bspawn|\bexec|\beval|\bpopen|\bshell_exec|\bpassthru|\bproc_open|\bIO\.popen|\bOpen3\.[a-z0-9_]+|\bKernel\.exec|\bqx|%x)\s*[({\[]?\s*`)
	// pipeToShell: awk's print | "sh" and friends.
	pipeToShell = regexp.MustCompile(`\|\s*["'](?:/bin/)?(?:ba|da|z|k)?sh["']`)
)

// inspectCode reads inline interpreter code; see the note at the top.
func (z *shellReader) inspectCode(lang, code string) {
	if len(code) > z.budget {
		z.rep.opaque = true
		return
	}
	for _, loc := range rmtreeCall.FindAllStringIndex(code, -1) {
		if lit, _, ok := stringLiteral(code[loc[1]:]); ok {
			z.checkRootOperand(value{s: lit}, intentRootDelete)
		}
	}
	for _, loc := range shellCall.FindAllStringIndex(code, -1) {
		rest := code[loc[1]:]
		opener := code[loc[1]-1]
		if opener == '[' {
			argv, ok := literalList(rest)
			if !ok {
				z.rep.opaque = true
				continue
			}
			z.argv(argv, nil)
			continue
		}
		if strings.HasPrefix(rest, "[") {
			argv, ok := literalList(rest[1:])
			if !ok {
				z.rep.opaque = true
				continue
			}
			z.argv(argv, nil)
			continue
		}
		lit, after, ok := stringLiteral(rest)
		if !ok || !literalEnds(after) {
			// A string built at run time is handed to a shell.
			z.rep.opaque = true
			continue
		}
		z.scriptLenient(lit)
	}
	if lang != "python" {
		// Backquotes run a shell in perl, ruby and php.
		if lang == "perl" || lang == "ruby" || lang == "php" {
			for _, m := range backquoted.FindAllStringSubmatch(code, -1) {
				z.scriptLenient(m[1])
			}
		}
		if pipeToShell.MatchString(code) {
			z.rep.opaque = true
		}
	}
}

var backquoted = regexp.MustCompile("`([^`]*)`")

// literalEnds reports whether what follows a string literal ends the
// argument: no concatenation, formatting or call on the string.
func literalEnds(after string) bool {
	after = strings.TrimLeft(after, " \t\r\n")
	return after == "" || strings.IndexByte("),;]}", after[0]) >= 0
}

// literalList reads "a", 'b', ... ] as an argv; anything but literals fails.
func literalList(s string) ([]value, bool) {
	var out []value
	for {
		s = strings.TrimLeft(s, " \t\r\n")
		if strings.HasPrefix(s, "]") {
			return out, len(out) > 0
		}
		lit, after, ok := stringLiteral(s)
		if !ok {
			return nil, false
		}
		out = append(out, value{s: lit})
		s = strings.TrimLeft(after, " \t\r\n")
		s = strings.TrimPrefix(s, ",")
		if len(out) > maxAlternatives {
			return nil, false
		}
	}
}

// stringLiteral reads a quoted literal at the start of s (after a python
// r/b/u prefix). Interpolating literals (f-strings, JS templates with ${,
// perl/ruby "$var" and "#{}") are not literals.
func stringLiteral(s string) (lit, after string, ok bool) {
	s = strings.TrimLeft(s, " \t\r\n(")
	raw := false
	for len(s) > 1 && strings.IndexByte("rRbBuU", s[0]) >= 0 && strings.IndexByte(`'"`, s[1]) < 0 {
		if s[0] == 'r' || s[0] == 'R' {
			raw = true
		}
		s = s[1:]
	}
	if len(s) > 1 && strings.IndexByte("rRbBuU", s[0]) >= 0 {
		raw = raw || s[0] == 'r' || s[0] == 'R'
		s = s[1:]
	}
	if s == "" || strings.IndexByte("'\"`", s[0]) < 0 {
		return "", s, false
	}
	q := s[:1]
	if strings.HasPrefix(s, q+q+q) {
		q = q + q + q
	}
	body := s[len(q):]
	var b strings.Builder
	for i := 0; i < len(body); i++ {
		if strings.HasPrefix(body[i:], q) {
			text := b.String()
			if q[0] != '\'' && (strings.Contains(text, "${") || strings.Contains(text, "#{") || (q[0] == '"' && strings.Contains(text, "$"))) {
				return "", "", false
			}
			return text, body[i+len(q):], true
		}
		c := body[i]
		if c == '\\' && i+1 < len(body) && !raw {
			i++
			switch body[i] {
			case 'n':
				b.WriteByte('\n')
			case 't':
				b.WriteByte('\t')
			default:
				b.WriteByte(body[i])
			}
			continue
		}
		b.WriteByte(c)
	}
	return "", "", false
}

// decodeBase64Text decodes base64 in any of its alphabets, whitespace
// ignored, and returns it when it is text a shell could run.
func decodeBase64Text(s string) (string, bool) {
	s = strings.Join(strings.Fields(s), "")
	for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.RawStdEncoding, base64.URLEncoding, base64.RawURLEncoding} {
		if b, err := enc.DecodeString(s); err == nil && utf8.Valid(b) {
			return string(b), true
		}
	}
	return "", false
}

func decodeHexText(s string) (string, bool) {
	b, err := hex.DecodeString(strings.Join(strings.Fields(s), ""))
	if err != nil || !utf8.Valid(b) {
		return "", false
	}
	return string(b), true
}

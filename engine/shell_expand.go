package engine

import (
	"strconv"
	"strings"
	"unicode/utf8"

	"mvdan.cc/sh/v3/syntax"
)

// partial is one candidate expansion of a word in progress: the fields it
// has finished and the one it is building.
type partial struct {
	done    []value
	cur     strings.Builder
	unknown bool // the current field holds an unresolvable part
	started bool // the current field exists, even if empty ("")
}

func (p *partial) clone() *partial {
	q := &partial{done: append([]value(nil), p.done...), unknown: p.unknown, started: p.started}
	q.cur.WriteString(p.cur.String())
	return q
}

// maxValueBytes bounds one word or value: a variable doubled by each
// assignment would otherwise grow exponentially with the script. A longer
// word is unknown.
const maxValueBytes = 64 << 10

// text appends s; unquoted expansion results are split on IFS as the shell
// splits them.
func (p *partial) text(s string, split bool, ifs string) {
	if p.cur.Len()+len(s) > maxValueBytes {
		p.markUnknown()
		return
	}
	if !split {
		p.cur.WriteString(s)
		p.started = true
		return
	}
	for _, r := range s {
		if strings.ContainsRune(ifs, r) {
			p.end()
			continue
		}
		p.cur.WriteRune(r)
		p.started = true
	}
}

func (p *partial) end() {
	if p.started {
		p.done = append(p.done, value{s: p.cur.String(), unknown: p.unknown})
	}
	p.cur.Reset()
	p.unknown, p.started = false, false
}

func (p *partial) markUnknown() { p.unknown, p.started = true, true }

// expand reads a word into its candidate field lists: brace expansion,
// tilde, quote removal, ANSI-C quoting, parameter expansion with IFS
// splitting, and command substitution of commands whose output is known.
// noSplit reads it as an assignment value does. Past maxAlternatives the
// word is one unknown field.
func (z *shellReader) expand(w *syntax.Word, noSplit bool) [][]value {
	if !z.spend() {
		return [][]value{{{unknown: true}}}
	}
	syntax.SplitBraces(w)
	ps := z.expandParts(w.Parts, []*partial{{}}, false, noSplit, true)
	if ps == nil {
		return [][]value{{{unknown: true}}}
	}
	out := make([][]value, 0, len(ps))
	for _, p := range ps {
		p.end()
		out = append(out, p.done)
	}
	return out
}

func (z *shellReader) ifs() string {
	vals, ok := z.vars["IFS"]
	if !ok {
		return " \t\n"
	}
	var b strings.Builder
	for _, v := range vals {
		b.WriteString(v.s)
	}
	return b.String()
}

// expandParts applies parts to every partial; nil means too many
// alternatives.
func (z *shellReader) expandParts(parts []syntax.WordPart, ps []*partial, quoted, noSplit, wordStart bool) []*partial {
	for i, part := range parts {
		first := wordStart && i == 0
		switch x := part.(type) {
		case *syntax.Lit:
			s := x.Value
			if quoted {
				s = unescapeDouble(s)
			} else {
				s = unescapeBare(s)
				if first && strings.HasPrefix(x.Value, "~") {
					s = tildeHome(s)
				}
			}
			for _, p := range ps {
				p.text(s, false, "")
			}
		case *syntax.SglQuoted:
			s := x.Value
			if x.Dollar {
				s = ansiC(s)
			}
			for _, p := range ps {
				p.text(s, false, "")
			}
		case *syntax.DblQuoted:
			for _, p := range ps {
				p.started = true
			}
			ps = z.expandParts(x.Parts, ps, true, noSplit, false)
		case *syntax.ParamExp:
			ps = z.substitute(ps, z.param(x), quoted || noSplit)
		case *syntax.CmdSubst:
			ps = z.substitute(ps, []value{z.cmdSubst(x)}, quoted || noSplit)
		case *syntax.ProcSubst:
			if !z.readOnce[x] {
				z.readOnce[x] = true
				z.stmts(x.Stmts)
			}
			for _, p := range ps {
				p.text("/dev/fd/63", false, "")
			}
		case *syntax.ArithmExp:
			z.walkSubstitutions(x)
			for _, p := range ps {
				p.markUnknown()
			}
		case *syntax.ExtGlob:
			for _, p := range ps {
				p.text("*", false, "")
			}
		case *syntax.BraceExp:
			ps = z.braces(x, ps, quoted, noSplit, first)
		default:
			for _, p := range ps {
				p.markUnknown()
			}
		}
		if ps == nil || len(ps) > maxAlternatives {
			return nil
		}
	}
	return ps
}

// substitute forks every partial over a substitution's candidate values.
func (z *shellReader) substitute(ps []*partial, vals []value, quoted bool) []*partial {
	ifs := z.ifs()
	out := make([]*partial, 0, len(ps)*len(vals))
	for _, p := range ps {
		for j, v := range vals {
			q := p
			if j < len(vals)-1 {
				q = p.clone()
			}
			if v.unknown {
				q.markUnknown()
			} else {
				q.text(v.s, !quoted, ifs)
			}
			out = append(out, q)
		}
		if len(out) > maxAlternatives {
			return nil
		}
	}
	return out
}

func (z *shellReader) braces(b *syntax.BraceExp, ps []*partial, quoted, noSplit, first bool) []*partial {
	var elems [][]syntax.WordPart
	if b.Sequence {
		seq, ok := braceSequence(b.Elems)
		if !ok {
			for _, p := range ps {
				p.markUnknown()
			}
			return ps
		}
		for _, s := range seq {
			elems = append(elems, []syntax.WordPart{&syntax.Lit{Value: s}})
		}
	} else {
		for _, e := range b.Elems {
			elems = append(elems, e.Parts)
		}
	}
	var out []*partial
	for _, e := range elems {
		forks := make([]*partial, len(ps))
		for i, p := range ps {
			forks[i] = p.clone()
		}
		forks = z.expandParts(e, forks, quoted, noSplit, first)
		if forks == nil {
			return nil
		}
		out = append(out, forks...)
		if len(out) > maxAlternatives {
			return nil
		}
	}
	return out
}

// braceSequence expands {x..y[..step]} over integers or single letters.
func braceSequence(elems []*syntax.Word) ([]string, bool) {
	if len(elems) < 2 {
		return nil, false
	}
	from, to := elems[0].Lit(), elems[1].Lit()
	step := 1
	if len(elems) > 2 {
		n, err := strconv.Atoi(elems[2].Lit())
		if err != nil || n == 0 {
			return nil, false
		}
		step = max(n, -n)
	}
	a, errA := strconv.Atoi(from)
	b, errB := strconv.Atoi(to)
	letters := errA != nil || errB != nil
	if letters {
		if len(from) != 1 || len(to) != 1 {
			return nil, false
		}
		a, b = int(from[0]), int(to[0])
	}
	if d := a - b; d > maxAlternatives*step || -d > maxAlternatives*step {
		return nil, false
	}
	var out []string
	for i := a; ; {
		if letters {
			out = append(out, string(rune(i)))
		} else {
			out = append(out, strconv.Itoa(i))
		}
		if i == b {
			break
		}
		if a < b {
			i += step
			if i > b {
				break
			}
		} else {
			i -= step
			if i < b {
				break
			}
		}
	}
	return out, true
}

// cmdSubst reads the commands inside $(...) and, when they are pure
// commands whose output the reader can compute, returns that output.
func (z *shellReader) cmdSubst(c *syntax.CmdSubst) value {
	if v, ok := z.substs[c]; ok {
		return v
	}
	z.stmts(c.Stmts)
	v := value{unknown: true}
	if len(c.Stmts) == 1 {
		if out := z.output(c.Stmts[0], nil); !out.unknown {
			v = value{s: strings.TrimRight(out.text, "\n")}
		}
	}
	z.substs[c] = v
	return v
}

// param resolves a parameter expansion to its candidate values.
func (z *shellReader) param(pe *syntax.ParamExp) []value {
	unknown := []value{{unknown: true}}
	if pe.Param == nil || pe.Excl || pe.Length || pe.Width || pe.IsSet || pe.NestedParam != nil || pe.Index != nil || pe.Names != 0 || pe.Flags != nil || len(pe.Modifiers) > 0 {
		if pe.Index != nil {
			z.walkSubstitutions(pe.Index)
		}
		return unknown
	}
	base, set := z.lookup(pe.Param.Value)
	switch {
	case pe.Exp != nil:
		return z.paramOp(pe.Exp, base, set)
	case pe.Slice != nil:
		return mapKnown(base, func(s string) (string, bool) { return slice(s, pe.Slice) })
	case pe.Repl != nil:
		orig, okO := literalWord(pe.Repl.Orig)
		with, okW := literalWord(pe.Repl.With)
		if !okO || !okW || hasGlob(orig) || orig == "" {
			return unknown
		}
		return mapKnown(base, func(s string) (string, bool) {
			if pe.Repl.All {
				return strings.ReplaceAll(s, orig, with), true
			}
			return strings.Replace(s, orig, with, 1), true
		})
	}
	return base
}

// lookup returns a variable's candidates and whether it is certainly set.
func (z *shellReader) lookup(name string) ([]value, bool) {
	unknown := []value{{unknown: true}}
	if isDigits(name) || name == "@" || name == "*" {
		if z.pos == nil {
			return unknown, false
		}
		var s string
		if isDigits(name) {
			n, err := strconv.Atoi(name)
			if err != nil || n >= len(z.pos) {
				return []value{{}}, false
			}
			s = z.pos[n]
		} else if len(z.pos) > 1 {
			s = strings.Join(z.pos[1:], " ")
		}
		if strings.Contains(s, "\x00") {
			return unknown, false
		}
		return []value{{s: s}}, true
	}
	if vals, ok := z.vars[name]; ok {
		return vals, true
	}
	switch name {
	case "HOME":
		return []value{{s: homeDir}}, true
	case "IFS":
		return []value{{s: " \t\n"}}, true
	case "PWD":
		out := make([]value, 0, len(z.cwds))
		for _, c := range z.cwds {
			if c.s == "" && !c.unknown {
				c.s = "."
			}
			out = append(out, c)
		}
		return out, true
	}
	return unknown, false
}

func (z *shellReader) paramOp(e *syntax.Expansion, base []value, set bool) []value {
	word := func() []value {
		if e.Word == nil {
			return []value{{}}
		}
		return z.wordValues(e.Word)
	}
	var out []value
	switch e.Op {
	case syntax.DefaultUnset, syntax.DefaultUnsetOrNull, syntax.AssignUnset, syntax.AssignUnsetOrNull:
		orNull := e.Op == syntax.DefaultUnsetOrNull || e.Op == syntax.AssignUnsetOrNull
		for _, v := range base {
			switch {
			case v.unknown:
				out = append(out, v)
				out = append(out, word()...)
			case !set || (orNull && v.s == ""):
				out = append(out, word()...)
			default:
				out = append(out, v)
			}
		}
	case syntax.AlternateUnset, syntax.AlternateUnsetOrNull:
		orNull := e.Op == syntax.AlternateUnsetOrNull
		for _, v := range base {
			switch {
			case v.unknown:
				out = append(out, v, value{})
				out = append(out, word()...)
			case !set || (orNull && v.s == ""):
				out = append(out, value{})
			default:
				out = append(out, word()...)
			}
		}
	case syntax.ErrorUnset, syntax.ErrorUnsetOrNull:
		return base
	case syntax.RemSmallPrefix, syntax.RemLargePrefix, syntax.RemSmallSuffix, syntax.RemLargeSuffix:
		pat, ok := literalWord(e.Word)
		if !ok || hasGlob(pat) {
			return []value{{unknown: true}}
		}
		suffix := e.Op == syntax.RemSmallSuffix || e.Op == syntax.RemLargeSuffix
		return mapKnown(base, func(s string) (string, bool) {
			if suffix {
				return strings.TrimSuffix(s, pat), true
			}
			return strings.TrimPrefix(s, pat), true
		})
	case syntax.UpperAll, syntax.UpperFirst, syntax.LowerAll, syntax.LowerFirst:
		if e.Word != nil && e.Word.Lit() != "" {
			return []value{{unknown: true}}
		}
		return mapKnown(base, func(s string) (string, bool) { return changeCase(s, e.Op), true })
	default:
		return []value{{unknown: true}}
	}
	if len(out) > maxAlternatives {
		return []value{{unknown: true}}
	}
	return out
}

func changeCase(s string, op syntax.ParExpOperator) string {
	switch op {
	case syntax.UpperAll:
		return strings.ToUpper(s)
	case syntax.LowerAll:
		return strings.ToLower(s)
	}
	r, n := utf8.DecodeRuneInString(s)
	if n == 0 {
		return s
	}
	if op == syntax.UpperFirst {
		return strings.ToUpper(string(r)) + s[n:]
	}
	return strings.ToLower(string(r)) + s[n:]
}

func mapKnown(vals []value, f func(string) (string, bool)) []value {
	out := make([]value, len(vals))
	for i, v := range vals {
		if v.unknown {
			out[i] = v
			continue
		}
		s, ok := f(v.s)
		out[i] = value{s: s, unknown: !ok}
	}
	return out
}

// slice applies ${x:offset:length} with literal integer bounds.
func slice(s string, sl *syntax.Slice) (string, bool) {
	off, ok := arithLiteral(sl.Offset)
	if !ok {
		return "", false
	}
	if off < 0 {
		off += len(s)
	}
	off = max(0, min(off, len(s)))
	s = s[off:]
	if sl.Length == nil {
		return s, true
	}
	n, ok := arithLiteral(sl.Length)
	if !ok {
		return "", false
	}
	if n < 0 {
		n += len(s)
	}
	return s[:max(0, min(n, len(s)))], true
}

func arithLiteral(e syntax.ArithmExpr) (int, bool) {
	switch x := e.(type) {
	case *syntax.Word:
		n, err := strconv.Atoi(x.Lit())
		return n, err == nil
	case *syntax.UnaryArithm:
		if x.Op == syntax.Minus {
			n, ok := arithLiteral(x.X)
			return -n, ok
		}
	}
	return 0, false
}

// literalWord returns a word's text when it is made of literals and quotes
// only.
func literalWord(w *syntax.Word) (string, bool) {
	if w == nil {
		return "", true
	}
	var b strings.Builder
	for _, p := range w.Parts {
		switch x := p.(type) {
		case *syntax.Lit:
			b.WriteString(unescapeBare(x.Value))
		case *syntax.SglQuoted:
			if x.Dollar {
				b.WriteString(ansiC(x.Value))
			} else {
				b.WriteString(x.Value)
			}
		default:
			return "", false
		}
	}
	return b.String(), true
}

func tildeHome(s string) string {
	rest := s[1:]
	if i := strings.IndexByte(rest, '/'); i >= 0 {
		return homeDir + rest[i:]
	}
	return homeDir
}

// unescapeBare removes the backslashes the shell removes outside quotes.
func unescapeBare(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+1 < len(s) {
			i++
			if s[i] == '\n' {
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// unescapeDouble removes the backslashes the shell removes inside double
// quotes: before $ ` " \ and newline only.
func unescapeDouble(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+1 < len(s) && strings.IndexByte("$`\"\\\n", s[i+1]) >= 0 {
			i++
			if s[i] == '\n' {
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// ansiC decodes bash's $'...' escapes.
func ansiC(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c != '\\' || i+1 == len(s) {
			b.WriteByte(c)
			continue
		}
		i++
		switch e := s[i]; e {
		case 'a':
			b.WriteByte(7)
		case 'b':
			b.WriteByte(8)
		case 'e', 'E':
			b.WriteByte(27)
		case 'f':
			b.WriteByte(12)
		case 'n':
			b.WriteByte('\n')
		case 'r':
			b.WriteByte('\r')
		case 't':
			b.WriteByte('\t')
		case 'v':
			b.WriteByte(11)
		case 'c':
			if i+1 < len(s) {
				i++
				b.WriteByte(s[i] & 0x1f)
			}
		case 'x', 'u', 'U':
			width := map[byte]int{'x': 2, 'u': 4, 'U': 8}[e]
			j := i + 1
			for j < len(s) && j < i+1+width && isHex(s[j]) {
				j++
			}
			if j == i+1 {
				b.WriteByte('\\')
				b.WriteByte(e)
				continue
			}
			n, _ := strconv.ParseUint(s[i+1:j], 16, 32)
			if e == 'x' {
				b.WriteByte(byte(n))
			} else {
				b.WriteRune(rune(n))
			}
			i = j - 1
		case '0', '1', '2', '3', '4', '5', '6', '7':
			j := i
			for j < len(s) && j < i+3 && s[j] >= '0' && s[j] <= '7' {
				j++
			}
			n, _ := strconv.ParseUint(s[i:j], 8, 16)
			b.WriteByte(byte(n))
			i = j - 1
		default:
			b.WriteByte(e)
		}
	}
	return b.String()
}

package engine

import (
	"path"
	"slices"
	"strconv"
	"strings"

	"mvdan.cc/sh/v3/syntax"
)

// Command intents: what a hardline command rule looks for in the parsed
// commands of an action, whatever spelling the command used.
const (
	IntentRecursiveDeleteRoot = "recursive_delete_root"
	IntentFilesystemFormat    = "filesystem_format"
	IntentBlockDeviceWrite    = "block_device_write"
	IntentForkBomb            = "fork_bomb"
	IntentRecursiveChmodRoot  = "recursive_chmod_root"
)

type intent uint8

const (
	intentRootDelete intent = 1 << iota
	intentFormat
	intentDeviceWrite
	intentForkBomb
	intentRootChmod
)

func parseIntent(s string) (intent, bool) {
	switch s {
	case IntentRecursiveDeleteRoot:
		return intentRootDelete, true
	case IntentFilesystemFormat:
		return intentFormat, true
	case IntentBlockDeviceWrite:
		return intentDeviceWrite, true
	case IntentForkBomb:
		return intentForkBomb, true
	case IntentRecursiveChmodRoot:
		return intentRootChmod, true
	}
	return 0, false
}

// Limits of the static reading. Past any of them the command is opaque:
// what the reader cannot finish, it does not guess at.
const (
	maxShellDepth   = 8       // sh -c inside eval inside sh -c ...
	maxShellBytes   = 1 << 20 // source text parsed over one action
	maxAlternatives = 64      // candidate values of one word or argv
	maxShellWords   = 4096    // resolved words kept for the egress readers
	// maxShellWork bounds the statements and words one action's reading
	// visits, so no nesting of substitutions and pipelines, each of which
	// is read more than once, can make the reading exponential.
	maxShellWork = 1 << 16
)

// shellReport is what the static reading of an action's commands found.
type shellReport struct {
	intents intent
	// opaque: some command could not be resolved statically (a
	// non-literal run by a shell or eval, a command name built from an
	// expansion, a destructive command on an operand nobody can read).
	opaque bool
	// words are every resolved word and redirection target, so the
	// egress and credential rules read the command as the shell would.
	words []string
}

// homeDir stands for the home directory in resolved paths: an absolute
// path one level deep, like root's, so "~/.." is the root as it is for root.
const homeDir = "/~"

// value is one candidate reading of a word or variable: known text, or
// unknown (an expansion nobody can resolve statically).
type value struct {
	s       string
	unknown bool
}

// shellReader reads commands statically. Variables and the working
// directory are over-approximated: an assignment adds a candidate value
// and a cd adds a candidate directory, whatever branch or subshell they ran
// in, so no order of evaluation can hide a value the reader has seen.
type shellReader struct {
	rep    shellReport
	vars   map[string][]value
	cwds   []value // "" is the workspace
	depth  int
	budget int
	work   int
	// substs remembers each command substitution's value, and readOnce
	// the process substitutions already read: a word is expanded again when
	// the output of its command is computed, and reading what it contains a
	// second time would double the work at every level of nesting.
	substs   map[*syntax.CmdSubst]value
	readOnce map[*syntax.ProcSubst]bool
	outputs  map[*syntax.Stmt]memoOutput
	pos      []string // positional parameters of sh -c SCRIPT NAME ARGS
}

func newShellReader() *shellReader {
	return &shellReader{
		vars: map[string][]value{}, cwds: []value{{s: ""}}, budget: maxShellBytes,
		substs: map[*syntax.CmdSubst]value{}, readOnce: map[*syntax.ProcSubst]bool{},
		outputs: map[*syntax.Stmt]memoOutput{},
	}
}

// readCommandValue reads one command-bearing argument: a script string, or
// an argv array of strings run without a shell.
func (z *shellReader) readCommandValue(v any) {
	switch x := v.(type) {
	case string:
		z.script(x)
	case []string:
		argv := make([]value, len(x))
		for i, s := range x {
			argv[i] = value{s: s}
		}
		z.argv(argv, nil)
	case []any:
		argv := make([]value, 0, len(x))
		for _, e := range x {
			s, ok := scalarString(e)
			if !ok {
				z.rep.opaque = true
				return
			}
			argv = append(argv, value{s: s})
		}
		z.argv(argv, nil)
	case nil:
	default:
		if _, ok := scalarString(x); !ok {
			z.rep.opaque = true
		}
	}
}

func scalarString(v any) (string, bool) {
	switch x := v.(type) {
	case string:
		return x, true
	case interface{ String() string }: // json.Number
		return x.String(), true
	case bool:
		return strconv.FormatBool(x), true
	case float64:
		return strconv.FormatFloat(x, 'g', -1, 64), true
	case int:
		return strconv.Itoa(x), true
	case int64:
		return strconv.FormatInt(x, 10), true
	}
	return "", false
}

// script parses src as bash (a superset of what sh, dash and ksh accept
// in practice) and reads every statement. Source that does not parse, or
// past the depth and size budget, is opaque.
func (z *shellReader) script(src string) {
	z.readScript(src, false)
}

// readScript parses and reads src; what does not parse is opaque unless
// lenient.
func (z *shellReader) readScript(src string, lenient bool) {
	if z.depth >= maxShellDepth || len(src) > z.budget {
		z.rep.opaque = true
		return
	}
	z.budget -= len(src)
	f, err := syntax.NewParser(syntax.Variant(syntax.LangBash)).Parse(strings.NewReader(src), "")
	if err != nil {
		z.rep.opaque = z.rep.opaque || !lenient
		return
	}
	z.depth++
	z.stmts(f.Stmts)
	z.depth--
}

// spend counts one unit of work; past maxShellWork the command is opaque
// and the reading stops.
func (z *shellReader) spend() bool {
	z.work++
	if z.work > maxShellWork {
		z.rep.opaque = true
		return false
	}
	return true
}

// scriptLenient reads a string that may not be shell at all (a literal
// handed to exec in inline code): what does not parse is not opaque.
func (z *shellReader) scriptLenient(src string) {
	z.readScript(src, true)
}

func (z *shellReader) stmts(list []*syntax.Stmt) {
	for _, s := range list {
		z.stmt(s, nil)
	}
}

// stdinSource is what a command reads on standard input: the literal
// output of the command before it in a pipeline, a here-document, or
// unknown.
type stdinSource struct {
	text    string
	unknown bool
}

func (z *shellReader) stmt(s *syntax.Stmt, stdin *stdinSource) {
	if !z.spend() {
		return
	}
	for _, r := range s.Redirs {
		if in := z.redirect(r); in != nil {
			stdin = in
		}
	}
	switch c := s.Cmd.(type) {
	case nil:
	case *syntax.CallExpr:
		z.call(c, stdin)
	case *syntax.BinaryCmd:
		if c.Op == syntax.Pipe || c.Op == syntax.PipeAll {
			z.stmt(c.X, stdin)
			z.stmt(c.Y, z.output(c.X, stdin))
			return
		}
		z.stmt(c.X, stdin)
		z.stmt(c.Y, stdin)
	case *syntax.Subshell:
		z.stmtsIn(c.Stmts, stdin)
	case *syntax.Block:
		z.stmtsIn(c.Stmts, stdin)
	case *syntax.IfClause:
		for ic := c; ic != nil; ic = ic.Else {
			z.stmts(ic.Cond)
			z.stmts(ic.Then)
		}
	case *syntax.WhileClause:
		z.stmts(c.Cond)
		z.stmts(c.Do)
	case *syntax.ForClause:
		if wi, ok := c.Loop.(*syntax.WordIter); ok {
			var vals []value
			for _, w := range wi.Items {
				for _, alt := range z.fields(w) {
					vals = append(vals, alt...)
				}
			}
			if len(wi.Items) == 0 {
				vals = []value{{unknown: true}}
			}
			z.assign(wi.Name.Value, vals)
		} else {
			z.walkSubstitutions(c.Loop)
		}
		z.stmts(c.Do)
	case *syntax.CaseClause:
		z.fields(c.Word)
		for _, item := range c.Items {
			z.stmts(item.Stmts)
		}
	case *syntax.FuncDecl:
		if forkBomb(c) {
			z.rep.intents |= intentForkBomb
		}
		if c.Body != nil {
			z.stmt(c.Body, nil)
		}
	case *syntax.DeclClause:
		for _, a := range c.Args {
			z.assignment(a)
		}
	case *syntax.TimeClause:
		if c.Stmt != nil {
			z.stmt(c.Stmt, stdin)
		}
	case *syntax.CoprocClause:
		z.stmt(c.Stmt, nil)
	default:
		// Arithmetic, [[ ]] and let run no command of their own, but their
		// words may hold command substitutions.
		z.walkSubstitutions(c)
	}
}

// stmtsIn reads a group whose first command inherits the group's stdin.
func (z *shellReader) stmtsIn(list []*syntax.Stmt, stdin *stdinSource) {
	for i, s := range list {
		if i == 0 {
			z.stmt(s, stdin)
			continue
		}
		z.stmt(s, nil)
	}
}

// walkSubstitutions reads the command and process substitutions inside a
// node the reader does not otherwise interpret.
func (z *shellReader) walkSubstitutions(n syntax.Node) {
	syntax.Walk(n, func(n syntax.Node) bool {
		switch x := n.(type) {
		case *syntax.CmdSubst:
			z.stmts(x.Stmts)
			return false
		case *syntax.ProcSubst:
			z.stmts(x.Stmts)
			return false
		}
		return true
	})
}

// redirect checks a redirection's target and returns the stdin it sets
// up, if any.
func (z *shellReader) redirect(r *syntax.Redirect) *stdinSource {
	switch r.Op {
	case syntax.Hdoc, syntax.DashHdoc:
		if r.Hdoc == nil {
			return &stdinSource{}
		}
		if quotedWord(r.Word) {
			return &stdinSource{text: litText(r.Hdoc)}
		}
		return z.joined(r.Hdoc)
	case syntax.WordHdoc:
		return z.joined(r.Word)
	case syntax.RdrIn, syntax.DplIn:
		z.fields(r.Word)
		return &stdinSource{unknown: true}
	case syntax.DplOut:
		if w := r.Word.Lit(); w != "" && (w == "-" || isDigits(w)) {
			return nil
		}
	}
	for _, alt := range z.fields(r.Word) {
		for _, v := range alt {
			z.writeTarget(v)
		}
	}
	return nil
}

// joined reads a word as one string (a here-string or here-document body).
func (z *shellReader) joined(w *syntax.Word) *stdinSource {
	alts := z.fields(w)
	if len(alts) != 1 {
		return &stdinSource{unknown: true}
	}
	parts := make([]string, 0, len(alts[0]))
	for _, v := range alts[0] {
		if v.unknown {
			return &stdinSource{unknown: true}
		}
		parts = append(parts, v.s)
	}
	return &stdinSource{text: strings.Join(parts, " ")}
}

func quotedWord(w *syntax.Word) bool {
	if w == nil {
		return false
	}
	for _, p := range w.Parts {
		switch x := p.(type) {
		case *syntax.SglQuoted, *syntax.DblQuoted:
			return true
		case *syntax.Lit:
			if strings.Contains(x.Value, `\`) {
				return true
			}
		}
	}
	return false
}

func litText(w *syntax.Word) string {
	var b strings.Builder
	for _, p := range w.Parts {
		if l, ok := p.(*syntax.Lit); ok {
			b.WriteString(l.Value)
		}
	}
	return b.String()
}

// output is what a pipeline stage writes when the reader can compute it:
// echo, printf without directives, cat of its stdin, and base64 or xxd
// decoding of a known input. Anything else writes unknown text.
func (z *shellReader) output(s *syntax.Stmt, stdin *stdinSource) *stdinSource {
	if o, ok := z.outputs[s]; ok && o.stdin == stdin {
		// A pipeline asks for its left side's output at every level.
		return o.out
	}
	out := z.computeOutput(s, stdin)
	z.outputs[s] = memoOutput{stdin: stdin, out: out}
	return out
}

type memoOutput struct{ stdin, out *stdinSource }

func (z *shellReader) computeOutput(s *syntax.Stmt, stdin *stdinSource) *stdinSource {
	unknown := &stdinSource{unknown: true}
	if !z.spend() {
		return unknown
	}
	switch c := s.Cmd.(type) {
	case *syntax.BinaryCmd:
		if c.Op == syntax.Pipe || c.Op == syntax.PipeAll {
			return z.output(c.Y, z.output(c.X, stdin))
		}
		return unknown
	case *syntax.CallExpr:
		if len(s.Redirs) > 0 || len(c.Args) == 0 {
			return unknown
		}
		alts := z.fieldsQuiet(c.Args)
		if len(alts) != 1 {
			return unknown
		}
		out, ok := staticOutput(alts[0], stdin)
		if !ok {
			return unknown
		}
		return &stdinSource{text: out}
	}
	return unknown
}

// staticOutput computes what a few pure commands print.
func staticOutput(argv []value, stdin *stdinSource) (string, bool) {
	for _, v := range argv {
		if v.unknown {
			return "", false
		}
	}
	args := make([]string, len(argv))
	for i, v := range argv {
		args[i] = v.s
	}
	switch path.Base(args[0]) {
	case "echo":
		rest, escapes := args[1:], false
		for len(rest) > 0 && (rest[0] == "-n" || rest[0] == "-E" || rest[0] == "-e") {
			escapes = escapes || rest[0] == "-e"
			rest = rest[1:]
		}
		if len(rest) > 0 && strings.HasPrefix(rest[0], "-") {
			return "", false
		}
		out := strings.Join(rest, " ")
		if escapes {
			out = ansiC(out)
		}
		return out + "\n", true
	case "printf":
		// A format without directives, or one that is only %s (repeated
		// over the arguments, as printf does), with its escapes decoded.
		switch {
		case len(args) == 2 && !strings.Contains(args[1], "%"):
			return ansiC(args[1]), true
		case len(args) > 2 && strings.Count(args[1], "%") == 1 && strings.Contains(args[1], "%s"):
			pre, post, _ := strings.Cut(args[1], "%s")
			pre, post = ansiC(pre), ansiC(post)
			var b strings.Builder
			for _, a := range args[2:] {
				b.WriteString(pre + a + post)
			}
			return b.String(), true
		}
		return "", false
	case "cat":
		if len(args) == 1 && stdin != nil && !stdin.unknown {
			return stdin.text, true
		}
	case "base64":
		if stdin == nil || stdin.unknown || len(args) != 2 || (args[1] != "-d" && args[1] != "--decode" && args[1] != "-D") {
			return "", false
		}
		dec, ok := decodeBase64Text(stdin.text)
		return dec, ok
	case "xxd":
		if stdin == nil || stdin.unknown || len(args) != 3 || args[1] != "-r" || args[2] != "-p" {
			return "", false
		}
		dec, ok := decodeHexText(stdin.text)
		return dec, ok
	}
	return "", false
}

// call reads one simple command: assignments, then the command itself.
func (z *shellReader) call(c *syntax.CallExpr, stdin *stdinSource) {
	if len(c.Args) == 0 {
		for _, a := range c.Assigns {
			z.assignment(a)
		}
		return
	}
	for _, a := range c.Assigns {
		// FOO=1 cmd: the value only reaches cmd's environment, but its
		// substitutions run here.
		if a.Value != nil {
			z.fields(a.Value)
		}
	}
	alts := z.fieldsQuiet(c.Args)
	if alts == nil {
		z.rep.opaque = true
		return
	}
	for _, argv := range alts {
		z.argv(argv, stdin)
	}
}

func (z *shellReader) assignment(a *syntax.Assign) {
	if a.Name == nil {
		return
	}
	if a.Array != nil {
		var vals []value
		for _, e := range a.Array.Elems {
			if e.Value != nil {
				for _, alt := range z.fields(e.Value) {
					vals = append(vals, alt...)
				}
			}
		}
		z.assign(a.Name.Value, vals)
		return
	}
	if a.Value == nil {
		if !a.Naked {
			z.assign(a.Name.Value, []value{{}})
		}
		return
	}
	vals := z.wordValues(a.Value)
	if a.Append {
		vals = append(vals, value{unknown: true})
	}
	z.assign(a.Name.Value, vals)
}

// assign adds candidate values to a variable (see shellReader).
func (z *shellReader) assign(name string, vals []value) {
	cur := z.vars[name]
	for _, v := range vals {
		if !slices.Contains(cur, v) {
			cur = append(cur, v)
		}
	}
	if len(cur) > maxAlternatives {
		cur = []value{{unknown: true}}
	}
	z.vars[name] = cur
}

// wordValues reads a word as an assignment does: no field splitting, one
// value per candidate.
func (z *shellReader) wordValues(w *syntax.Word) []value {
	var out []value
	for _, alt := range z.expand(w, true) {
		out = append(out, alt...)
	}
	return out
}

// fieldsQuiet expands every word of an argv into candidate argvs (the
// cartesian product of each word's candidates), or nil past the limit.
func (z *shellReader) fieldsQuiet(words []*syntax.Word) [][]value {
	out := [][]value{nil}
	for _, w := range words {
		alts := z.fields(w)
		next := make([][]value, 0, len(out)*len(alts))
		for _, prefix := range out {
			for _, alt := range alts {
				if len(next) == maxAlternatives {
					return nil
				}
				next = append(next, append(slices.Clone(prefix), alt...))
			}
		}
		out = next
	}
	return out
}

// fields expands a word into its candidate field lists.
func (z *shellReader) fields(w *syntax.Word) [][]value {
	if w == nil {
		return [][]value{nil}
	}
	return z.expand(w, false)
}

// argv reads one resolved command line. Wrappers are unwrapped until the
// command they run; shells, eval and inline interpreter code are read
// recursively.
func (z *shellReader) argv(argv []value, stdin *stdinSource) {
	for len(argv) > 0 {
		z.keepWords(argv)
		if argv[0].unknown {
			// A command name built from an expansion: nobody knows what runs.
			z.rep.opaque = true
			return
		}
		name := commandName(argv[0].s)
		rest, next, done := z.unwrap(name, argv, stdin)
		if done {
			return
		}
		if next != nil {
			argv = next
			continue
		}
		z.command(name, rest, stdin)
		return
	}
}

func (z *shellReader) keepWords(argv []value) {
	for _, v := range argv {
		if !v.unknown && v.s != "" && len(z.rep.words) < maxShellWords {
			z.rep.words = append(z.rep.words, v.s)
		}
	}
}

// commandName is the name the shell looks up: the base name of a path.
func commandName(s string) string {
	if i := strings.LastIndexByte(s, '/'); i >= 0 {
		return s[i+1:]
	}
	return s
}

// wrapperOptions lists, per wrapper, the options that take a separate
// value; any other option is a flag.
var wrapperOptions = map[string][]string{
	"sudo":     {"-u", "-g", "-C", "-D", "-h", "-p", "-r", "-t", "-U", "-T", "-R", "--user", "--group", "--chdir", "--host", "--prompt", "--role", "--type", "--other-user", "--command-timeout", "--chroot", "--close-from"},
	"doas":     {"-u", "-C"},
	"nohup":    nil,
	"setsid":   nil,
	"builtin":  nil,
	"exec":     {"-a"},
	"nice":     {"-n", "--adjustment"},
	"ionice":   {"-c", "-n", "--class", "--classdata"},
	"stdbuf":   {"-i", "-o", "-e", "--input", "--output", "--error"},
	"time":     {"-f", "-o", "--format", "--output"},
	"unbuffer": nil,
	"nsenter":  {"-t", "--target", "-S", "--setuid", "-G", "--setgid", "-w", "--wd", "-r", "--root"},
	"unshare":  {"--map-user", "--map-group", "-R", "--root", "-w", "--wd"},
	"runuser":  {"-u", "-g", "-G", "--user", "--group", "--supp-group"},
	"chrt":     nil,
	"taskset":  nil,
	"flock":    {"-w", "--wait", "--timeout", "-E", "--conflict-exit-code"},
	"xargs":    {"-I", "-L", "-n", "-P", "-d", "-E", "-s", "-a", "--arg-file", "--delimiter", "--eof", "--max-args", "--max-lines", "--max-procs", "--max-chars", "--replace"},
	"timeout":  {"-s", "-k", "--signal", "--kill-after"},
	"env":      {"-u", "-C", "--unset", "--chdir"},
	"command":  nil,
	"watch":    {"-n", "--interval", "-d"},
	"su":       {"-s", "--shell", "-g", "--group", "-G", "--supp-group"},
}

// skipOptions returns the index of the first operand after a wrapper's
// options, or -1 when an option cannot be read.
func skipOptions(argv []value, withValue []string) int {
	i := 1
	for i < len(argv) {
		a := argv[i]
		if a.unknown {
			return -1
		}
		if a.s == "--" {
			return i + 1
		}
		if len(a.s) < 2 || a.s[0] != '-' {
			return i
		}
		if strings.HasPrefix(a.s, "--") && strings.Contains(a.s, "=") {
			i++
			continue
		}
		if slices.Contains(withValue, a.s) {
			i += 2
			continue
		}
		// A short option with a value attached (-uroot) or a cluster.
		i++
	}
	return min(i, len(argv))
}

// unwrap handles commands that run another command. It returns the
// unwrapped argv in next, or done when the command was fully read here.
func (z *shellReader) unwrap(name string, argv []value, stdin *stdinSource) (rest, next []value, done bool) {
	withValue, isWrapper := wrapperOptions[name]
	if !isWrapper {
		switch name {
		case "busybox", "toybox":
			if len(argv) > 1 {
				return nil, argv[1:], false
			}
			return nil, nil, true
		case "chroot":
			i := skipOptions(argv, []string{"--userspec", "--groups"})
			if i < 0 {
				z.rep.opaque = true
				return nil, nil, true
			}
			if i+1 < len(argv) {
				return nil, argv[i+1:], false
			}
			return nil, nil, true
		}
		return argv[1:], nil, false
	}
	i := skipOptions(argv, withValue)
	if i < 0 {
		z.rep.opaque = true
		return nil, nil, true
	}
	switch name {
	case "command":
		for _, a := range argv[1:i] {
			if strings.ContainsAny(a.s, "vV") {
				return nil, nil, true // command -v: a lookup, runs nothing
			}
		}
	case "env":
		// -S splits its string into further arguments.
		for j := 1; j < i; j++ {
			if a := argv[j].s; a == "-S" || strings.HasPrefix(a, "--split-string") {
				z.rep.opaque = true
				return nil, nil, true
			}
		}
		for i < len(argv) && !argv[i].unknown && isAssignment(argv[i].s) {
			i++
		}
	case "timeout":
		i++ // the duration
	case "chrt", "taskset":
		i++ // the priority or CPU mask
	case "flock":
		i++ // the lock file
		for j := 1; j < len(argv); j++ {
			if argv[j].s == "-c" || argv[j].s == "--command" {
				z.shellString(argv[j+1:], stdin)
				return nil, nil, true
			}
		}
	case "su", "runuser":
		for j := 1; j < len(argv); j++ {
			if argv[j].s == "-c" || argv[j].s == "--command" {
				z.shellString(argv[j+1:], stdin)
				return nil, nil, true
			}
		}
		if name == "su" {
			return nil, nil, true // su [user]: an interactive shell
		}
	case "watch":
		// watch runs its arguments joined, through sh -c.
		z.evalArgs(argv[i:])
		return nil, nil, true
	case "xargs":
		if i >= len(argv) {
			return nil, nil, true
		}
		return nil, xargsCommand(argv[1:i], argv[i:], stdin), false
	}
	if i >= len(argv) {
		if name == "sudo" || name == "doas" {
			// sudo -s / sudo -i: a shell reading stdin.
			z.shellStdin(stdin)
		}
		return nil, nil, true
	}
	return nil, argv[i:], false
}

// xargsCommand is the command xargs runs: its arguments with the items read
// from stdin appended, or put in place of the -I replace string. Items
// from an unknown stdin are unknown.
func xargsCommand(opts, cmd []value, stdin *stdinSource) []value {
	items := []value{{unknown: true}}
	if stdin != nil && !stdin.unknown {
		items = items[:0]
		for _, f := range strings.Fields(stdin.text) {
			items = append(items, value{s: f})
		}
	}
	replace := ""
	for j, o := range opts {
		switch {
		case (o.s == "-I" || o.s == "--replace") && j+1 < len(opts):
			replace = opts[j+1].s
		case strings.HasPrefix(o.s, "-I") && len(o.s) > 2:
			replace = o.s[2:]
		case o.s == "-i" || o.s == "--replace":
			replace = "{}"
		case strings.HasPrefix(o.s, "--replace="):
			replace = strings.TrimPrefix(o.s, "--replace=")
		}
	}
	if replace == "" {
		return append(slices.Clone(cmd), items...)
	}
	out := slices.Clone(cmd)
	for k, a := range out {
		if a.unknown || !strings.Contains(a.s, replace) {
			continue
		}
		// Each item runs the command once; any of them may be the one
		// that matters, and an unknown one makes the argument unknown.
		for _, it := range items {
			if it.unknown {
				out[k] = it
				break
			}
			out[k] = value{s: strings.ReplaceAll(a.s, replace, it.s)}
			if rootLike(path.Clean(homePath(out[k].s))) || blockDevice(path.Clean(out[k].s)) {
				break
			}
		}
	}
	return out
}

func isAssignment(s string) bool {
	i := strings.IndexByte(s, '=')
	return i > 0 && validName(s[:i])
}

func validName(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c != '_' && (c < 'a' || c > 'z') && (c < 'A' || c > 'Z') && (i == 0 || c < '0' || c > '9') {
			return false
		}
	}
	return s != ""
}

func isDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return s != ""
}

var shellNames = []string{"sh", "bash", "dash", "zsh", "ksh", "mksh", "ash", "rbash", "yash", "posh", "fish", "csh", "tcsh"}

// command reads a command that is not a wrapper.
func (z *shellReader) command(name string, args []value, stdin *stdinSource) {
	switch {
	case slices.Contains(shellNames, name):
		z.shell(args, stdin)
	case name == "eval":
		z.evalArgs(args)
	case name == "source" || name == ".":
		if len(args) == 0 || args[0].unknown || args[0].s == "/dev/stdin" || args[0].s == "-" || strings.HasPrefix(args[0].s, "/dev/fd/") || strings.HasPrefix(args[0].s, "/proc/self/fd/") {
			z.rep.opaque = true
		}
	case name == "alias":
		for _, a := range args {
			if i := strings.IndexByte(a.s, '='); i > 0 && !a.unknown {
				z.script(a.s[i+1:])
			}
		}
	case name == "trap":
		if len(args) > 0 {
			z.shellString(args, nil)
		}
	case name == "cd" || name == "pushd":
		z.chdir(operands(args))
	case name == "popd":
		z.cwds = append(z.cwds, value{unknown: true})
	case name == "rm":
		z.recursiveOnRoot(args, intentRootDelete, "rR", "--recursive")
	case name == "chmod" || name == "chown" || name == "chgrp":
		z.recursiveOnRoot(args, intentRootChmod, "R", "--recursive")
	case name == "find":
		z.find(args)
	case isFormatter(name):
		z.rep.intents |= intentFormat
	case name == "dd":
		for _, a := range args {
			if a.unknown {
				z.rep.opaque = true
			} else if dest, ok := strings.CutPrefix(a.s, "of="); ok {
				z.writeTarget(value{s: dest})
			}
		}
	case name == "tee" || name == "shred" || name == "truncate" || name == "blkdiscard":
		for _, a := range operands(args) {
			z.writeTarget(a)
		}
	case name == "cp" || name == "mv" || name == "install" || name == "rsync":
		if ops := operands(args); len(ops) > 1 {
			dest := ops[len(ops)-1]
			z.writeTarget(dest)
			if name == "rsync" && slices.ContainsFunc(args, func(a value) bool { return strings.HasPrefix(a.s, "--delete") }) {
				// Syncing onto the root with --delete deletes the root.
				z.checkRootOperand(dest, intentRootDelete)
			}
		}
		for j, a := range args {
			if (a.s == "-t" || a.s == "--target-directory") && j+1 < len(args) {
				z.writeTarget(args[j+1])
			}
		}
	default:
		code, lang, from := inlineCode(name, args)
		switch {
		case from == codeNone:
		case from == codeStdin && (stdin == nil || stdin.unknown):
			// An interpreter running whatever arrives on its stdin.
			z.rep.opaque = z.rep.opaque || stdin != nil
		case from == codeStdin:
			z.inspectCode(lang, stdin.text)
		case code.unknown:
			z.rep.opaque = true
		default:
			z.inspectCode(lang, code.s)
		}
	}
}

// chdir adds the directory cd moves to as a candidate working directory
// (see shellReader): a cd that fails leaves the old one, so both stay.
func (z *shellReader) chdir(args []value) {
	target := value{s: homeDir}
	if len(args) > 0 {
		target = args[0]
	}
	var next []value
	switch {
	case target.unknown || target.s == "-":
		next = []value{{unknown: true}}
	default:
		next = z.resolve(target.s)
	}
	for _, c := range next {
		if c.s == "" && !c.unknown {
			// Still inside the workspace: nothing new to track.
			continue
		}
		if !slices.Contains(z.cwds, c) {
			z.cwds = append(z.cwds, c)
		}
	}
	if len(z.cwds) > maxAlternatives {
		z.cwds = []value{{unknown: true}}
	}
}

// isFormatter names the commands that destroy a filesystem or a device's
// contents whatever their arguments.
func isFormatter(name string) bool {
	switch name {
	case "mkfs", "mke2fs", "mke4fs", "mkswap", "wipefs", "mkntfs", "mkdosfs", "mkexfatfs", "mkreiserfs", "mkfs.fat", "newfs", "blkdiscard":
		return true
	}
	return strings.HasPrefix(name, "mkfs.")
}

// operands are the arguments that are not options (all of them after --).
func operands(args []value) []value {
	var out []value
	for i, a := range args {
		if !a.unknown && a.s == "--" {
			return append(out, args[i+1:]...)
		}
		if a.unknown || len(a.s) < 2 || a.s[0] != '-' {
			out = append(out, a)
		}
	}
	return out
}

// recursiveOnRoot reads rm and chmod alike: a recursive flag anywhere
// before -- (GNU tools permute options), and an operand that resolves to
// the root, the home directory or a glob over either.
func (z *shellReader) recursiveOnRoot(args []value, found intent, shortFlags, longFlag string) {
	recursive := false
	for _, a := range args {
		if a.unknown {
			continue
		}
		if a.s == "--" {
			break
		}
		if longPrefix(a.s, longFlag) || (len(a.s) > 1 && a.s[0] == '-' && a.s[1] != '-' && strings.ContainsAny(a.s[1:], shortFlags)) {
			recursive = true
		}
	}
	if !recursive {
		return
	}
	for _, op := range operands(args) {
		z.checkRootOperand(op, found)
	}
}

// longPrefix reports whether arg names long option opt as GNU getopt reads
// it: any prefix of at least "--re" (abbreviations are accepted while
// unambiguous, and an ambiguous one fails harmlessly), with or without an
// "=value".
func longPrefix(arg, opt string) bool {
	name, _, _ := strings.Cut(arg, "=")
	return len(name) >= 4 && strings.HasPrefix(opt, name)
}

func (z *shellReader) checkRootOperand(op value, found intent) {
	z.checkPath(op, found, rootLike)
}

// checkPath resolves an operand against every candidate working directory
// and records found when any resolution is bad; an operand or directory
// nobody can read makes the command opaque.
func (z *shellReader) checkPath(op value, found intent, bad func(string) bool) {
	if op.unknown {
		z.rep.opaque = true
		return
	}
	for _, p := range z.resolve(op.s) {
		switch {
		case p.unknown:
			z.rep.opaque = true
		case bad(p.s):
			z.rep.intents |= found
		}
	}
}

// find reads find's start paths and its actions: -delete on a root-like
// start path deletes the root; -exec runs a command on every path found,
// read here with {} standing for each start path.
func (z *shellReader) find(args []value) {
	i := 0
	for i < len(args) && !args[i].unknown && (args[i].s == "-H" || args[i].s == "-L" || args[i].s == "-P" || strings.HasPrefix(args[i].s, "-O") || args[i].s == "-D") {
		if args[i].s == "-D" {
			i++
		}
		i++
	}
	var starts []value
	for i < len(args) && (args[i].unknown || (!strings.HasPrefix(args[i].s, "-") && args[i].s != "(" && args[i].s != "!")) {
		starts = append(starts, args[i])
		i++
	}
	if len(starts) == 0 {
		starts = []value{{s: "."}}
	}
	expr := args[i:]
	for j := 0; j < len(expr); j++ {
		a := expr[j]
		switch {
		case a.unknown:
			z.rep.opaque = true
		case a.s == "-delete":
			for _, s := range starts {
				z.checkRootOperand(s, intentRootDelete)
			}
		case a.s == "-exec" || a.s == "-execdir" || a.s == "-ok" || a.s == "-okdir":
			end := j + 1
			for end < len(expr) && (expr[end].unknown || (expr[end].s != ";" && expr[end].s != "+")) {
				end++
			}
			sub := expr[j+1 : end]
			for _, s := range starts {
				cmd := make([]value, len(sub))
				for k, v := range sub {
					if !v.unknown && strings.Contains(v.s, "{}") && !s.unknown {
						v.s = strings.ReplaceAll(v.s, "{}", s.s)
					}
					cmd[k] = v
				}
				if len(cmd) > 0 {
					z.argv(cmd, nil)
				}
			}
			j = end
		}
	}
}

// shell reads sh/bash/... invocations: -c SCRIPT [NAME ARGS...], a script
// read from stdin (-s, -, or no operand with a pipe), or a script file.
func (z *shellReader) shell(args []value, stdin *stdinSource) {
	cmdMode := false
	i := 0
	for i < len(args) {
		a := args[i]
		if a.unknown {
			z.rep.opaque = true
			return
		}
		if a.s == "--" || a.s == "-" {
			i++
			break
		}
		if len(a.s) < 2 || (a.s[0] != '-' && a.s[0] != '+') {
			break
		}
		switch {
		case a.s == "-o" || a.s == "+o" || a.s == "-O" || a.s == "+O" || a.s == "--rcfile" || a.s == "--init-file":
			i += 2
			continue
		case a.s[0] == '-' && a.s[1] != '-' && strings.ContainsRune(a.s[1:], 'c'):
			cmdMode = true
		case a.s == "--command":
			cmdMode = true
		}
		i++
	}
	i = min(i, len(args))
	if cmdMode {
		z.shellString(args[i:], stdin)
		return
	}
	if i < len(args) {
		// A script file: its contents are outside the action, like any
		// program the command runs. A file the reader cannot name, such as
		// a process substitution, is opaque.
		if args[i].unknown || args[i].s == "/dev/stdin" || strings.HasPrefix(args[i].s, "/dev/fd/") || strings.HasPrefix(args[i].s, "/proc/self/fd/") {
			z.rep.opaque = true
		}
		return
	}
	z.shellStdin(stdin)
}

// shellString reads sh -c SCRIPT [NAME ARGS...]: the script with $0, $1...
// bound to the arguments after it.
func (z *shellReader) shellString(args []value, _ *stdinSource) {
	if len(args) == 0 {
		return
	}
	if args[0].unknown {
		z.rep.opaque = true
		return
	}
	saved := z.pos
	z.pos = nil
	for _, a := range args[1:] {
		if a.unknown {
			z.pos = append(z.pos, "\x00")
			continue
		}
		z.pos = append(z.pos, a.s)
	}
	z.script(args[0].s)
	z.pos = saved
}

// shellStdin reads a shell that runs whatever arrives on its stdin.
func (z *shellReader) shellStdin(stdin *stdinSource) {
	switch {
	case stdin == nil:
		// No pipe or here-document: the sandbox's own (empty) stdin.
	case stdin.unknown:
		z.rep.opaque = true
	default:
		z.script(stdin.text)
	}
}

// evalArgs reads eval's arguments joined with spaces, as eval does.
func (z *shellReader) evalArgs(args []value) {
	parts := make([]string, len(args))
	for i, a := range args {
		if a.unknown {
			z.rep.opaque = true
			return
		}
		parts[i] = a.s
	}
	if len(parts) > 0 {
		z.script(strings.Join(parts, " "))
	}
}

// writeTarget checks a path a command writes to: a block device is
// destroyed by the write; a path nobody can read might be one.
func (z *shellReader) writeTarget(v value) {
	if v.unknown {
		z.rep.opaque = true
		return
	}
	if len(z.rep.words) < maxShellWords {
		z.rep.words = append(z.rep.words, devNetTarget(v.s))
	}
	z.checkPath(v, intentDeviceWrite, blockDevice)
}

// devNetTarget turns bash's /dev/tcp/HOST/PORT into HOST:PORT so the
// egress rule reads the host it connects to.
func devNetTarget(p string) string {
	for _, pre := range []string{"/dev/tcp/", "/dev/udp/"} {
		if rest, ok := strings.CutPrefix(p, pre); ok {
			if i := strings.LastIndexByte(rest, '/'); i > 0 {
				return "//" + rest[:i] + ":" + rest[i+1:]
			}
		}
	}
	return p
}

// resolve turns an operand into absolute candidate paths, one per
// candidate working directory. "" stands for a path inside the workspace.
func (z *shellReader) resolve(p string) []value {
	p = homePath(p)
	if strings.HasPrefix(p, "/") {
		return []value{{s: path.Clean(p)}}
	}
	out := make([]value, 0, len(z.cwds))
	for _, cwd := range z.cwds {
		switch {
		case cwd.unknown:
			out = append(out, value{unknown: !harmlessRelative(p)})
		case cwd.s == "":
			// Inside the workspace, only a climb out of it can reach the
			// root, and how far the root is nobody knows.
			if c := path.Clean(p); c == ".." || (strings.HasPrefix(c, "../") && globOnly(strings.TrimLeft(c, "./"))) {
				out = append(out, value{unknown: true})
			} else {
				out = append(out, value{})
			}
		default:
			out = append(out, value{s: path.Clean(cwd.s + "/" + p)})
		}
	}
	return out
}

// harmlessRelative reports whether a relative path stays below any
// working directory without naming all of it.
func harmlessRelative(p string) bool {
	c := path.Clean(p)
	if c == "." || c == ".." || strings.HasPrefix(c, "../") {
		return false
	}
	first, _, _ := strings.Cut(c, "/")
	return !hasGlob(first)
}

// homePath rewrites the ways of naming the home directory to homeDir.
func homePath(p string) string {
	for _, pre := range []string{"${HOME}", "$HOME", "~"} {
		if rest, ok := strings.CutPrefix(p, pre); ok && (rest == "" || rest[0] == '/') {
			return homeDir + rest
		}
	}
	return p
}

func hasGlob(s string) bool { return strings.ContainsAny(s, "*?[") }

func globOnly(s string) bool {
	if s == "" {
		return true
	}
	for seg := range strings.SplitSeq(s, "/") {
		if !hasGlob(seg) {
			return false
		}
	}
	return true
}

// rootLike reports whether an absolute, clean path is the root or the home
// directory, or a glob that expands to their top-level entries.
func rootLike(p string) bool {
	if !strings.HasPrefix(p, "/") {
		return false // inside the workspace
	}
	if p == "/" || p == homeDir {
		return true
	}
	if rest, ok := strings.CutPrefix(p, homeDir+"/"); ok {
		return globOnly(rest)
	}
	return globOnly(strings.TrimPrefix(p, "/"))
}

// blockDevice reports whether a clean absolute path is under /dev and not
// one of the character devices and pseudo-files that are safe to write.
// Unknown device names count as block devices: a new name must not be a
// way around the rule.
func blockDevice(p string) bool {
	rest, ok := strings.CutPrefix(p, "/dev/")
	if !ok {
		return false
	}
	switch rest {
	case "null", "zero", "full", "random", "urandom", "stdin", "stdout", "stderr", "tty", "console", "ptmx", "kmsg", "log":
		return false
	}
	for _, pre := range []string{"fd/", "pts/", "shm/", "mqueue/", "tcp/", "udp/"} {
		if strings.HasPrefix(rest, pre) {
			return false
		}
	}
	return true
}

// forkBomb reports whether a function calls itself at least twice with a
// call in the background or in a pipeline: the shape of every fork bomb,
// whatever the function is called.
func forkBomb(f *syntax.FuncDecl) bool {
	if f.Name == nil || f.Body == nil {
		return false
	}
	name := f.Name.Value
	calls := func(n syntax.Node) int {
		count := 0
		syntax.Walk(n, func(n syntax.Node) bool {
			if c, ok := n.(*syntax.CallExpr); ok && len(c.Args) > 0 && commandName(c.Args[0].Lit()) == name {
				count++
			}
			return true
		})
		return count
	}
	if calls(f.Body) < 2 {
		return false
	}
	fanOut := false
	syntax.Walk(f.Body, func(n syntax.Node) bool {
		switch x := n.(type) {
		case *syntax.Stmt:
			if x.Background && calls(x) > 0 {
				fanOut = true
			}
		case *syntax.BinaryCmd:
			if (x.Op == syntax.Pipe || x.Op == syntax.PipeAll) && calls(x) > 1 {
				fanOut = true
			}
		}
		return !fanOut
	})
	return fanOut
}

// noCommands is the report of an action without commands, shared so the
// allow path allocates nothing. Never written.
var noCommands shellReport

// actionFacts is what one evaluation has read of an action, computed on
// first use so an action with no command parses nothing.
type actionFacts struct {
	shell *shellReport
}

// commandArguments are the arguments read as commands: those the catalog
// declares, and "command" always, so an undeclared role cannot hide one.
func commandArguments(a *ProposedAction, yield func(any)) {
	if v, ok := a.Arguments["command"]; ok {
		yield(v)
	}
	for _, name := range a.Roles.Commands {
		if v, ok := a.Arguments[name]; ok && name != "command" {
			yield(v)
		}
	}
}

func (f *actionFacts) commands(a *ProposedAction) *shellReport {
	if f.shell != nil {
		return f.shell
	}
	f.shell = &noCommands
	var z *shellReader // made on the first command: an action without one allocates nothing
	commandArguments(a, func(v any) {
		if z == nil {
			z = newShellReader()
			f.shell = &z.rep
		}
		z.readCommandValue(v)
	})
	return f.shell
}

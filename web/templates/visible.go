package templates

import (
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"golang.org/x/text/unicode/runenames"
)

// Segment is a piece of untrusted text as the console shows it: plain text,
// or a marker standing for characters a reader could not otherwise see.
// Segments are rendered with templ's normal escaping like any other text;
// the markers are plain strings too.
type Segment struct {
	Text   string
	Marker bool
	Title  string // a marker's explanation, shown on hover
}

// Thresholds for whitespace a reader cannot count by eye. A run of spaces
// or tabs longer than maxInlineSpaces is shown as a count ("⟨600 spaces⟩"),
// except indentation at the start of a line, which may be deeper (indented
// JSON and code) up to maxIndent. Trailing whitespace is always shown: it
// is padding, and it is where a value hides what follows.
const (
	maxInlineSpaces = 3
	maxIndent       = 16
	maxLineBreaks   = 3
)

// Visible splits untrusted text into segments in which every character that
// could deceive a reader is made visible: bidirectional controls, zero-width
// and other format characters, control characters, look-alike spaces,
// invisible letters, tag characters and variation selectors (both able to
// carry hidden text), invalid UTF-8, long runs of whitespace and of line
// breaks, and trailing whitespace. Everything else is plain text.
func Visible(s string) []Segment {
	var out []Segment
	plain := 0 // start of the pending plain text
	flush := func(end int) {
		if end > plain {
			out = append(out, Segment{Text: s[plain:end]})
		}
	}
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		var m Segment
		end := i + size
		switch {
		case r == utf8.RuneError && size == 1:
			end = runEnd(s, i, func(r rune, size int) bool { return r == utf8.RuneError && size == 1 })
			m = Segment{Text: "⟨" + count(end-i, "invalid byte", "invalid bytes") + "⟩", Title: "bytes that are not UTF-8 text"}
		case r == ' ' || r == '\t':
			end = runEnd(s, i, func(r rune, _ int) bool { return r == ' ' || r == '\t' })
			var ok bool
			if m, ok = whitespace(s, i, end); !ok {
				i = end
				continue
			}
		case r == '\n' || (r == '\r' && strings.HasPrefix(s[i+1:], "\n")):
			var n int
			if end, n = lineBreaks(s, i); n <= maxLineBreaks {
				i = end
				continue
			}
			m = Segment{Text: "⟨" + count(n, "line break", "line breaks") + "⟩", Title: "a run of blank lines"}
		default:
			cls, ok := invisible(r)
			if !ok {
				i = end
				continue
			}
			end = runEnd(s, i, func(r rune, _ int) bool { c, ok := invisible(r); return ok && c.key == cls.key })
			m = cls.marker(s[i:end])
		}
		flush(i)
		m.Marker = true
		out = append(out, m)
		i, plain = end, end
	}
	flush(len(s))
	return out
}

// VisibleText is Visible flattened to one string, markers inline, for the
// places that take text but not markup: attributes and dialog titles.
func VisibleText(s string) string {
	var b strings.Builder
	for _, seg := range Visible(s) {
		b.WriteString(seg.Text)
	}
	return b.String()
}

// runEnd is the end of the run starting at i of runes that in accepts.
func runEnd(s string, i int, in func(r rune, size int) bool) int {
	for i < len(s) {
		r, size := utf8.DecodeRuneInString(s[i:])
		if !in(r, size) {
			break
		}
		i += size
	}
	return i
}

// lineBreaks is the end of the run of line breaks (LF or CRLF) at i and
// how many it holds. A lone CR is not a line break here: it is marked as
// the control character it is, since a terminal returns over what precedes.
func lineBreaks(s string, i int) (end, n int) {
	for i < len(s) {
		switch {
		case s[i] == '\n':
			i++
		case strings.HasPrefix(s[i:], "\r\n"):
			i += 2
		default:
			return i, n
		}
		n++
	}
	return i, n
}

// whitespace decides whether the run of spaces and tabs s[i:end] is shown
// as a marker, and which.
func whitespace(s string, i, end int) (Segment, bool) {
	n := end - i
	trailing := end == len(s) || s[end] == '\n' || s[end] == '\r'
	indent := i > 0 && s[i-1] == '\n'
	switch {
	case trailing:
	case indent && n <= maxIndent:
		return Segment{}, false
	case n <= maxInlineSpaces:
		return Segment{}, false
	}
	tabs := strings.Count(s[i:end], "\t")
	var what string
	switch tabs {
	case 0:
		what = count(n, "space", "spaces")
	case n:
		what = count(n, "tab", "tabs")
	default:
		what = strconv.Itoa(n) + " spaces and tabs"
	}
	title := "a run of whitespace"
	if trailing {
		title = "trailing whitespace"
	}
	return Segment{Text: "⟨" + what + "⟩", Title: title}, true
}

// invisibleClass groups runes into runs that share one marker: a rune on
// its own, or a whole family (tag characters, variation selectors) whose
// runs are counted together.
type invisibleClass struct {
	key    rune // the rune itself, or the family's first rune
	family string
	title  string
}

const (
	tagFirst     = 0xE0000
	tagLast      = 0xE007F
	vsFirst      = 0xFE00
	vsLast       = 0xFE0F
	vsSupFirst   = 0xE0100
	vsSupLast    = 0xE01EF
	bidiTitle    = "bidirectional control: it can reorder the text around it"
	formatTitle  = "invisible format character"
	controlTitle = "control character"
)

// invisibleLetters are letters and marks that fonts draw as nothing; they
// are used to make look-alike names and hidden text.
var invisibleLetters = map[rune]bool{
	0x034F: true, 0x115F: true, 0x1160: true, 0x17B4: true, 0x17B5: true, 0x180B: true,
	0x180C: true, 0x180D: true, 0x180F: true, 0x2800: true, 0x3164: true, 0xFFA0: true,
}

func invisible(r rune) (invisibleClass, bool) {
	switch {
	case r >= tagFirst && r <= tagLast:
		return invisibleClass{key: tagFirst, family: "tag character", title: "tag characters are invisible and can carry hidden text"}, true
	case (r >= vsFirst && r <= vsLast) || (r >= vsSupFirst && r <= vsSupLast):
		return invisibleClass{key: vsFirst, family: "variation selector", title: "variation selectors are invisible and can carry hidden data"}, true
	case isBidi(r):
		return invisibleClass{key: r, title: bidiTitle}, true
	case unicode.Is(unicode.Cc, r):
		return invisibleClass{key: r, title: controlTitle}, true
	case unicode.Is(unicode.Cf, r):
		return invisibleClass{key: r, title: formatTitle}, true
	case r != ' ' && unicode.In(r, unicode.Zs, unicode.Zl, unicode.Zp):
		return invisibleClass{key: r, title: "a space or line break that is not an ordinary one"}, true
	case invisibleLetters[r]:
		return invisibleClass{key: r, title: "a character that is drawn as nothing"}, true
	}
	return invisibleClass{}, false
}

func isBidi(r rune) bool {
	switch {
	case r >= 0x202A && r <= 0x202E, r >= 0x2066 && r <= 0x2069:
		return true
	}
	return r == 0x200E || r == 0x200F || r == 0x061C
}

// marker is the visible stand-in for run, a run of this class.
func (c invisibleClass) marker(run string) Segment {
	n := utf8.RuneCountInString(run)
	if c.family == "" || n == 1 {
		r, _ := utf8.DecodeRuneInString(run)
		text := codePoint(r)
		if name := runeName(r); name != "" {
			text += " " + name
		}
		if n > 1 {
			text += " ×" + strconv.Itoa(n)
		}
		return Segment{Text: "⟨" + text + "⟩", Title: c.title}
	}
	text := count(n, c.family, c.family+"s")
	if c.key == tagFirst {
		if hidden := tagText(run); hidden != "" {
			text += " “" + hidden + "”"
		}
	}
	return Segment{Text: "⟨" + text + "⟩", Title: c.title}
}

// tagText is the ASCII that tag characters spell (U+E0020..U+E007E mirror
// ASCII): the hidden message itself, which is what an approver must read.
func tagText(run string) string {
	var b strings.Builder
	for _, r := range run {
		if r >= tagFirst+0x20 && r <= tagFirst+0x7E {
			b.WriteRune(r - tagFirst)
		}
	}
	return b.String()
}

func codePoint(r rune) string {
	h := strings.ToUpper(strconv.FormatInt(int64(r), 16))
	for len(h) < 4 {
		h = "0" + h
	}
	return "U+" + h
}

// controlNames name the control characters Unicode leaves unnamed.
var controlNames = map[rune]string{
	0x00: "NULL", 0x07: "BELL", 0x08: "BACKSPACE", 0x0B: "LINE TABULATION", 0x0C: "FORM FEED",
	0x0D: "CARRIAGE RETURN", 0x1B: "ESCAPE", 0x7F: "DELETE", 0x85: "NEXT LINE",
}

func runeName(r rune) string {
	if n, ok := controlNames[r]; ok {
		return n
	}
	if n := runenames.Name(r); n != "" && !strings.HasPrefix(n, "<") {
		return n
	}
	return ""
}

func count(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return strconv.Itoa(n) + " " + many
}

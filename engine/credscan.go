package engine

import (
	"bytes"
	"slices"
	"unicode"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"
)

// A credential is sought in every reading of the text a recipient could
// turn back into the key, not only in the bytes as sent:
//   - the text as given, and after NFKC with format and other invisible
//     characters removed (fullwidth letters, zero-width spaces);
//   - a compacted text with whitespace, dashes and invisible characters
//     removed, for the shapes that have no separators of their own;
//   - after each of up to maxPercentDecodes percent-decodings;
//   - every run of at least minEncodedRun base64 (standard or URL
//     alphabet) or hex characters, decoded at each alignment, when the
//     result is mostly text, up to maxDecodeDepth layers deep;
//
// and across an action, every string and key on its own, then all of them
// concatenated in sorted-key order and in reverse, so a key split over two
// fields is one key.
//
// Every reading is built in one scratch buffer that starts on the stack
// (scanStack bytes), so text with nothing to find allocates nothing; a
// regexp only ever sees a reading that holds one of a shape's hints. Work
// is linear in the input: each layer is bounded and no reading is built
// from pairs of strings.

const (
	scanStack      = 4096
	minEncodedRun  = 16
	maxDecodeDepth = 2
)

// credScan is the scratch space of one scan. A reading is appended to buf
// and dropped when its scan returns, so one buffer serves the recursion.
type credScan struct {
	buf []byte
}

// credentialInStrings reports whether any reading of strs, or of their
// concatenation in order or in reverse, holds a credential. The caller
// passes the strings in a stable order (credentialInArgs: sorted keys).
func credentialInStrings(strs []string) bool {
	var stack [scanStack]byte
	c := credScan{buf: stack[:0]}
	for _, s := range strs {
		if c.scanString(s) {
			return true
		}
	}
	if len(strs) < 2 {
		return false
	}
	for _, reverse := range []bool{false, true} {
		mark := len(c.buf)
		for i := range strs {
			if reverse {
				i = len(strs) - 1 - i
			}
			c.buf = append(c.buf, strs[i]...)
		}
		if c.scan(c.buf[mark:], 0, 0) {
			return true
		}
		c.buf = c.buf[:mark]
	}
	return false
}

// credentialInArgs is credentialInStrings over every string value and map
// key of args at any depth, maps read in sorted-key order. Arguments nested
// deeper than any honest argument count as a credential: refuse rather than
// skip.
func credentialInArgs(args map[string]any) bool {
	var stack [32]string
	strs, ok := appendArgStrings(stack[:0], args, 0)
	return !ok || credentialInStrings(strs)
}

// networkCapable reports whether code run on t can reach the network:
// only an isolated sandbox with networking off cannot.
func networkCapable(t ExecutionTarget) bool {
	return t.Kind != TargetSandbox || !t.Isolated || t.NetworkEnabled
}

func appendArgStrings(out []string, v any, depth int) ([]string, bool) {
	if depth > maxDepth {
		return out, false
	}
	ok := true
	switch x := v.(type) {
	case string:
		out = append(out, x)
	case []string:
		out = append(out, x...)
	case []any:
		for _, e := range x {
			if out, ok = appendArgStrings(out, e, depth+1); !ok {
				break
			}
		}
	case map[string]any:
		var stack [16]string
		keys := stack[:0]
		for k := range x {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range keys {
			out = append(out, k)
			if out, ok = appendArgStrings(out, x[k], depth+1); !ok {
				break
			}
		}
	}
	return out, ok
}

func (c *credScan) scanString(s string) bool {
	mark := len(c.buf)
	c.buf = append(c.buf, s...)
	found := c.scan(c.buf[mark:], 0, 0)
	c.buf = c.buf[:mark]
	return found
}

// scan reads b (which may live in c.buf) after pct percent-decodings and
// dec base64/hex decodings, and frees what it built.
func (c *credScan) scan(b []byte, pct, dec int) bool {
	mark := len(c.buf)
	found := c.read(b, pct, dec)
	c.buf = c.buf[:mark]
	return found
}

func (c *credScan) read(b []byte, pct, dec int) bool {
	if matchShapes(b, false) {
		return true
	}
	if !asciiBytes(b) {
		b = c.normalize(b)
		if matchShapes(b, false) {
			return true
		}
	}
	if c.compactMatch(b) {
		return true
	}
	if pct < maxPercentDecodes && bytes.IndexByte(b, '%') >= 0 {
		mark := len(c.buf)
		c.buf = appendPercentDecoded(c.buf, b)
		if d := c.buf[mark:]; len(d) < len(b) && c.scan(d, pct+1, dec) {
			return true
		}
	}
	return dec < maxDecodeDepth && c.decodedRuns(b, pct, dec)
}

// normalize appends NFKC of b with invisible characters removed to c.buf.
func (c *credScan) normalize(b []byte) []byte {
	start := len(c.buf)
	c.buf = norm.NFKC.Append(c.buf, b...)
	n := c.buf[start:]
	out := n[:0]
	for i := 0; i < len(n); {
		r, size := utf8.DecodeRune(n[i:])
		if !invisible(r) {
			out = append(out, n[i:i+size]...)
		}
		i += size
	}
	c.buf = c.buf[:start+len(out)]
	return out
}

// invisible reports format characters (zero-width space and joiners, soft
// hyphen, word joiner, BOM, bidi controls, tags) and the other default
// ignorables that render as nothing: variation selectors, the combining
// grapheme joiner and the Hangul fillers.
func invisible(r rune) bool {
	switch {
	case r < 0x80:
		return false
	case unicode.Is(unicode.Cf, r), unicode.Is(unicode.Variation_Selector, r):
		return true
	}
	return r == 0x034F || r == 0x115F || r == 0x1160 || r == 0x3164 || r == 0xFFA0
}

// compactMatch seeks the compact shapes in b with whitespace, dashes and
// invisible characters removed.
func (c *credScan) compactMatch(b []byte) bool {
	mark := len(c.buf)
	for i := 0; i < len(b); {
		ch := b[i]
		if ch < utf8.RuneSelf {
			if ch != ' ' && ch != '-' && (ch < '\t' || ch > '\r') {
				c.buf = append(c.buf, ch)
			}
			i++
			continue
		}
		r, size := utf8.DecodeRune(b[i:])
		if !unicode.IsSpace(r) && !unicode.Is(unicode.Pd, r) && !invisible(r) {
			c.buf = append(c.buf, b[i:i+size]...)
		}
		i += size
	}
	compacted := c.buf[mark:]
	found := len(compacted) < len(b) && matchShapes(compacted, true)
	c.buf = c.buf[:mark]
	return found
}

func appendPercentDecoded(dst, b []byte) []byte {
	for i := 0; i < len(b); i++ {
		if b[i] == '%' && i+2 < len(b) && isHex(b[i+1]) && isHex(b[i+2]) {
			dst = append(dst, unhex(b[i+1])<<4|unhex(b[i+2]))
			i += 2
			continue
		}
		dst = append(dst, b[i])
	}
	return dst
}

// decodedRuns decodes every run of at least minEncodedRun base64
// characters at each of its four alignments, and every hex run within it at
// both, and reads each result that is mostly text.
func (c *credScan) decodedRuns(b []byte, pct, dec int) bool {
	for i := 0; i < len(b); {
		if b64Value[b[i]] == invalidB64 {
			i++
			continue
		}
		j := i
		for j < len(b) && b64Value[b[j]] != invalidB64 {
			j++
		}
		if run := b[i:j]; len(run) >= minEncodedRun {
			for off := 0; off < 4 && len(run)-off >= minEncodedRun; off++ {
				if c.readDecoded(appendBase64Decoded, run[off:], pct, dec) {
					return true
				}
			}
			if c.hexRuns(run, pct, dec) {
				return true
			}
		}
		i = j
	}
	return false
}

func (c *credScan) hexRuns(run []byte, pct, dec int) bool {
	for i := 0; i < len(run); {
		if !isHex(run[i]) {
			i++
			continue
		}
		j := i
		for j < len(run) && isHex(run[j]) {
			j++
		}
		for off := 0; off < 2 && j-i-off >= minEncodedRun; off++ {
			if c.readDecoded(appendHexDecoded, run[i+off:j], pct, dec) {
				return true
			}
		}
		i = j
	}
	return false
}

func (c *credScan) readDecoded(decode func(dst, src []byte) []byte, src []byte, pct, dec int) bool {
	mark := len(c.buf)
	c.buf = decode(c.buf, src)
	found := mostlyText(c.buf[mark:]) && c.scan(c.buf[mark:], pct, dec+1)
	c.buf = c.buf[:mark]
	return found
}

const invalidB64 = 0xff

// b64Value maps both base64 alphabets (+/ and -_) to their values.
var b64Value = func() (t [256]byte) {
	for i := range t {
		t[i] = invalidB64
	}
	const std = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
	for i := range len(std) {
		t[std[i]] = byte(i)
	}
	t['-'], t['_'] = 62, 63
	return t
}()

// appendBase64Decoded decodes src (base64 characters only, no padding)
// onto dst; a trailing partial group yields its whole bytes.
func appendBase64Decoded(dst, src []byte) []byte {
	var acc uint32
	n := 0
	for _, ch := range src {
		acc = acc<<6 | uint32(b64Value[ch])
		if n++; n == 4 {
			dst = append(dst, byte(acc>>16), byte(acc>>8), byte(acc))
			acc, n = 0, 0
		}
	}
	switch n {
	case 2:
		dst = append(dst, byte(acc>>4))
	case 3:
		dst = append(dst, byte(acc>>10), byte(acc>>2))
	}
	return dst
}

func appendHexDecoded(dst, src []byte) []byte {
	for i := 0; i+1 < len(src); i += 2 {
		dst = append(dst, unhex(src[i])<<4|unhex(src[i+1]))
	}
	return dst
}

// mostlyText reports whether decoded bytes read as text: valid UTF-8 with
// at most one control character in eight. Decoding random or binary data,
// or a run at the wrong alignment, leaves far more.
func mostlyText(d []byte) bool {
	if !utf8.Valid(d) {
		return false
	}
	controls := 0
	for _, ch := range d {
		if ch < ' ' && ch != '\t' && ch != '\n' && ch != '\r' || ch == 0x7f {
			controls++
		}
	}
	return controls*8 <= len(d)
}

// printable reports whether d is printable ASCII.
func printable(d []byte) bool {
	for _, ch := range d {
		if ch < ' ' || ch > '~' {
			return false
		}
	}
	return true
}

func asciiBytes(b []byte) bool {
	for _, ch := range b {
		if ch >= utf8.RuneSelf {
			return false
		}
	}
	return true
}

// matchShapes reports whether b holds a credential shape (only the compact
// ones when compactOnly). b is copied to a string only once a hint is found.
func matchShapes(b []byte, compactOnly bool) bool {
	var s string
	copied := false
	for i := range compiledShapes {
		sh := &compiledShapes[i]
		if compactOnly && !sh.compact || !sh.hinted(b) {
			continue
		}
		if !copied {
			s, copied = string(b), true
		}
		if sh.matches(s) {
			return true
		}
	}
	return false
}

func (sh *compiledShape) hinted(b []byte) bool {
	for _, h := range sh.hints {
		if sh.fold && containsFoldBytes(b, h) || !sh.fold && bytes.Contains(b, h) {
			return true
		}
	}
	return false
}

func (sh *compiledShape) matches(s string) bool {
	if sh.verify == nil {
		return sh.re.MatchString(s)
	}
	for _, m := range sh.re.FindAllStringIndex(s, -1) {
		if sh.verify(s[m[0]:m[1]]) {
			return true
		}
	}
	return false
}

// containsFoldBytes reports whether b contains lower (lower-case ASCII),
// ignoring ASCII case.
func containsFoldBytes(b, lower []byte) bool {
	n := len(lower)
	for i := 0; i+n <= len(b); i++ {
		j := 0
		for ; j < n; j++ {
			ch := b[i+j]
			if ch >= 'A' && ch <= 'Z' {
				ch += 'a' - 'A'
			}
			if ch != lower[j] {
				break
			}
		}
		if j == n {
			return true
		}
	}
	return false
}

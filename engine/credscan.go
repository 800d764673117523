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
// (scanStack bytes), so ASCII text with nothing to find allocates nothing;
// a regexp only ever sees a reading that holds one of a shape's hints. The
// buffer is passed by value: a reader appends its readings past the
// caller's length, and they are gone when it returns. Work is linear in
// the input: each layer is bounded and no reading is built from pairs of
// strings.

const (
	scanStack      = 4096
	minEncodedRun  = 16
	maxDecodeDepth = 2
)

// credentialInStrings reports whether any reading of strs, or of their
// concatenation in order or in reverse, holds a credential. The caller
// passes the strings in a stable order (credentialInArgs: sorted keys).
func credentialInStrings(strs []string) bool {
	var stack [scanStack]byte
	for _, s := range strs {
		if scanString(stack[:0], s) {
			return true
		}
	}
	if len(strs) < 2 {
		return false
	}
	for _, reverse := range []bool{false, true} {
		buf := stack[:0]
		for i := range strs {
			if reverse {
				i = len(strs) - 1 - i
			}
			buf = append(buf, strs[i]...)
		}
		if read(buf[len(buf):], buf, 0, 0) {
			return true
		}
	}
	return false
}

// credentialInArgs is credentialInStrings over every string value of args
// at any depth, maps read in sorted-key order, with every map key read on
// its own too. Arguments nested deeper than any honest argument count as a
// credential: refuse rather than skip.
func credentialInArgs(args map[string]any) bool {
	var vals, keys [32]string
	v, k, ok := appendArgStrings(vals[:0], keys[:0], args, 0)
	if !ok {
		return true
	}
	for _, key := range k {
		if ContainsCredential(key) {
			return true
		}
	}
	return credentialInStrings(v)
}

// networkCapable reports whether code run on t can reach the network:
// only an isolated sandbox with networking off cannot.
func networkCapable(t ExecutionTarget) bool {
	return t.Kind != TargetSandbox || !t.Isolated || t.NetworkEnabled
}

// appendArgStrings appends the string values under v to vals and its map
// keys to keys, maps in sorted-key order; ok is false past maxDepth.
func appendArgStrings(vals, keys []string, v any, depth int) (_, _ []string, ok bool) {
	if depth > maxDepth {
		return vals, keys, false
	}
	switch x := v.(type) {
	case string:
		vals = append(vals, x)
	case []string:
		vals = append(vals, x...)
	case []any:
		for _, e := range x {
			if vals, keys, ok = appendArgStrings(vals, keys, e, depth+1); !ok {
				return vals, keys, false
			}
		}
	case map[string]any:
		var stack [16]string
		sorted := stack[:0]
		for k := range x {
			sorted = append(sorted, k)
		}
		slices.Sort(sorted)
		keys = append(keys, sorted...)
		for _, k := range sorted {
			if vals, keys, ok = appendArgStrings(vals, keys, x[k], depth+1); !ok {
				return vals, keys, false
			}
		}
	}
	return vals, keys, true
}

// scanString reads s, copied into buf (the scratch buffer, empty).
func scanString(buf []byte, s string) bool {
	buf = append(buf, s...)
	return read(buf[len(buf):], buf, 0, 0)
}

// read seeks the shapes in every reading of b, after pct percent-decodings
// and dec base64/hex decodings so far. Its readings go in buf, past len.
func read(buf, b []byte, pct, dec int) bool {
	if matchShapes(b, false) {
		return true
	}
	if !asciiBytes(b) {
		b = normalize(b)
		if matchShapes(b, false) {
			return true
		}
	}
	if compactMatch(buf, b) {
		return true
	}
	if pct < maxPercentDecodes && bytes.IndexByte(b, '%') >= 0 {
		d := appendPercentDecoded(buf, b)[len(buf):]
		if len(d) < len(b) && read(d[len(d):], d, pct+1, dec) {
			return true
		}
	}
	return dec < maxDecodeDepth && decodedRuns(buf, b, pct, dec)
}

// normalize returns NFKC of b with invisible characters removed. It
// allocates, as only non-ASCII text needs it, and reads a copy of b: norm
// keeps its input, which would move the stack buffer to the heap on every
// scan.
func normalize(b []byte) []byte {
	n := norm.NFKC.String(string(b))
	out := make([]byte, 0, len(n))
	for _, r := range n {
		if !invisible(r) {
			out = utf8.AppendRune(out, r)
		}
	}
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
func compactMatch(buf, b []byte) bool {
	mark := len(buf)
	for i := 0; i < len(b); {
		ch := b[i]
		if ch < utf8.RuneSelf {
			if ch != ' ' && ch != '-' && (ch < '\t' || ch > '\r') {
				buf = append(buf, ch)
			}
			i++
			continue
		}
		r, size := utf8.DecodeRune(b[i:])
		if !unicode.IsSpace(r) && !unicode.Is(unicode.Pd, r) && !invisible(r) {
			buf = append(buf, b[i:i+size]...)
		}
		i += size
	}
	compacted := buf[mark:]
	return len(compacted) < len(b) && matchShapes(compacted, true)
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
func decodedRuns(buf, b []byte, pct, dec int) bool {
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
				if readDecoded(buf, false, run[off:], pct, dec) {
					return true
				}
			}
			if hexRuns(buf, run, pct, dec) {
				return true
			}
		}
		i = j
	}
	return false
}

func hexRuns(buf, run []byte, pct, dec int) bool {
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
			if readDecoded(buf, true, run[i+off:j], pct, dec) {
				return true
			}
		}
		i = j
	}
	return false
}

// readDecoded decodes src (hex or base64) and seeks the shapes in the
// result, which may hold a key after a misaligned, undecodable prefix
// (/path/QUtJQ...); only a result that is mostly text is read further.
func readDecoded(buf []byte, isHex bool, src []byte, pct, dec int) bool {
	mark := len(buf)
	if isHex {
		buf = appendHexDecoded(buf, src)
	} else {
		buf = appendBase64Decoded(buf, src)
	}
	d := buf[mark:]
	return matchShapes(d, false) || mostlyText(d) && read(d[len(d):], d, pct, dec+1)
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
// ones when compactOnly). Case-folded hints are sought in one lower-cased
// copy (on the stack for ordinary text) with the library's fast search; b
// is copied to a string only once a hint is found.
func matchShapes(b []byte, compactOnly bool) bool {
	var s string
	copied := false
	var lowStack [scanStack]byte
	var low []byte
	for i := range compiledShapes {
		sh := &compiledShapes[i]
		if compactOnly && !sh.compact {
			continue
		}
		hay := b
		if sh.fold {
			if low == nil {
				low = appendASCIILower(lowStack[:0], b)
			}
			hay = low
		}
		if !sh.hinted(hay) {
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

// hinted reports whether hay (lower-cased for a folding shape) holds one of
// the shape's hints.
func (sh *compiledShape) hinted(hay []byte) bool {
	for _, h := range sh.hints {
		if bytes.Contains(hay, h) {
			return true
		}
	}
	return false
}

func appendASCIILower(dst, b []byte) []byte {
	for _, c := range b {
		if c >= 'A' && c <= 'Z' {
			c += 'a' - 'A'
		}
		dst = append(dst, c)
	}
	return dst
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

package engine

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"unicode"
	"unicode/utf8"
)

// ErrTrailingData is DecodeStrict's error for bytes after the JSON value.
var ErrTrailingData = errors.New("decode: trailing data after the JSON value")

// InputError is a JSON text that is well formed but refused: a duplicate
// key, invalid UTF-8, an unpaired surrogate escape, or a number PostgreSQL
// cannot store. Msg is safe to show the sender (it quotes at most a key the
// sender wrote).
type InputError struct{ Msg string }

func (e *InputError) Error() string { return "decode: " + e.Msg }

// DecodeStrict decodes exactly one JSON value from b into v: unknown fields
// are refused, numbers stay json.Number (so normalization sees the literal
// the agent sent), and trailing data is an error. Before decoding, one pass
// over the bytes refuses what encoding/json would silently accept and
// rewrite: duplicate keys at any depth (it keeps the last, so an approver
// and a resume could read different values), invalid UTF-8 and unpaired
// surrogate escapes (it replaces them with U+FFFD, so different bytes hash
// alike), and numbers out of PostgreSQL numeric's range (a stored argument
// would fail in the database, not here).
func DecodeStrict(b []byte, v any) error {
	if err := checkStrict(b); err != nil {
		return err
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	dec.UseNumber()
	if err := dec.Decode(v); err != nil {
		return fmt.Errorf("decode: %w", err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return ErrTrailingData
	}
	return nil
}

// DecodeActionRequest decodes an action proposal as the API receives it.
func DecodeActionRequest(b []byte) (ActionRequest, error) {
	var req ActionRequest
	if err := DecodeStrict(b, &req); err != nil {
		return ActionRequest{}, err
	}
	return req, nil
}

// PostgreSQL numeric (and so jsonb) holds at most this many digits before
// and after the decimal point.
const (
	pgNumericIntDigits  = 131072
	pgNumericFracDigits = 16383
)

// smallObject is the key count up to which duplicates are found by
// pairwise comparison.
const smallObject = 16

// jsonMaxDepth matches encoding/json's nesting limit.
const jsonMaxDepth = 10000

// errSyntax stops the check at malformed JSON; encoding/json then reports
// it with its own position and wording.
var errSyntax = errors.New("syntax")

// checkStrict validates the first JSON value of b; see DecodeStrict. It
// returns nil for malformed JSON (and ignores anything after the value),
// which the decoder refuses itself.
func checkStrict(b []byte) error {
	s := scanner{b: b}
	err := s.value(0)
	if errors.Is(err, errSyntax) {
		return nil
	}
	return err
}

type scanner struct {
	b   []byte
	i   int
	buf []byte // scratch for decoding keys with escapes
}

func (s *scanner) ws() {
	for s.i < len(s.b) {
		switch s.b[s.i] {
		case ' ', '\t', '\n', '\r':
			s.i++
		default:
			return
		}
	}
}

func (s *scanner) value(depth int) error {
	if depth > jsonMaxDepth {
		return errSyntax
	}
	s.ws()
	if s.i >= len(s.b) {
		return errSyntax
	}
	switch c := s.b[s.i]; {
	case c == '{':
		return s.object(depth)
	case c == '[':
		return s.array(depth)
	case c == '"':
		_, err := s.str(false)
		return err
	case c == '-' || c >= '0' && c <= '9':
		return s.number()
	default:
		for _, lit := range []string{"true", "false", "null"} {
			if bytes.HasPrefix(s.b[s.i:], []byte(lit)) {
				s.i += len(lit)
				return nil
			}
		}
		return errSyntax
	}
}

func (s *scanner) object(depth int) error {
	s.i++ // {
	s.ws()
	if s.i < len(s.b) && s.b[s.i] == '}' {
		s.i++
		return nil
	}
	// Small objects compare keys pairwise with strings.EqualFold; past
	// smallObject keys a map of folded keys keeps the check linear.
	var keys []string
	var folded map[string]struct{}
	for {
		s.ws()
		if s.i >= len(s.b) || s.b[s.i] != '"' {
			return errSyntax
		}
		key, err := s.str(true)
		if err != nil {
			return err
		}
		// encoding/json matches struct fields case-insensitively, so keys
		// that differ only in case fill one field, the last one winning.
		dup := false
		if folded == nil {
			for _, k := range keys {
				if dup = strings.EqualFold(k, key); dup {
					break
				}
			}
			keys = append(keys, key)
			if len(keys) > smallObject {
				folded = make(map[string]struct{}, 2*len(keys))
				for _, k := range keys {
					folded[foldKey(k)] = struct{}{}
				}
			}
		} else {
			f := foldKey(key)
			_, dup = folded[f]
			folded[f] = struct{}{}
		}
		if dup {
			return &InputError{Msg: fmt.Sprintf("duplicate key %q (keys must be unique in an object, ignoring case)", key)}
		}
		s.ws()
		if s.i >= len(s.b) || s.b[s.i] != ':' {
			return errSyntax
		}
		s.i++
		if done, err := s.member(depth, '}'); done || err != nil {
			return err
		}
	}
}

func (s *scanner) array(depth int) error {
	s.i++ // [
	s.ws()
	if s.i < len(s.b) && s.b[s.i] == ']' {
		s.i++
		return nil
	}
	for {
		if done, err := s.member(depth, ']'); done || err != nil {
			return err
		}
	}
}

// member reads one value of an object or array and what follows it: a
// comma (another member comes) or the closer (done).
func (s *scanner) member(depth int, closer byte) (done bool, err error) {
	if err := s.value(depth + 1); err != nil {
		return false, err
	}
	s.ws()
	switch {
	case s.i >= len(s.b):
		return false, errSyntax
	case s.b[s.i] == ',':
		s.i++
		return false, nil
	case s.b[s.i] == closer:
		s.i++
		return true, nil
	}
	return false, errSyntax
}

// str scans a string at s.i (the opening quote) and, with decode, returns
// its decoded text (for keys).
func (s *scanner) str(decode bool) (string, error) {
	s.i++ // "
	start := s.i
	escaped := false
	if decode {
		s.buf = s.buf[:0]
	}
	for s.i < len(s.b) {
		c := s.b[s.i]
		switch {
		case c == '"':
			raw := s.b[start:s.i]
			s.i++
			if !decode {
				return "", nil
			}
			if !escaped {
				return string(raw), nil
			}
			return string(s.buf), nil
		case c == '\\':
			escaped = true
			r, err := s.escape()
			if err != nil {
				return "", err
			}
			if decode {
				s.buf = utf8.AppendRune(s.buf, r)
			}
		case c < 0x20:
			return "", errSyntax
		case c < utf8.RuneSelf:
			s.i++
			if decode {
				s.buf = append(s.buf, c)
			}
		default:
			r, size := utf8.DecodeRune(s.b[s.i:])
			if r == utf8.RuneError && size == 1 {
				return "", &InputError{Msg: fmt.Sprintf("invalid UTF-8 at byte %d", s.i)}
			}
			if decode {
				s.buf = append(s.buf, s.b[s.i:s.i+size]...)
			}
			s.i += size
		}
	}
	return "", errSyntax
}

// escape decodes the escape sequence at s.i (the backslash). A surrogate
// must come as a high-low pair; encoding/json would turn a lone one into
// U+FFFD.
func (s *scanner) escape() (rune, error) {
	if s.i+1 >= len(s.b) {
		return 0, errSyntax
	}
	c := s.b[s.i+1]
	if c != 'u' {
		s.i += 2
		switch c {
		case '"', '\\', '/':
			return rune(c), nil
		case 'b':
			return '\b', nil
		case 'f':
			return '\f', nil
		case 'n':
			return '\n', nil
		case 'r':
			return '\r', nil
		case 't':
			return '\t', nil
		}
		return 0, errSyntax
	}
	at := s.i
	r, ok := s.hex4()
	if !ok {
		return 0, errSyntax
	}
	lone := &InputError{Msg: fmt.Sprintf("unpaired surrogate escape at byte %d", at)}
	switch {
	case r >= 0xDC00 && r <= 0xDFFF:
		return 0, lone
	case r >= 0xD800 && r <= 0xDBFF:
		if s.i+1 >= len(s.b) || s.b[s.i] != '\\' || s.b[s.i+1] != 'u' {
			return 0, lone
		}
		lo, ok := s.hex4()
		if !ok {
			return 0, errSyntax
		}
		if lo < 0xDC00 || lo > 0xDFFF {
			return 0, lone
		}
		return 0x10000 + (r-0xD800)<<10 + (lo - 0xDC00), nil
	}
	return r, nil
}

// hex4 reads \uXXXX at s.i.
func (s *scanner) hex4() (rune, bool) {
	if s.i+6 > len(s.b) {
		return 0, false
	}
	var r rune
	for _, c := range s.b[s.i+2 : s.i+6] {
		switch {
		case c >= '0' && c <= '9':
			r = r<<4 | rune(c-'0')
		case c >= 'a' && c <= 'f':
			r = r<<4 | rune(c-'a'+10)
		case c >= 'A' && c <= 'F':
			r = r<<4 | rune(c-'A'+10)
		default:
			return 0, false
		}
	}
	s.i += 6
	return r, true
}

// number scans a number literal and refuses one whose digits before or
// after the decimal point, exponent applied, exceed PostgreSQL numeric's
// (the check is on the literal as written, as PostgreSQL's is).
func (s *scanner) number() error {
	if s.b[s.i] == '-' {
		s.i++
	}
	intDigits := s.digits()
	if intDigits == 0 || intDigits > 1 && s.b[s.i-intDigits] == '0' {
		return errSyntax
	}
	fracDigits := 0
	if s.i < len(s.b) && s.b[s.i] == '.' {
		s.i++
		if fracDigits = s.digits(); fracDigits == 0 {
			return errSyntax
		}
	}
	exp := 0
	if s.i < len(s.b) && (s.b[s.i] == 'e' || s.b[s.i] == 'E') {
		s.i++
		neg := false
		if s.i < len(s.b) && (s.b[s.i] == '+' || s.b[s.i] == '-') {
			neg = s.b[s.i] == '-'
			s.i++
		}
		start := s.i
		if s.digits() == 0 {
			return errSyntax
		}
		for _, c := range s.b[start:s.i] {
			if exp < 1<<24 { // anything larger is out of range either way
				exp = exp*10 + int(c-'0')
			}
		}
		if neg {
			exp = -exp
		}
	}
	if intDigits+exp > pgNumericIntDigits || fracDigits-exp > pgNumericFracDigits {
		return &InputError{Msg: "a number is too large or too precise to be stored"}
	}
	return nil
}

func (s *scanner) digits() int {
	start := s.i
	for s.i < len(s.b) && s.b[s.i] >= '0' && s.b[s.i] <= '9' {
		s.i++
	}
	return s.i - start
}

// foldKey maps keys that strings.EqualFold (encoding/json's field match)
// calls equal to one string.
func foldKey(k string) string {
	ascii := true
	for i := range len(k) {
		if k[i] >= utf8.RuneSelf {
			ascii = false
			break
		}
	}
	if ascii {
		return asciiUpper(k)
	}
	out := make([]rune, 0, len(k))
	for _, r := range k {
		// The smallest rune of r's case-folding orbit stands for the orbit.
		least := r
		for f := unicode.SimpleFold(r); f != r; f = unicode.SimpleFold(f) {
			least = min(least, f)
		}
		out = append(out, least)
	}
	return string(out)
}

// asciiUpper is foldKey for ASCII: an upper-case letter is the smallest
// rune of its orbit.
func asciiUpper(k string) string {
	for i := range len(k) {
		if c := k[i]; c >= 'a' && c <= 'z' {
			b := []byte(k)
			for j := i; j < len(b); j++ {
				if b[j] >= 'a' && b[j] <= 'z' {
					b[j] -= 'a' - 'A'
				}
			}
			return string(b)
		}
	}
	return k
}

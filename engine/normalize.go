package engine

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"reflect"
	"slices"
	"strconv"
	"unicode/utf8"
)

// NormalizeArguments returns the canonical JSON of args and its SHA-256 hex:
// object keys sorted, no insignificant whitespace, numbers in one form
// whatever Go type carried them (json.Number, float64, int, ...), strings
// escaped minimally with invalid UTF-8 replaced. The approval is bound to
// this hash, so the same arguments must always produce the same bytes, and
// different arguments must never share them: normalization drops nothing.
// Arguments it cannot represent exactly — nested deeper than
// MaxArgumentDepth, or holding a value JSON cannot carry (a channel, a
// function, NaN, an invalid number literal) — are an error
// (ErrUnrepresentableArguments) with no bytes and no hash; the gate denies
// them policy.unclassifiable_action. It never panics.
func NormalizeArguments(args map[string]any) ([]byte, string, error) {
	buf := make([]byte, 0, 128)
	if args == nil {
		buf = append(buf, "{}"...)
	} else {
		var err error
		if buf, err = appendCanonical(buf, args, 0); err != nil {
			return nil, "", err
		}
	}
	sum := sha256.Sum256(buf)
	return buf, hex.EncodeToString(sum[:]), nil
}

// MaxArgumentDepth is how deeply arguments may nest (the top-level object is
// depth 0). It bounds recursion on hostile (or cyclic) values; anything
// deeper is refused, never cut off.
const MaxArgumentDepth = 64

// maxDepth is MaxArgumentDepth for the walkers in this package.
const maxDepth = MaxArgumentDepth

// ErrUnrepresentableArguments is NormalizeArguments' error for arguments it
// cannot encode exactly.
var ErrUnrepresentableArguments = errors.New("engine: arguments cannot be represented exactly")

var (
	errTooDeep        = fmt.Errorf("%w: nested deeper than %d levels", ErrUnrepresentableArguments, MaxArgumentDepth)
	errNotJSON        = fmt.Errorf("%w: a value JSON cannot carry", ErrUnrepresentableArguments)
	errInvalidNumber  = fmt.Errorf("%w: not a JSON number", ErrUnrepresentableArguments)
	errNonFiniteFloat = fmt.Errorf("%w: NaN or infinity", ErrUnrepresentableArguments)
)

func appendCanonical(buf []byte, v any, depth int) ([]byte, error) {
	if depth > maxDepth {
		return nil, errTooDeep
	}
	switch x := v.(type) {
	case nil:
		return append(buf, "null"...), nil
	case bool:
		return strconv.AppendBool(buf, x), nil
	case string:
		return appendString(buf, x), nil
	case json.Number:
		return appendNumber(buf, string(x))
	case float64:
		return appendFloat(buf, x)
	case float32:
		return appendFloat(buf, float64(x))
	case int:
		return strconv.AppendInt(buf, int64(x), 10), nil
	case int8:
		return strconv.AppendInt(buf, int64(x), 10), nil
	case int16:
		return strconv.AppendInt(buf, int64(x), 10), nil
	case int32:
		return strconv.AppendInt(buf, int64(x), 10), nil
	case int64:
		return strconv.AppendInt(buf, x, 10), nil
	case uint:
		return strconv.AppendUint(buf, uint64(x), 10), nil
	case uint8:
		return strconv.AppendUint(buf, uint64(x), 10), nil
	case uint16:
		return strconv.AppendUint(buf, uint64(x), 10), nil
	case uint32:
		return strconv.AppendUint(buf, uint64(x), 10), nil
	case uint64:
		return strconv.AppendUint(buf, x, 10), nil
	case map[string]any:
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		buf = append(buf, '{')
		var err error
		for i, k := range keys {
			if i > 0 {
				buf = append(buf, ',')
			}
			buf = appendString(buf, k)
			buf = append(buf, ':')
			if buf, err = appendCanonical(buf, x[k], depth+1); err != nil {
				return nil, err
			}
		}
		return append(buf, '}'), nil
	case []any:
		buf = append(buf, '[')
		var err error
		for i, e := range x {
			if i > 0 {
				buf = append(buf, ',')
			}
			if buf, err = appendCanonical(buf, e, depth+1); err != nil {
				return nil, err
			}
		}
		return append(buf, ']'), nil
	}
	g, ok := toGeneric(v)
	if !ok {
		return nil, errNotJSON
	}
	return appendCanonical(buf, g, depth+1)
}

// toGeneric turns a value of any other Go type (typed slices and maps,
// structs) into the decoded-JSON shapes above by a JSON round trip.
func toGeneric(v any) (any, bool) {
	if rv := reflect.ValueOf(v); rv.Kind() == reflect.Pointer && rv.IsNil() {
		return nil, true
	}
	b, err := json.Marshal(v)
	if err != nil {
		return nil, false
	}
	var out any
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	if err := dec.Decode(&out); err != nil {
		return nil, false
	}
	return out, true
}

// appendNumber canonicalizes a JSON number literal. Integer literals keep
// their digits (large ids must not lose precision through float64); other
// literals are parsed and printed the way encoding/json prints a float64, so
// 1.0, 1e0 and 1 all become 1. A literal that is not a JSON number is kept
// is refused: kept as a string it would hash like that string.
func appendNumber(buf []byte, s string) ([]byte, error) {
	if !validNumber(s) {
		return nil, errInvalidNumber
	}
	if isIntegerLiteral(s) {
		if s == "-0" {
			return append(buf, '0'), nil
		}
		return append(buf, s...), nil
	}
	// A valid literal fails to parse only out of float64's range, where the
	// literal itself is the only faithful form.
	if f, err := strconv.ParseFloat(s, 64); err == nil && !math.IsInf(f, 0) {
		return appendFloat(buf, f)
	}
	return append(buf, s...), nil
}

func isIntegerLiteral(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c == '.' || c == 'e' || c == 'E' {
			return false
		}
	}
	return true
}

// validNumber reports whether s is a JSON number literal.
func validNumber(s string) bool {
	i := 0
	if i < len(s) && s[i] == '-' {
		i++
	}
	if i >= len(s) {
		return false
	}
	switch {
	case s[i] == '0':
		i++
	case s[i] >= '1' && s[i] <= '9':
		for i < len(s) && s[i] >= '0' && s[i] <= '9' {
			i++
		}
	default:
		return false
	}
	if i < len(s) && s[i] == '.' {
		i++
		start := i
		for i < len(s) && s[i] >= '0' && s[i] <= '9' {
			i++
		}
		if i == start {
			return false
		}
	}
	if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		i++
		if i < len(s) && (s[i] == '+' || s[i] == '-') {
			i++
		}
		start := i
		for i < len(s) && s[i] >= '0' && s[i] <= '9' {
			i++
		}
		if i == start {
			return false
		}
	}
	return i == len(s)
}

// appendFloat prints f as encoding/json does (ES6 number formatting).
// NaN and infinities have no JSON form and are refused.
func appendFloat(buf []byte, f float64) ([]byte, error) {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return nil, errNonFiniteFloat
	}
	if f == 0 {
		return append(buf, '0'), nil // -0 and 0 are one value
	}
	abs := math.Abs(f)
	format := byte('f')
	if abs < 1e-6 || abs >= 1e21 {
		format = 'e'
	}
	start := len(buf)
	buf = strconv.AppendFloat(buf, f, format, -1, 64)
	if format == 'e' {
		// clean up e-09 to e-9
		n := len(buf) - start
		if n >= 4 && buf[len(buf)-4] == 'e' && buf[len(buf)-3] == '-' && buf[len(buf)-2] == '0' {
			buf[len(buf)-2] = buf[len(buf)-1]
			buf = buf[:len(buf)-1]
		}
	}
	return buf, nil
}

const hexDigits = "0123456789abcdef"

// appendString writes s as a JSON string, escaping only what JSON requires
// and replacing invalid UTF-8 with U+FFFD, as the decoder would.
func appendString(buf []byte, s string) []byte {
	buf = append(buf, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' {
				i++
				continue
			}
			buf = append(buf, s[start:i]...)
			switch c {
			case '"', '\\':
				buf = append(buf, '\\', c)
			case '\n':
				buf = append(buf, '\\', 'n')
			case '\r':
				buf = append(buf, '\\', 'r')
			case '\t':
				buf = append(buf, '\\', 't')
			case '\b':
				buf = append(buf, '\\', 'b')
			case '\f':
				buf = append(buf, '\\', 'f')
			default:
				buf = append(buf, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			buf = append(buf, s[start:i]...)
			buf = append(buf, "\ufffd"...)
			i += size
			start = i
			continue
		}
		i += size
	}
	buf = append(buf, s[start:]...)
	return append(buf, '"')
}

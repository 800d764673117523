package engine

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
)

// The view's markers. Their format is stable and documented in the API's
// description of an approval's arguments, so clients may recognise them:
//
//	[REDACTED: 40 characters]          a string under a sensitive key or
//	                                   one holding a credential-shaped value
//	[REDACTED: number]                 a non-string under a sensitive key
//	                                   (number, boolean, null, object,
//	                                   array; value for any other type)
//	<first characters>…[truncated: 102 more characters]
//	                                   a string cut for length
//	[UNREPRESENTABLE]                  a value nested too deep for the view
//
// A redacted value shows its length, never a digest: a digest of a secret
// is a brute-force target, a length is what the approver needs to notice
// that a "token" is in fact a 600-character script.
const (
	// Redacted names a credential-shaped argument key in the view, numbered
	// ("[REDACTED]#1") so the renamed keys stay distinct.
	Redacted = "[REDACTED]"
	// MaxViewChars is how many characters of a string an approval's view
	// (its stored arguments, the API and the console's card) keeps.
	MaxViewChars = 512
	// MaxDetailChars is how many characters of a string the approval's
	// detail page renders: the whole value of anything a person can read.
	MaxDetailChars = 64 << 10
	// Unrepresentable stands in the view for a value nested deeper than
	// MaxArgumentDepth or one JSON cannot carry: shown, never silently
	// dropped (the gate refuses such arguments before any approval).
	Unrepresentable = "[UNREPRESENTABLE]"

	redactedPrefix  = "[REDACTED: "
	truncatedPrefix = "…[truncated: "
	truncatedSuffix = " more characters]"
)

// RedactedMarker is what the view shows for a value it must not: a string's
// length in characters, or the JSON kind of any other value.
func RedactedMarker(v any) string {
	switch x := v.(type) {
	case string:
		return redactedPrefix + characters(utf8.RuneCountInString(x)) + "]"
	case nil:
		return redactedPrefix + "null]"
	case bool:
		return redactedPrefix + "boolean]"
	case map[string]any:
		return redactedPrefix + "object]"
	case []any:
		return redactedPrefix + "array]"
	case json.Number, float64, float32, int, int8, int16, int32, int64, uint, uint8, uint16, uint32, uint64:
		return redactedPrefix + "number]"
	}
	return redactedPrefix + "value]"
}

func characters(n int) string {
	if n == 1 {
		return "1 character"
	}
	return strconv.Itoa(n) + " characters"
}

// IsRedactedMarker reports whether s is a marker RedactedMarker made.
func IsRedactedMarker(s string) bool {
	return strings.HasPrefix(s, redactedPrefix) && strings.HasSuffix(s, "]")
}

// SplitTruncated undoes the view's truncation marker: the characters kept
// and how many were cut. ok is false for a string the view did not cut.
// An agent can write the marker itself; that only makes a value look
// longer than it is, and the detail page shows the whole of either.
func SplitTruncated(s string) (kept string, hidden int, ok bool) {
	if !strings.HasSuffix(s, truncatedSuffix) {
		return s, 0, false
	}
	i := strings.LastIndex(s, truncatedPrefix)
	if i < 0 {
		return s, 0, false
	}
	n, err := strconv.Atoi(s[i+len(truncatedPrefix) : len(s)-len(truncatedSuffix)])
	if err != nil || n <= 0 {
		return s, 0, false
	}
	return s[:i], n, true
}

// RedactedView is what a human sees of an action's arguments: values under
// a sensitive key and credential-shaped values become a RedactedMarker (at
// any depth, and never digested); strings over MaxViewChars are cut with a
// marker saying how many characters are hidden. digests holds the SHA-256
// hex of each top-level string cut for length, keyed by argument name, so a
// client can verify the full value it holds. The view is never the
// integrity boundary: dispatch uses the invocation's arguments.
func RedactedView(args map[string]any) (view map[string]any, digests map[string]string) {
	return redactor{limit: MaxViewChars}.view(args)
}

// RedactedDetail is RedactedView for the approval's detail page, which shows
// values whole up to MaxDetailChars: the padding and tail a card cannot fit
// are what an approver opens the page to read.
func RedactedDetail(args map[string]any) (view map[string]any, digests map[string]string) {
	return redactor{limit: MaxDetailChars}.view(args)
}

// redactor redacts with one length limit for strings.
type redactor struct{ limit int }

func (r redactor) view(args map[string]any) (view map[string]any, digests map[string]string) {
	view = make(map[string]any, len(args))
	digests = map[string]string{}
	for _, k := range viewKeys(args) {
		v := args[k.orig]
		if IsSensitiveKey(k.orig) {
			view[k.shown] = RedactedMarker(v)
			continue
		}
		if s, ok := v.(string); ok {
			shown, truncated := r.redactString(s)
			view[k.shown] = shown
			if truncated {
				sum := sha256.Sum256([]byte(s))
				digests[k.shown] = hex.EncodeToString(sum[:])
			}
			continue
		}
		view[k.shown] = r.redactValue(v, 0)
	}
	return view, digests
}

type viewKey struct{ orig, shown string }

// viewKeys orders keys and renames any credential-shaped key, so no
// credential survives even as a map key. Renamed keys are numbered in
// sorted order, which keeps the view deterministic.
func viewKeys(m map[string]any) []viewKey {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	out := make([]viewKey, 0, len(keys))
	n := 0
	for _, k := range keys {
		shown := k
		if ContainsCredential(k) {
			for {
				n++
				shown = Redacted + "#" + strconv.Itoa(n)
				if _, taken := m[shown]; !taken {
					break
				}
			}
		}
		out = append(out, viewKey{orig: k, shown: shown})
	}
	return out
}

// redactString masks a credential-shaped string and truncates a long one.
// The truncated form is checked again: the marker must never complete a
// shape the full value did not contain.
func (r redactor) redactString(s string) (shown string, truncated bool) {
	if ContainsCredential(s) {
		return RedactedMarker(s), false
	}
	total := utf8.RuneCountInString(s)
	if total <= r.limit {
		return s, false
	}
	kept := s
	cut := 0
	for i := range s {
		if cut == r.limit {
			kept = s[:i]
			break
		}
		cut++
	}
	shown = kept + truncatedPrefix + strconv.Itoa(total-r.limit) + truncatedSuffix
	if ContainsCredential(shown) {
		return RedactedMarker(s), false
	}
	return shown, true
}

func (r redactor) redactValue(v any, depth int) any {
	if depth > maxDepth {
		return Unrepresentable
	}
	switch x := v.(type) {
	case nil, bool, float64, float32, int, int8, int16, int32, int64, uint, uint8, uint16, uint32, uint64:
		return x
	case json.Number:
		if ContainsCredential(string(x)) {
			return RedactedMarker(x)
		}
		return x
	case string:
		shown, _ := r.redactString(x)
		return shown
	case map[string]any:
		out := make(map[string]any, len(x))
		for _, k := range viewKeys(x) {
			if IsSensitiveKey(k.orig) {
				out[k.shown] = RedactedMarker(x[k.orig])
				continue
			}
			out[k.shown] = r.redactValue(x[k.orig], depth+1)
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = r.redactValue(e, depth+1)
		}
		return out
	}
	g, ok := toGeneric(v)
	if !ok {
		return Unrepresentable
	}
	return r.redactValue(g, depth+1)
}

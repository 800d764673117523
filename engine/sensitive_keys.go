package engine

import "strings"

// sensitiveKeyParts are matched as substrings of a normalized key (lower
// case, letters and digits only), so api_key, API-Key and x_api_key all hit.
var sensitiveKeyParts = []string{
	"password", "passwd", "passphrase", "secret", "token", "apikey",
	"authorization", "credential", "privatekey", "cookie", "session",
	"accesskey", "signingkey", "clientkey",
}

// IsSensitiveKey reports whether an argument named key holds a value the
// approval view must never show, whatever the value looks like.
func IsSensitiveKey(key string) bool {
	var buf [64]byte
	n := 0
	for i := 0; i < len(key); i++ {
		c := key[i]
		switch {
		case c >= 'A' && c <= 'Z':
			c += 'a' - 'A'
		case c >= 'a' && c <= 'z', c >= '0' && c <= '9':
		default:
			continue
		}
		if n == len(buf) {
			// A key this long is unusual; check it without the fast buffer.
			return isSensitiveLong(key)
		}
		buf[n] = c
		n++
	}
	norm := buf[:n]
	for _, part := range sensitiveKeyParts {
		if strings.Contains(string(norm), part) {
			return true
		}
	}
	return false
}

func isSensitiveLong(key string) bool {
	var b strings.Builder
	for _, r := range strings.ToLower(key) {
		if (r >= 'a' && r <= 'z') || (r >= '0' && r <= '9') {
			b.WriteRune(r)
		}
	}
	norm := b.String()
	for _, part := range sensitiveKeyParts {
		if strings.Contains(norm, part) {
			return true
		}
	}
	return false
}

package auth

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"hash/crc32"
	"strings"
)

// Token format: tokenPrefix, then tokenRandomLen random base62 characters,
// then tokenChecksumLen base62 characters of the CRC32 (IEEE) of the random
// part, most significant digit first, zero-padded. The prefix is ours, so
// secret scanners and our own credential rule file a leaked token as
// Gatehouse's; the checksum catches a mistyped token before any lookup.
const (
	tokenPrefix      = "gatehouse_"
	tokenRandomLen   = 40
	tokenChecksumLen = 6 // 62^6 > 2^32
	base62           = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
)

// NewToken returns a fresh bearer token (40 random base62 characters, 238
// bits) and the SHA-256 hex digest to store in the principals file. Only the
// digest is kept.
func NewToken() (token, sha256hex string, err error) {
	random := make([]byte, 0, tokenRandomLen)
	buf := make([]byte, 64)
	for len(random) < tokenRandomLen {
		if _, err := rand.Read(buf); err != nil {
			return "", "", fmt.Errorf("auth: reading random bytes: %w", err)
		}
		for _, b := range buf {
			// 248 = 4*62: rejecting the bytes above it keeps every digit
			// equally likely.
			if b < 248 && len(random) < tokenRandomLen {
				random = append(random, base62[b%62])
			}
		}
	}
	token = tokenPrefix + string(random) + tokenChecksum(string(random))
	return token, HashToken(token), nil
}

// tokenChecksum is the base62 CRC32 of a token's random part.
func tokenChecksum(random string) string {
	var out [tokenChecksumLen]byte
	n := crc32.ChecksumIEEE([]byte(random))
	for i := tokenChecksumLen - 1; i >= 0; i-- {
		out[i] = base62[n%62]
		n /= 62
	}
	return string(out[:])
}

// tokenMalformed reports a token that claims our format (it has the prefix)
// but is not well formed: wrong length, a character outside base62, or a
// checksum that does not match. Such a token is a typo or a forgery and is
// refused without a lookup. Tokens without the prefix (the older ghs_ ones,
// anything else) are not judged here and are looked up by digest as before.
func tokenMalformed(token string) bool {
	body, ok := strings.CutPrefix(token, tokenPrefix)
	if !ok {
		return false
	}
	if len(body) != tokenRandomLen+tokenChecksumLen {
		return true
	}
	for i := range len(body) {
		if strings.IndexByte(base62, body[i]) < 0 {
			return true
		}
	}
	return tokenChecksum(body[:tokenRandomLen]) != body[tokenRandomLen:]
}

// HashToken is the lower-case hex SHA-256 of a token.
func HashToken(token string) string {
	sum := sha256.Sum256([]byte(token))
	return hex.EncodeToString(sum[:])
}

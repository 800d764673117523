package auth

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"fmt"
)

// tokenPrefix makes a leaked token recognizable to secret scanners.
const tokenPrefix = "ghs_"

// NewToken returns a fresh bearer token (256 random bits) and the SHA-256
// hex digest to store in the principals file. Only the digest is kept.
func NewToken() (token, sha256hex string, err error) {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return "", "", fmt.Errorf("auth: reading random bytes: %w", err)
	}
	token = tokenPrefix + base64.RawURLEncoding.EncodeToString(b)
	return token, HashToken(token), nil
}

// HashToken is the lower-case hex SHA-256 of a token.
func HashToken(token string) string {
	sum := sha256.Sum256([]byte(token))
	return hex.EncodeToString(sum[:])
}

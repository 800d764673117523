package auth

import (
	"crypto/rand"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"fmt"
	"strings"

	"golang.org/x/crypto/argon2"
)

// Argon2id parameters for new hashes (RFC 9106's second recommended
// option, memory-constrained: 64 MiB, 3 passes). Verification reads the
// parameters from the stored string, so raising these later keeps old
// hashes valid.
const (
	argonMemoryKiB = 64 * 1024
	argonTime      = 3
	argonThreads   = 2
	argonSaltLen   = 16
	argonKeyLen    = 32
)

var b64 = base64.RawStdEncoding

// HashPassword returns the argon2id PHC string of pw:
// $argon2id$v=19$m=65536,t=3,p=2$<salt>$<hash>.
func HashPassword(pw string) (string, error) {
	if pw == "" {
		return "", errors.New("auth: empty password")
	}
	salt := make([]byte, argonSaltLen)
	if _, err := rand.Read(salt); err != nil {
		return "", fmt.Errorf("auth: reading salt: %w", err)
	}
	key := argon2.IDKey([]byte(pw), salt, argonTime, argonMemoryKiB, argonThreads, argonKeyLen)
	return fmt.Sprintf("$argon2id$v=%d$m=%d,t=%d,p=%d$%s$%s",
		argon2.Version, argonMemoryKiB, argonTime, argonThreads, b64.EncodeToString(salt), b64.EncodeToString(key)), nil
}

// phc is a parsed argon2id PHC string.
type phc struct {
	memory  uint32
	time    uint32
	threads uint8
	salt    []byte
	key     []byte
}

// Bounds on parameters read from a file: a typo (or a hostile file) must not
// make one login allocate gigabytes.
const (
	maxArgonMemoryKiB = 1024 * 1024
	maxArgonTime      = 20
)

func parsePHC(s string) (phc, error) {
	parts := strings.Split(s, "$")
	if len(parts) != 6 || parts[0] != "" || parts[1] != "argon2id" {
		return phc{}, errors.New("not an argon2id PHC string ($argon2id$v=19$m=...,t=...,p=...$salt$hash)")
	}
	var version int
	if _, err := fmt.Sscanf(parts[2], "v=%d", &version); err != nil || version != argon2.Version {
		return phc{}, fmt.Errorf("unsupported argon2 version %q", parts[2])
	}
	var p phc
	if _, err := fmt.Sscanf(parts[3], "m=%d,t=%d,p=%d", &p.memory, &p.time, &p.threads); err != nil {
		return phc{}, fmt.Errorf("bad argon2 parameters %q", parts[3])
	}
	if p.memory < 8 || p.memory > maxArgonMemoryKiB || p.time < 1 || p.time > maxArgonTime || p.threads < 1 {
		return phc{}, fmt.Errorf("argon2 parameters out of range %q", parts[3])
	}
	var err error
	if p.salt, err = b64.DecodeString(parts[4]); err != nil || len(p.salt) < 8 {
		return phc{}, errors.New("bad argon2 salt")
	}
	if p.key, err = b64.DecodeString(parts[5]); err != nil || len(p.key) < 16 {
		return phc{}, errors.New("bad argon2 hash")
	}
	return p, nil
}

// verify reports whether pw matches; the comparison is constant-time.
func (p phc) verify(pw string) bool {
	key := argon2.IDKey([]byte(pw), p.salt, p.time, p.memory, p.threads, uint32(len(p.key)))
	return subtle.ConstantTimeCompare(key, p.key) == 1
}

package main

import (
	"bytes"
	"regexp"
	"testing"

	"gatehouse/auth"
)

// new-token prints a token in the gatehouse_ format and the digest of
// exactly that token.
func TestPrincipalNewTokenPrintsPrefixedToken(t *testing.T) {
	t.Parallel()
	var out bytes.Buffer
	if err := runPrincipal([]string{"new-token"}, nil, &out); err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^token:  (gatehouse_[A-Za-z0-9]{46})\nsha256: ([0-9a-f]{64})$`).FindStringSubmatch(out.String())
	if m == nil {
		t.Fatalf("output %q lacks a gatehouse_ token and its sha256", out.String())
	}
	if auth.HashToken(m[1]) != m[2] {
		t.Fatalf("printed sha256 %s is not the token's digest", m[2])
	}
}

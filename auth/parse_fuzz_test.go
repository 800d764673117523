package auth

import (
	"testing"

	"gatehouse/engine"
)

// FuzzParse: a principals file either loads into principals whose scopes
// are all in the vocabulary or MCP scopes, or is refused with an error;
// never a panic.
func FuzzParse(f *testing.F) {
	f.Add([]byte("principals:\n  - id: alice\n    tenant_id: acme\n    scopes: [approval.read]\n    tokens:\n      - {name: a, sha256: \"9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08\"}\n"))
	f.Add([]byte("principals:\n  - id: bob\n    tenant_id: acme\n    scopes: [run.write]\n    password_argon2id: \"$argon2id$v=19$m=8,t=1,p=1$c2FsdHNhbHQ$aGFzaGhhc2hoYXNoaGFzaA\"\n"))
	f.Add([]byte("principals:\n  - id: x\n    tenant_id: t\n    scopes: [mcp.files.write]\n"))
	f.Add([]byte("principals: [}\n"))
	f.Add([]byte(""))
	f.Fuzz(func(t *testing.T, data []byte) {
		d, err := Parse(data)
		if err != nil {
			if d != nil {
				t.Fatalf("both a directory and an error: %v", err)
			}
			return
		}
		for _, p := range d.Principals() {
			for _, s := range p.Scopes {
				if engine.ValidPrincipalScope(s) != nil {
					t.Fatalf("principal %q holds %q, outside the vocabulary and the MCP grammar", p.ID, s)
				}
			}
		}
	})
}

// FuzzParsePHC: a stored password hash parses within the parameter bounds
// or is refused; a parsed one never panics when verified.
func FuzzParsePHC(f *testing.F) {
	f.Add("$argon2id$v=19$m=8,t=1,p=1$c2FsdHNhbHQ$aGFzaGhhc2hoYXNoaGFzaA")
	f.Add("$argon2id$v=19$m=65536,t=3,p=2$$")
	f.Add("$argon2i$v=19$m=8,t=1,p=1$c2FsdA$aGFzaA")
	f.Fuzz(func(t *testing.T, s string) {
		p, err := parsePHC(s)
		if err != nil {
			return
		}
		if p.memory > 64*1024 || p.time > 4 {
			return // a valid but costly hash: bounded, not worth hashing here
		}
		_ = p.verify("password")
	})
}

package rules

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"testing"
)

func TestParseGrantSitesIsStrict(t *testing.T) {
	t.Parallel()
	good := []byte("tenants:\n  acme:\n    - {origin: \"https://shop.example\", path_prefix: /cart/}\n")
	g, err := ParseGrantSites("sites.yaml", good)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := g.Offer("acme", "https://shop.example/cart/1"); !ok {
		t.Fatal("no offer in the configured scope")
	}
	for name, b := range map[string]string{
		"unknown key":  "tenants:\n  acme:\n    - {origin: \"https://shop.example\", path_prefix: /, budget: 5}\n",
		"bad origin":   "tenants:\n  acme:\n    - {origin: \"https://shop.example/x\", path_prefix: /}\n",
		"two docs":     "tenants: {}\n---\ntenants: {}\n",
		"empty tenant": "tenants:\n  \"\":\n    - {origin: \"https://shop.example\", path_prefix: /}\n",
	} {
		_, err := ParseGrantSites("sites.yaml", []byte(b))
		if le, ok := errors.AsType[*LoadError](err); !ok || le.File != "sites.yaml" {
			t.Errorf("%s: %v, want a LoadError naming the file", name, err)
		}
	}
}

// The bounded_browser_scroll condition is part of the hashed profile: a
// profile that drops it has another policy_version.
func TestBoundedScrollMovesPolicyVersion(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	without := bytes.Replace(defaultYAML, []byte("  browser.act: {condition: bounded_browser_scroll, decision: allow, otherwise: require_approval}\n"), nil, 1)
	if bytes.Equal(without, defaultYAML) {
		t.Fatal("the default profile has no bounded_browser_scroll rule")
	}
	if err := os.WriteFile(filepath.Join(dir, "noscroll.yaml"), without, 0o600); err != nil {
		t.Fatal(err)
	}
	set, err := Load(Options{PolicyDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	a, _ := set.Ruleset(DefaultProfile)
	b, _ := set.Ruleset("noscroll")
	if a.PolicyVersion() == b.PolicyVersion() {
		t.Fatal("dropping bounded_browser_scroll kept the policy_version")
	}
}

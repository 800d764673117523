package rules

import (
	"errors"
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

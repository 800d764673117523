package main

import (
	"io"
	"strings"
	"testing"

	"github.com/SherClockHolmes/webpush-go"
)

// The VAPID pair from the environment is taken only whole and matching:
// half a pair, or a public key of another private key, stops serve at
// start instead of producing pushes every push service refuses.
func TestServeVAPIDKeysFromTheEnvironment(t *testing.T) {
	t.Parallel()
	private, public, err := webpush.GenerateVAPIDKeys()
	if err != nil {
		t.Fatal(err)
	}
	_, otherPublic, err := webpush.GenerateVAPIDKeys()
	if err != nil {
		t.Fatal(err)
	}
	env := func(pub, priv string) envConfig {
		return loadEnvConfig(func(name string) string {
			return map[string]string{
				"DATABASE_URL": "postgres://x", "CONSOLE_VAPID_PUBLIC_KEY": pub, "CONSOLE_VAPID_PRIVATE_KEY": priv,
			}[name]
		})
	}
	cfg, err := parseServeConfig(env(public, private), nil, io.Discard)
	if err != nil || cfg.vapid != (vapidKeys{public: public, private: private}) {
		t.Fatalf("a whole pair: %+v, %v", cfg.vapid, err)
	}
	if cfg, err := parseServeConfig(env("", ""), nil, io.Discard); err != nil || cfg.vapid != (vapidKeys{}) {
		t.Fatalf("no pair (the stored one is used): %+v, %v", cfg.vapid, err)
	}
	for name, c := range map[string][2]string{
		"public only":         {public, ""},
		"private only":        {"", private},
		"mismatched pair":     {otherPublic, private},
		"private not base64":  {public, "not base64!"},
		"private not a point": {public, strings.Repeat("A", 43)},
	} {
		if _, err := parseServeConfig(env(c[0], c[1]), nil, io.Discard); err == nil || !strings.Contains(err.Error(), "CONSOLE_VAPID") {
			t.Errorf("%s: err = %v, want one naming the variable", name, err)
		}
	}
}

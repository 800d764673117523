package notify

import (
	"os"
	"testing"
)

// FuzzLoadConfig: any bytes either load into a configuration whose routes
// name only configured channels, or fail with a nil configuration; never a
// panic.
func FuzzLoadConfig(f *testing.F) {
	example, err := os.ReadFile("testdata/example.yaml")
	if err != nil {
		f.Fatal(err)
	}
	f.Add(example)
	f.Add([]byte("channels:\n  - {name: stdout, type: log}\nroutes:\n  - {tenants: ['*'], channels: [stdout]}\n"))
	f.Add([]byte("delivery: {timeout: 10}\n"))
	f.Add([]byte("channels: [{name: a, type: webhook, url: 'https://h/x', secret_env: [GATEHOUSE_WEBHOOK_SECRET]}]\n---\n"))
	f.Add([]byte("&a [*a]"))
	f.Fuzz(func(t *testing.T, b []byte) {
		cfg, err := ParseConfig("fuzz.yaml", b, testEnv)
		if err != nil {
			if cfg != nil {
				t.Fatalf("error %v with a configuration", err)
			}
			return
		}
		names := map[string]bool{}
		for _, n := range cfg.ChannelNames() {
			names[n] = true
		}
		for _, risk := range []string{"low", "critical", "?"} {
			for _, n := range cfg.Routes("acme", risk) {
				if !names[n] {
					t.Fatalf("route to unknown channel %q", n)
				}
			}
		}
		_ = cfg.Delivery.Backoff(100, func() float64 { return 0.5 })
	})
}

package notify

import (
	"bytes"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestLoadConfigAcceptsTheDocumentedExample(t *testing.T) {
	t.Parallel()
	cfg, err := LoadConfig("testdata/example.yaml", testEnv)
	if err != nil {
		t.Fatal(err)
	}
	want := DeliverySettings{MaxAttempts: 8, BackoffBase: 2 * time.Second, BackoffMax: 10 * time.Minute, Timeout: 10 * time.Second, ExpiringShare: 0.8, ExpiringBefore: 10 * time.Minute}
	if cfg.Delivery != want {
		t.Errorf("delivery %+v", cfg.Delivery)
	}
	keys, _ := GenerateVAPIDKeys()
	chs, err := cfg.Build(BuildOptions{VAPID: keys, Subscriber: "mailto:ops@example.com"})
	if err != nil {
		t.Fatal(err)
	}
	for name, typ := range map[string]string{"ops-hook": TypeWebhook, "slack": TypeSlack, "phones": TypeNtfy, "console-push": TypeWebPush, "stdout": TypeLog} {
		if ch := chs[name]; ch == nil || ch.Type() != typ || ch.Name() != name || ch.IncludeArguments() {
			t.Errorf("channel %s: %#v", name, ch)
		}
	}
	if s, ok := chs["slack"].(*slack); !ok || s.apiURL != DefaultSlackAPIURL {
		t.Errorf("default api_url %q", s.apiURL)
	}
}

func TestConfigPrintsNoSecret(t *testing.T) {
	t.Parallel()
	cfg, err := LoadConfig("testdata/example.yaml", testEnv)
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	slog.New(slog.NewTextHandler(&b, nil)).Info("loaded", "cfg", cfg)
	fmt.Fprintf(&b, "%+v %#v", cfg, cfg)
	mustNotContain(t, "printed config", b.String(), testSecret[6:], "xoxb-test-token", "tk_testtoken")
}

func TestLoadConfigDefaultsTheDeliverySection(t *testing.T) {
	t.Parallel()
	cfg, err := ParseConfig("t.yaml", []byte("channels:\n  - {name: stdout, type: log}\n"), testEnv)
	if err != nil {
		t.Fatal(err)
	}
	if d := cfg.Delivery; d.MaxAttempts != DefaultMaxAttempts || d.Timeout != DefaultTimeout || d.ExpiringShare != DefaultExpiringShare {
		t.Errorf("defaults: %+v", d)
	}
	if cfg.UsesWebPush() || len(cfg.Routes("acme", "critical")) != 0 {
		t.Error("a log-only file with no routes routes nothing and needs no VAPID")
	}
}

func TestLoadConfigRefusesWithFileAndLine(t *testing.T) {
	t.Parallel()
	const log = "  - {name: stdout, type: log}\n"
	cases := []struct{ name, yaml, want string }{
		{"unknown key", "channels:\n  - {name: a, type: log, colour: red}\n", "t.yaml:2: field colour not found"},
		{"no channels", "routes: []\n", "t.yaml: at least one channel is required"},
		{"empty file", "", "no YAML document"},
		{"two documents", "channels:\n" + log + "---\nchannels: []\n", "exactly one YAML document"},
		{"duplicate name", "channels:\n" + log + log, `t.yaml:3: channel "stdout": name is used by another channel`},
		{"bad name", "channels:\n  - {name: Ops Hook, type: log}\n", "t.yaml:2: channel \"Ops Hook\": name must be"},
		{"unknown type", "channels:\n  - {name: a, type: email}\n", `unknown type "email"`},
		{"field of another type", "channels:\n  - {name: a, type: log, topic: x}\n", "topic does not apply to a log channel"},
		{"webhook relative url", "channels:\n  - {name: a, type: webhook, url: /hook, secret_env: GATEHOUSE_WEBHOOK_SECRET}\n", "url must be an absolute http(s) URL"},
		{"webhook ftp url", "channels:\n  - {name: a, type: webhook, url: 'ftp://h/x', secret_env: GATEHOUSE_WEBHOOK_SECRET}\n", "url must be an absolute http(s) URL"},
		{"webhook url with credentials", "channels:\n  - {name: a, type: webhook, url: 'https://u:p@h/x', secret_env: GATEHOUSE_WEBHOOK_SECRET}\n", "without credentials"},
		{"webhook no secret", "channels:\n  - {name: a, type: webhook, url: 'https://h/x'}\n", "secret_env names"},
		{"webhook empty env", "channels:\n  - {name: a, type: webhook, url: 'https://h/x', secret_env: [UNSET_VAR]}\n", "environment variable UNSET_VAR is empty or unset"},
		{"webhook secret not whsec", "channels:\n  - {name: a, type: webhook, url: 'https://h/x', secret_env: SLACK_BOT_TOKEN}\n", "whsec_<base64>"},
		{"webhook short secret", "channels:\n  - {name: a, type: webhook, url: 'https://h/x', secret_env: SHORT}\n", "at least 24"},
		{"env name", "channels:\n  - {name: a, type: slack, token_env: 'A-B', channel: C1}\n", `"A-B" is not an environment variable name`},
		{"slack no channel", "channels:\n  - {name: a, type: slack, token_env: SLACK_BOT_TOKEN}\n", "channel (the Slack channel id"},
		{"slack no token", "channels:\n  - {name: a, type: slack, channel: C1}\n", "token_env names"},
		{"ntfy bad topic", "channels:\n  - {name: a, type: ntfy, url: 'https://ntfy.sh', topic: 'a/b'}\n", "topic must be"},
		{"webpush with arguments", "channels:\n  - {name: a, type: webpush, include_arguments: true}\n", "include_arguments does not apply to a webpush channel"},
		{"route unknown channel", "channels:\n" + log + "routes:\n  - {tenants: ['*'], channels: [slack]}\n", `t.yaml:4: route names unknown channel "slack"`},
		{"route unknown risk", "channels:\n" + log + "routes:\n  - {tenants: ['*'], min_risk: severe, channels: [stdout]}\n", `unknown min_risk "severe"`},
		{"route without tenants", "channels:\n" + log + "routes:\n  - {channels: [stdout]}\n", "route needs tenants"},
		{"route without channels", "channels:\n" + log + "routes:\n  - {tenants: [acme]}\n", "route needs channels"},
		{"attempts", "delivery: {max_attempts: 0}\nchannels:\n" + log, "t.yaml:1: max_attempts"},
		{"backoff order", "delivery: {backoff_base: 1m, backoff_max: 1s}\nchannels:\n" + log, "backoff_base must be positive"},
		{"duration as number", "delivery: {timeout: 10}\nchannels:\n" + log, "t.yaml:1:"},
		{"share", "delivery: {expiring_share: 1.5}\nchannels:\n" + log, "expiring_share"},
		{"timeout", "delivery: {timeout: 1h}\nchannels:\n" + log, "timeout must be"},
	}
	env := func(name string) string {
		if name == "SHORT" {
			return "whsec_c2hvcnQ="
		}
		return testEnv(name)
	}
	for _, c := range cases {
		cfg, err := ParseConfig("t.yaml", []byte(c.yaml), env)
		var ce *ConfigError
		if cfg != nil || !errors.As(err, &ce) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: got %v, want an error containing %q", c.name, err, c.want)
		}
		if err != nil && strings.Contains(err.Error(), "whsec_c2hvcnQ=") {
			t.Errorf("%s: the error shows the secret: %v", c.name, err)
		}
	}
}

func TestLoadConfigNamesAMissingFile(t *testing.T) {
	t.Parallel()
	if _, err := LoadConfig("testdata/missing.yaml", os.Getenv); err == nil || !strings.Contains(err.Error(), "testdata/missing.yaml") {
		t.Fatalf("got %v", err)
	}
}

func TestRoutesAreTheUnionOfMatchingRoutesInFileOrder(t *testing.T) {
	t.Parallel()
	cfg, err := LoadConfig("testdata/example.yaml", testEnv)
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		tenant, risk string
		want         []string
	}{
		{"other", "low", []string{"stdout", "ops-hook"}},
		{"other", "high", []string{"stdout", "ops-hook", "slack", "phones", "console-push"}},
		{"acme", "medium", []string{"stdout", "ops-hook", "slack"}},
		{"acme", "critical", []string{"stdout", "ops-hook", "slack", "phones", "console-push"}}, // slack once
		{"acme", "not-a-risk", []string{"stdout", "ops-hook", "slack", "phones", "console-push"}},
	}
	for _, c := range cases {
		if got := cfg.Routes(c.tenant, c.risk); !slices.Equal(got, c.want) {
			t.Errorf("Routes(%s, %s) = %v, want %v", c.tenant, c.risk, got, c.want)
		}
	}
	if got := cfg.ChannelNames(); !slices.Equal(got, []string{"ops-hook", "slack", "phones", "console-push", "stdout"}) {
		t.Errorf("ChannelNames = %v", got)
	}
}

func TestBackoffDoublesUpToTheCapWithFullJitter(t *testing.T) {
	t.Parallel()
	d := DeliverySettings{BackoffBase: 2 * time.Second, BackoffMax: 10 * time.Minute}
	top := func() float64 { return 0.999999 }
	cases := map[int]time.Duration{0: 2 * time.Second, 1: 2 * time.Second, 2: 4 * time.Second, 3: 8 * time.Second, 9: 512 * time.Second, 10: 10 * time.Minute, 70: 10 * time.Minute, 1 << 30: 10 * time.Minute}
	for attempt, ceiling := range cases {
		got := d.Backoff(attempt, top)
		if got > ceiling || got < ceiling*99/100 {
			t.Errorf("attempt %d: %v, want just under %v", attempt, got, ceiling)
		}
		if half := d.Backoff(attempt, func() float64 { return 0.5 }); half != ceiling/2 {
			t.Errorf("attempt %d at 0.5: %v, want %v", attempt, half, ceiling/2)
		}
		if zero := d.Backoff(attempt, func() float64 { return 0 }); zero != 0 {
			t.Errorf("attempt %d at 0: %v", attempt, zero)
		}
	}
	for _, bad := range []float64{-1, 1, 7} {
		if got := d.Backoff(3, func() float64 { return bad }); got < 0 || got > 8*time.Second {
			t.Errorf("rnd %v: %v", bad, got)
		}
	}
}

func TestPermanentWrapsAndIsDetectedThroughWrapping(t *testing.T) {
	t.Parallel()
	base := errors.New("HTTP 400")
	err := Permanent(base)
	if !IsPermanent(err) || !errors.Is(err, base) || err.Error() != "HTTP 400" {
		t.Fatalf("%v", err)
	}
	if wrapped := errors.Join(errors.New("ctx"), err); !IsPermanent(wrapped) {
		t.Error("wrapped permanence lost")
	}
	if Permanent(nil) != nil || IsPermanent(base) || IsPermanent(nil) {
		t.Error("nil or plain errors are not permanent")
	}
}

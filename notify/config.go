package notify

import (
	"errors"
	"fmt"
	"log/slog"
	"math"
	"net/http"
	"net/url"
	"os"
	"regexp"
	"slices"
	"strings"
	"time"

	"gopkg.in/yaml.v3"

	"gatehouse/internal/strictyaml"
)

// Defaults of the delivery section.
const (
	DefaultMaxAttempts    = 8
	DefaultBackoffBase    = 2 * time.Second
	DefaultBackoffMax     = 10 * time.Minute
	DefaultTimeout        = 10 * time.Second
	DefaultExpiringShare  = 0.8
	DefaultExpiringBefore = 10 * time.Minute
	DefaultSlackAPIURL    = "https://slack.com/api"
)

// DeliverySettings say how the outbox worker retries and when "expiring soon" fires.
type DeliverySettings struct {
	MaxAttempts    int           // attempts per notification and channel, the first included
	BackoffBase    time.Duration // the first retry waits up to this long ...
	BackoffMax     time.Duration // ... doubling per attempt up to this cap
	Timeout        time.Duration // per HTTP request
	ExpiringShare  float64       // "expiring soon" at this share of the approval's lifetime ...
	ExpiringBefore time.Duration // ... or this long before expiry, whichever comes first
}

// Backoff is the wait before retry number attempt (1 after the first
// failure): exponential, capped at BackoffMax, with full jitter (a uniform
// draw below the cap, rnd returning [0,1)), so replicas retrying the same
// dead receiver spread out instead of stampeding it.
func (d DeliverySettings) Backoff(attempt int, rnd func() float64) time.Duration {
	ceiling := d.BackoffMax
	if attempt < 1 {
		attempt = 1
	}
	if shift := attempt - 1; shift < 62 && d.BackoffBase <= d.BackoffMax>>shift {
		ceiling = d.BackoffBase << shift
	}
	f := rnd()
	if f < 0 || f >= 1 || math.IsNaN(f) {
		f = 0
	}
	return time.Duration(f * float64(ceiling))
}

// Config is a loaded CONSOLE_NOTIFY file. It holds the names of the
// environment variables with the secrets, never their values: Build reads
// them, so printing a Config leaks nothing.
type Config struct {
	File     string
	Delivery DeliverySettings
	channels []channelSpec
	routes   []route
	getenv   func(string) string
}

type channelSpec struct {
	Name             string   `yaml:"name"`
	Type             string   `yaml:"type"`
	URL              string   `yaml:"url"`
	SecretEnv        envNames `yaml:"secret_env"`
	TokenEnv         string   `yaml:"token_env"`
	Channel          string   `yaml:"channel"`
	APIURL           string   `yaml:"api_url"`
	Topic            string   `yaml:"topic"`
	IncludeArguments bool     `yaml:"include_arguments"`
}

type route struct {
	Tenants  []string `yaml:"tenants"`
	MinRisk  string   `yaml:"min_risk"`
	Channels []string `yaml:"channels"`
}

type fileConfig struct {
	Delivery struct {
		MaxAttempts    *int           `yaml:"max_attempts"`
		BackoffBase    *time.Duration `yaml:"backoff_base"`
		BackoffMax     *time.Duration `yaml:"backoff_max"`
		Timeout        *time.Duration `yaml:"timeout"`
		ExpiringShare  *float64       `yaml:"expiring_share"`
		ExpiringBefore *time.Duration `yaml:"expiring_before"`
	} `yaml:"delivery"`
	Channels []channelSpec `yaml:"channels"`
	Routes   []route       `yaml:"routes"`
}

// envNames is one environment variable name or a list of them.
type envNames []string

func (e *envNames) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind == yaml.ScalarNode {
		*e = envNames{n.Value}
		return nil
	}
	var list []string
	if err := n.Decode(&list); err != nil {
		return err
	}
	*e = list
	return nil
}

// ConfigError says where a notification file is wrong: file:line and what.
type ConfigError struct {
	File string
	Line int // 0 when no single line is at fault
	Msg  string
}

func (e *ConfigError) Error() string {
	if e.Line > 0 {
		return fmt.Sprintf("%s:%d: %s", e.File, e.Line, e.Msg)
	}
	return e.File + ": " + e.Msg
}

var (
	channelNameRE = regexp.MustCompile(`^[a-z0-9][a-z0-9_-]{0,62}$`)
	envNameRE     = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]{0,127}$`)
	ntfyTopicRE   = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)
)

// LoadConfig reads and validates a notification file. Every secret is named
// by an environment variable read through getenv (os.Getenv when nil); an
// empty one fails here, at start, not at the first delivery.
func LoadConfig(path string, getenv func(string) string) (*Config, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, &ConfigError{File: path, Msg: "cannot read: " + err.Error()}
	}
	return ParseConfig(path, b, getenv)
}

// ParseConfig is LoadConfig on bytes already read; file names them in errors.
func ParseConfig(file string, b []byte, getenv func(string) string) (*Config, error) {
	if getenv == nil {
		getenv = os.Getenv
	}
	var fc fileConfig
	root, err := strictyaml.Decode(b, &fc)
	if err != nil {
		line, msg := 0, err.Error()
		if se, ok := errors.AsType[*strictyaml.Error](err); ok {
			line, msg = se.Line, se.Msg
		}
		return nil, &ConfigError{File: file, Line: line, Msg: msg}
	}
	c := &Config{File: file, getenv: getenv, channels: fc.Channels, routes: fc.Routes}
	v := validator{file: file, root: root}
	c.Delivery = v.delivery(fc)
	v.channels(c.channels, getenv)
	v.routes(c.routes, c.channels)
	if v.err != nil {
		return nil, v.err
	}
	return c, nil
}

// validator keeps the first error, with the line of the list entry at fault.
type validator struct {
	file string
	root *yaml.Node
	err  error
}

func (v *validator) failf(section string, index int, format string, args ...any) {
	if v.err == nil {
		v.err = &ConfigError{File: v.file, Line: v.line(section, index), Msg: fmt.Sprintf(format, args...)}
	}
}

// line finds the line of root[section][index] (index -1: the section itself).
func (v *validator) line(section string, index int) int {
	doc := v.root
	if doc.Kind == yaml.DocumentNode && len(doc.Content) == 1 {
		doc = doc.Content[0]
	}
	if doc.Kind != yaml.MappingNode {
		return 0
	}
	for i := 0; i+1 < len(doc.Content); i += 2 {
		if doc.Content[i].Value != section {
			continue
		}
		val := doc.Content[i+1]
		if index >= 0 && val.Kind == yaml.SequenceNode && index < len(val.Content) {
			return val.Content[index].Line
		}
		return doc.Content[i].Line
	}
	return 0
}

func (v *validator) delivery(fc fileConfig) DeliverySettings {
	d := DeliverySettings{
		MaxAttempts: DefaultMaxAttempts, BackoffBase: DefaultBackoffBase, BackoffMax: DefaultBackoffMax,
		Timeout: DefaultTimeout, ExpiringShare: DefaultExpiringShare, ExpiringBefore: DefaultExpiringBefore,
	}
	f := fc.Delivery
	setIf(&d.MaxAttempts, f.MaxAttempts)
	setIf(&d.BackoffBase, f.BackoffBase)
	setIf(&d.BackoffMax, f.BackoffMax)
	setIf(&d.Timeout, f.Timeout)
	setIf(&d.ExpiringShare, f.ExpiringShare)
	setIf(&d.ExpiringBefore, f.ExpiringBefore)
	switch {
	case d.MaxAttempts < 1 || d.MaxAttempts > 100:
		v.failf("delivery", -1, "max_attempts must be between 1 and 100")
	case d.BackoffBase <= 0 || d.BackoffMax < d.BackoffBase:
		v.failf("delivery", -1, "backoff_base must be positive and at most backoff_max")
	case d.BackoffMax > 24*time.Hour:
		v.failf("delivery", -1, "backoff_max must be at most 24h")
	case d.Timeout <= 0 || d.Timeout > 5*time.Minute:
		v.failf("delivery", -1, "timeout must be positive and at most 5m")
	case !(d.ExpiringShare > 0 && d.ExpiringShare <= 1):
		v.failf("delivery", -1, "expiring_share must be in (0, 1]")
	case d.ExpiringBefore < 0:
		v.failf("delivery", -1, "expiring_before must not be negative")
	}
	return d
}

func setIf[T any](dst *T, src *T) {
	if src != nil {
		*dst = *src
	}
}

// fields says which optional keys a channel type takes; a key set on a type
// that ignores it is refused, so a typo'd layout cannot pass silently.
var fields = map[string][]string{
	TypeWebhook: {"url", "secret_env", "include_arguments"},
	TypeSlack:   {"token_env", "channel", "api_url", "include_arguments"},
	TypeNtfy:    {"url", "topic", "token_env", "include_arguments"},
	TypeWebPush: {},
	TypeLog:     {"include_arguments"},
}

func (v *validator) channels(chs []channelSpec, getenv func(string) string) {
	if len(chs) == 0 {
		v.failf("channels", -1, "at least one channel is required")
	}
	seen := map[string]bool{}
	for i := range chs {
		ch := &chs[i]
		fail := func(format string, args ...any) {
			v.failf("channels", i, "channel %q: "+format, append([]any{ch.Name}, args...)...)
		}
		if !channelNameRE.MatchString(ch.Name) {
			fail("name must be lower-case letters, digits, - and _ (at most 63)")
			continue
		}
		if seen[ch.Name] {
			fail("name is used by another channel")
		}
		seen[ch.Name] = true
		allowed, ok := fields[ch.Type]
		if !ok {
			fail("unknown type %q (webhook, slack, ntfy, webpush, log)", ch.Type)
			continue
		}
		set := map[string]bool{
			"url": ch.URL != "", "secret_env": len(ch.SecretEnv) > 0, "token_env": ch.TokenEnv != "",
			"channel": ch.Channel != "", "api_url": ch.APIURL != "", "topic": ch.Topic != "", "include_arguments": ch.IncludeArguments,
		}
		for _, k := range []string{"url", "secret_env", "token_env", "channel", "api_url", "topic", "include_arguments"} {
			if set[k] && !slices.Contains(allowed, k) {
				fail("%s does not apply to a %s channel", k, ch.Type)
			}
		}
		env := func(name string) string {
			if !envNameRE.MatchString(name) {
				fail("%q is not an environment variable name", name)
				return ""
			}
			val := getenv(name)
			if val == "" {
				fail("environment variable %s is empty or unset", name)
			}
			return val
		}
		switch ch.Type {
		case TypeWebhook:
			if !absoluteHTTP(ch.URL) {
				fail("url must be an absolute http(s) URL without credentials")
			}
			if len(ch.SecretEnv) == 0 {
				fail("secret_env names the environment variable(s) with the whsec_ secret")
			}
			for _, name := range ch.SecretEnv {
				if val := env(name); val != "" {
					if _, err := decodeSecret(val); err != nil {
						fail("%s: %v", name, err)
					}
				}
			}
		case TypeSlack:
			if ch.TokenEnv == "" {
				fail("token_env names the environment variable with the bot token")
			} else {
				env(ch.TokenEnv)
			}
			if ch.Channel == "" {
				fail("channel (the Slack channel id, e.g. C0123456) is required")
			}
			if ch.APIURL == "" {
				ch.APIURL = DefaultSlackAPIURL
			}
			ch.APIURL = strings.TrimSuffix(ch.APIURL, "/")
			if !absoluteHTTP(ch.APIURL) {
				fail("api_url must be an absolute http(s) URL without credentials")
			}
		case TypeNtfy:
			if !absoluteHTTP(ch.URL) {
				fail("url (the ntfy server) must be an absolute http(s) URL without credentials")
			}
			if !ntfyTopicRE.MatchString(ch.Topic) {
				fail("topic must be 1 to 64 letters, digits, - and _")
			}
			if ch.TokenEnv != "" {
				env(ch.TokenEnv)
			}
		}
	}
}

func (v *validator) routes(rs []route, chs []channelSpec) {
	for i, r := range rs {
		fail := func(format string, args ...any) { v.failf("routes", i, format, args...) }
		if len(r.Tenants) == 0 {
			fail("route needs tenants (a list of tenant ids, or [\"*\"] for all)")
		}
		for _, t := range r.Tenants {
			if strings.TrimSpace(t) == "" {
				fail("route has an empty tenant id")
			}
		}
		if r.MinRisk != "" && riskPriority[r.MinRisk] == 0 {
			fail("unknown min_risk %q (low, medium, high, critical)", r.MinRisk)
		}
		if len(r.Channels) == 0 {
			fail("route needs channels")
		}
		for _, name := range r.Channels {
			if !slices.ContainsFunc(chs, func(c channelSpec) bool { return c.Name == name }) {
				fail("route names unknown channel %q", name)
			}
		}
	}
}

// absoluteHTTP reports whether s is an absolute http(s) URL with a host and
// no user info (credentials belong in an environment variable).
func absoluteHTTP(s string) bool {
	u, err := url.Parse(s)
	return err == nil && (u.Scheme == "http" || u.Scheme == "https") && u.Host != "" && u.User == nil
}

// Routes returns the channels a notification for tenantID at risk goes to:
// the union of every matching route (a route matches when it lists the
// tenant or "*" and the risk is at least its min_risk), each name once, in
// the order routes and their channels are written. A risk outside the
// vocabulary matches every route: too many notifications beat a lost one.
func (c *Config) Routes(tenantID, risk string) []string {
	rank, known := riskPriority[risk]
	if !known {
		rank = math.MaxInt
	}
	var out []string
	for _, r := range c.routes {
		forTenant := slices.Contains(r.Tenants, "*") || slices.Contains(r.Tenants, tenantID)
		if !forTenant || rank < riskPriority[r.MinRisk] {
			continue
		}
		for _, name := range r.Channels {
			if !slices.Contains(out, name) {
				out = append(out, name)
			}
		}
	}
	return out
}

// ChannelNames lists the configured channels in file order (the console's
// test-send list).
func (c *Config) ChannelNames() []string {
	names := make([]string, len(c.channels))
	for i, ch := range c.channels {
		names[i] = ch.Name
	}
	return names
}

// UsesWebPush reports whether a webpush channel is configured, i.e. whether
// the server needs VAPID keys.
func (c *Config) UsesWebPush() bool {
	return slices.ContainsFunc(c.channels, func(ch channelSpec) bool { return ch.Type == TypeWebPush })
}

// BuildOptions are what the channels need from the process.
type BuildOptions struct {
	// HTTPClient sends every request; nil means a client that follows no
	// redirect (a receiver that redirects is misconfigured, and a signed
	// body should not travel to a host the operator did not name).
	HTTPClient *http.Client
	Logger     *slog.Logger // the log channel's; nil means slog.Default()
	VAPID      VAPIDKeys    // webpush only
	Subscriber string       // webpush only: "mailto:..." or an https URL, the VAPID sub claim
}

// Build makes the configured channels, by name.
func (c *Config) Build(opts BuildOptions) (map[string]Channel, error) {
	client := opts.HTTPClient
	if client == nil {
		client = &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	}
	logger := opts.Logger
	if logger == nil {
		logger = slog.Default()
	}
	p := poster{client: client, timeout: c.Delivery.Timeout}
	secret := func(name string) (string, error) {
		if val := c.getenv(name); val != "" {
			return val, nil
		}
		return "", fmt.Errorf("notify: environment variable %s is empty or unset", name)
	}
	out := make(map[string]Channel, len(c.channels))
	for _, ch := range c.channels {
		switch ch.Type {
		case TypeWebhook:
			w := &webhook{name: ch.Name, url: ch.URL, withArgs: ch.IncludeArguments, post: p}
			for _, name := range ch.SecretEnv {
				val, err := secret(name)
				if err != nil {
					return nil, err
				}
				key, err := decodeSecret(val)
				if err != nil {
					return nil, fmt.Errorf("notify: %s: %w", name, err)
				}
				w.keys = append(w.keys, key)
			}
			out[ch.Name] = w
		case TypeSlack:
			token, err := secret(ch.TokenEnv)
			if err != nil {
				return nil, err
			}
			out[ch.Name] = &slack{name: ch.Name, apiURL: ch.APIURL, token: token, channel: ch.Channel, withArgs: ch.IncludeArguments, post: p}
		case TypeNtfy:
			n := &ntfy{name: ch.Name, url: ch.URL, topic: ch.Topic, withArgs: ch.IncludeArguments, post: p}
			if ch.TokenEnv != "" {
				token, err := secret(ch.TokenEnv)
				if err != nil {
					return nil, err
				}
				n.token = token
			}
			out[ch.Name] = n
		case TypeWebPush:
			sub, err := vapidSubscriber(opts)
			if err != nil {
				return nil, err
			}
			out[ch.Name] = &webPush{name: ch.Name, keys: opts.VAPID, subscriber: sub, client: client, timeout: c.Delivery.Timeout}
		case TypeLog:
			out[ch.Name] = &logChannel{name: ch.Name, withArgs: ch.IncludeArguments, logger: logger}
		}
	}
	return out, nil
}

// vapidSubscriber checks the VAPID keys and subscriber and returns the
// subscriber as webpush-go wants it (it prefixes "mailto:" itself).
func vapidSubscriber(opts BuildOptions) (string, error) {
	if opts.VAPID.Public == "" || opts.VAPID.Private == "" {
		return "", errors.New("notify: a webpush channel needs VAPID keys")
	}
	if mail, ok := strings.CutPrefix(opts.Subscriber, "mailto:"); ok && strings.Contains(mail, "@") {
		return mail, nil
	}
	if strings.HasPrefix(opts.Subscriber, "https://") && absoluteHTTP(opts.Subscriber) {
		return opts.Subscriber, nil
	}
	return "", errors.New("notify: the VAPID subscriber must be mailto:<address> or an https URL")
}

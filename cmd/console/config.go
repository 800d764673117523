package main

import "gatehouse/rules"

// envConfig is every environment variable the commands read (DESIGN §2),
// read once in run and handed to each command; a command's flags default to
// these values and override them. Numbers and durations stay text here:
// only serve reads them, and it reports a bad value with its flag's name.
type envConfig struct {
	DatabaseURL    string // DATABASE_URL
	DevMode        bool   // AUTH_MODE=dev
	Principals     string // CONSOLE_PRINCIPALS; default ./principals.yaml
	PolicyProfile  string // CONSOLE_POLICY_PROFILE
	PolicyDir      string // CONSOLE_POLICY_DIR
	ToolsFile      string // CONSOLE_TOOLS
	MCPFile        string // CONSOLE_MCP
	Addr           string // CONSOLE_ADDR; default 127.0.0.1:8080
	BaseURL        string // CONSOLE_BASE_URL
	SessionKeys    string // CONSOLE_SESSION_KEYS
	AllowedHosts   string // CONSOLE_ALLOWED_HOSTS
	TrustXFF       bool   // CONSOLE_TRUST_XFF=1
	ReaperInterval string // CONSOLE_REAPER_INTERVAL; default 5s
	DBMaxConns     string // CONSOLE_DB_MAX_CONNS; default 20
	RateLimit      string // CONSOLE_RATE_LIMIT; default 50
	RateBurst      string // CONSOLE_RATE_BURST; default 100
	VAPIDPublic    string // CONSOLE_VAPID_PUBLIC_KEY
	VAPIDPrivate   string // CONSOLE_VAPID_PRIVATE_KEY
	ServerURL      string // GATEHOUSE_URL (demo); default http://127.0.0.1:8080
	Token          string // GATEHOUSE_TOKEN (demo)
	LogFormat      string // LOG_FORMAT: text or json; default text on a terminal or in dev mode
	LogLevel       string // LOG_LEVEL: debug, info, warn, error; default info
	DataDir        string // GATEHOUSE_DATA: where the data lives, for serve's banner (make run sets it)
	Notify         string // CONSOLE_NOTIFY
	StepUpWindow   string // CONSOLE_STEP_UP_WINDOW; default 10m, 0 turns the step-up off
	Advisory       advisoryEnv
	// Getenv reads a variable a file names, such as the principals file's
	// oidc.client_secret_env; secrets stay out of the files.
	Getenv     func(string) string
	GrantSites string // CONSOLE_BROWSER_GRANT_SITES
}

// loadEnvConfig reads the environment through getenv (os.Getenv), with
// the defaults of an unset or empty variable.
func loadEnvConfig(getenv func(string) string) envConfig {
	or := func(name, def string) string {
		if v := getenv(name); v != "" {
			return v
		}
		return def
	}
	return envConfig{
		DatabaseURL:    getenv("DATABASE_URL"),
		DevMode:        getenv("AUTH_MODE") == "dev",
		Principals:     or("CONSOLE_PRINCIPALS", "./principals.yaml"),
		PolicyProfile:  getenv("CONSOLE_POLICY_PROFILE"),
		PolicyDir:      getenv("CONSOLE_POLICY_DIR"),
		ToolsFile:      getenv("CONSOLE_TOOLS"),
		MCPFile:        getenv("CONSOLE_MCP"),
		Addr:           or("CONSOLE_ADDR", "127.0.0.1:8080"),
		BaseURL:        getenv("CONSOLE_BASE_URL"),
		SessionKeys:    getenv("CONSOLE_SESSION_KEYS"),
		AllowedHosts:   getenv("CONSOLE_ALLOWED_HOSTS"),
		TrustXFF:       getenv("CONSOLE_TRUST_XFF") == "1",
		ReaperInterval: or("CONSOLE_REAPER_INTERVAL", "5s"),
		DBMaxConns:     or("CONSOLE_DB_MAX_CONNS", "20"),
		RateLimit:      or("CONSOLE_RATE_LIMIT", "50"),
		RateBurst:      or("CONSOLE_RATE_BURST", "100"),
		VAPIDPublic:    getenv("CONSOLE_VAPID_PUBLIC_KEY"),
		VAPIDPrivate:   getenv("CONSOLE_VAPID_PRIVATE_KEY"),
		ServerURL:      or("GATEHOUSE_URL", "http://127.0.0.1:8080"),
		Token:          getenv("GATEHOUSE_TOKEN"),
		LogFormat:      getenv("LOG_FORMAT"),
		LogLevel:       getenv("LOG_LEVEL"),
		DataDir:        getenv("GATEHOUSE_DATA"),
		Notify:         getenv("CONSOLE_NOTIFY"),
		StepUpWindow:   or("CONSOLE_STEP_UP_WINDOW", "10m"),
		Getenv:         getenv,
		Advisory:       loadAdvisoryEnv(getenv),
		GrantSites:     getenv("CONSOLE_BROWSER_GRANT_SITES"),
	}
}

// policyOptions are the policy files the environment names, with the MCP
// gateway's tools (CONSOLE_MCP), so `policy check` validates that file and
// `policy eval` knows its tools; serve's flags may replace them.
func (e envConfig) policyOptions() (rules.Options, error) {
	_, opts, err := loadMCP(e.MCPFile, rules.Options{PolicyDir: e.PolicyDir, ToolsFile: e.ToolsFile, DefaultProfile: e.PolicyProfile})
	return opts, err
}

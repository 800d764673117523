package main

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"strings"
	"testing"
)

// The log format follows LOG_FORMAT, else text in dev mode and JSON for a
// file or pipe; LOG_LEVEL filters, and a bad value of either is refused.
func TestLoggerFormatAndLevel(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		format string
		dev    bool
		json   bool
	}{{"", false, true}, {"", true, false}, {"json", true, true}, {"text", false, false}} {
		var buf bytes.Buffer
		l, err := newLogger(&buf, tc.format, "", tc.dev)
		if err != nil {
			t.Fatal(err)
		}
		l.Info("hello", "k", "v")
		if got := json.Valid(bytes.TrimSpace(buf.Bytes())); got != tc.json {
			t.Errorf("format %q dev %v: JSON %v, want %v: %s", tc.format, tc.dev, got, tc.json, buf.String())
		}
	}
	var buf bytes.Buffer
	l, err := newLogger(&buf, "text", "warn", false)
	if err != nil {
		t.Fatal(err)
	}
	l.Info("quiet")
	if buf.Len() != 0 {
		t.Errorf("LOG_LEVEL=warn logged an info line: %s", buf.String())
	}
	for _, bad := range [][2]string{{"xml", ""}, {"", "loud"}} {
		if _, err := newLogger(&buf, bad[0], bad[1], false); err == nil {
			t.Errorf("LOG_FORMAT %q LOG_LEVEL %q accepted", bad[0], bad[1])
		}
	}
	if requestLogLevel(true) != slog.LevelDebug || requestLogLevel(false) != slog.LevelInfo {
		t.Error("request lines: debug in dev mode, info otherwise")
	}
}

// The banner names the console, the dev principal, the data and how to
// stop, and never the database's credentials.
func TestBannerGreetsWithoutSecrets(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	banner(&buf, serveConfig{baseURL: "http://127.0.0.1:8080", devMode: true, demo: true,
		databaseURL: "postgres://gatehouse:s3cret@127.0.0.1:54329/gatehouse?sslmode=disable"}, "")
	out := buf.String()
	for _, want := range []string{"http://127.0.0.1:8080", `"dev"`, "127.0.0.1:54329/gatehouse", "Ctrl-C"} {
		if !strings.Contains(out, want) {
			t.Errorf("banner lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "s3cret") {
		t.Errorf("banner shows the database password:\n%s", out)
	}
}

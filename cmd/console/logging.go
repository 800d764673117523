package main

import (
	"fmt"
	"io"
	"log/slog"
	"net/url"
	"os"
	"strings"
)

// Log formats (LOG_FORMAT). Unset: text on a terminal or in dev mode,
// where a human reads the lines; JSON otherwise, for a log pipeline.
const (
	logFormatText = "text"
	logFormatJSON = "json"
)

// newLogger builds serve's logger on w: the format from LOG_FORMAT (or the
// default above) and the level from LOG_LEVEL (default info).
func newLogger(w io.Writer, format, level string, dev bool) (*slog.Logger, error) {
	var lv slog.Level
	if level != "" {
		if err := lv.UnmarshalText([]byte(level)); err != nil {
			return nil, fmt.Errorf("LOG_LEVEL %q: want debug, info, warn or error", level)
		}
	}
	opts := &slog.HandlerOptions{Level: lv}
	if format == "" {
		format = logFormatJSON
		if dev || isTerminal(w) {
			format = logFormatText
		}
	}
	switch format {
	case logFormatText:
		return slog.New(slog.NewTextHandler(w, opts)), nil
	case logFormatJSON:
		return slog.New(slog.NewJSONHandler(w, opts)), nil
	default:
		return nil, fmt.Errorf("LOG_FORMAT %q: want text or json", format)
	}
}

// requestLogLevel is the level of the per-request lines: debug in dev
// mode, info otherwise.
func requestLogLevel(dev bool) slog.Level {
	if dev {
		return slog.LevelDebug
	}
	return slog.LevelInfo
}

// isTerminal reports whether w is a character device (a terminal), without
// a dependency: a file or a pipe is not.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

// banner is what `make run` greets a newcomer with: where the console is,
// who they are signed in as, where the data lives and how to stop. It
// names the database by host and name only, never its credentials.
func banner(w io.Writer, cfg serveConfig, dataDir string) {
	var b strings.Builder
	b.WriteString("\n  Gatehouse is running.\n\n")
	fmt.Fprintf(&b, "  Console    %s\n", cfg.baseURL)
	if cfg.devMode {
		b.WriteString("  Signed in  as \"dev\" (tenant dev, every scope) automatically: AUTH_MODE=dev\n")
	}
	if cfg.demo {
		b.WriteString("  Demo       an agent proposes actions every few seconds; approve or deny them\n")
	}
	where := dataDir
	if where == "" {
		where = databaseName(cfg.databaseURL)
	}
	fmt.Fprintf(&b, "  Data       %s\n", where)
	b.WriteString("  Stop       Ctrl-C\n")
	if cfg.devMode {
		b.WriteString("  Logs       requests at debug level: LOG_LEVEL=debug shows them\n")
	}
	b.WriteString("\n")
	_, _ = io.WriteString(w, b.String())
}

// databaseName is a connection string without its credentials: host,
// port and database name.
func databaseName(dsn string) string {
	u, err := url.Parse(dsn)
	if err != nil || u.Host == "" {
		return "PostgreSQL (DATABASE_URL)"
	}
	return "PostgreSQL at " + u.Host + u.Path
}

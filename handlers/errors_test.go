package handlers

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"

	"gatehouse/handlers/internal/httpx"
	"gatehouse/service"
)

// errorLog answers err through handleError for a request to path, with the
// request's context ended first when cancelled, and returns the response
// and what the server logged.
func errorLog(t *testing.T, err error, path string, cancelled bool) (*httptest.ResponseRecorder, string) {
	t.Helper()
	s := newRouteOnlyServer(t)
	var logs strings.Builder
	s.log = slog.New(slog.NewTextHandler(&logs, nil))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if cancelled {
		cancel()
	}
	req := httptest.NewRequestWithContext(ctx, http.MethodGet, path, nil)
	rec := httptest.NewRecorder()
	s.handleError(err, s.echo.NewContext(req, rec))
	return rec, logs.String()
}

// An outage is answered as one, 503 with Retry-After and code unavailable,
// by the API and the console alike, and is no internal error to log twice.
func TestOutagesAnswer503WithRetryAfter(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, connectErr := pgconn.Connect(ctx, "postgres://nobody@127.0.0.1:1/none?sslmode=disable&connect_timeout=5")
	if connectErr == nil {
		t.Fatal("connected to port 1")
	}
	outages := []error{
		fmt.Errorf("service: list approvals: %w", connectErr),
		&pgconn.PgError{Code: "57P01", Message: "terminating connection due to administrator command"},
		fmt.Errorf("service: resolve: %w", &pgconn.PgError{Code: "08006"}),
		fmt.Errorf("service: propose: %w", io.ErrUnexpectedEOF),
		fmt.Errorf("%w: %w", service.ErrUnavailable, errors.New("conn closed")),
		fmt.Errorf("acquire: %w", context.DeadlineExceeded),
	}
	for _, err := range outages {
		ae, internal := httpx.ToError(err)
		if ae.Status != http.StatusServiceUnavailable || ae.Code != httpx.CodeUnavailable || internal {
			t.Errorf("%v: %d %s internal=%v, want 503 unavailable", err, ae.Status, ae.Code, internal)
		}
	}
	for _, path := range []string{"/v1/approvals", "/"} {
		rec, logs := errorLog(t, outages[0], path, false)
		if rec.Code != http.StatusServiceUnavailable || rec.Header().Get("Retry-After") == "" {
			t.Errorf("%s: %d Retry-After %q, want 503 with Retry-After", path, rec.Code, rec.Header().Get("Retry-After"))
		}
		if logs != "" {
			t.Errorf("%s: the error handler logged an outage (the request line already does): %s", path, logs)
		}
	}
	if rec, _ := errorLog(t, outages[0], "/v1/approvals", false); !strings.Contains(rec.Body.String(), `"unavailable"`) {
		t.Errorf("API body: %s", rec.Body.String())
	}
}

// A client that went away is neither an outage nor an internal error.
func TestClientDisconnectIsNotAnInternalError(t *testing.T) {
	t.Parallel()
	err := fmt.Errorf("service: list events: %w", context.Canceled)
	if service.IsUnavailable(err) {
		t.Error("a cancelled caller counted as an outage")
	}
	rec, logs := errorLog(t, err, "/v1/events", true)
	if rec.Code != httpx.StatusClientClosed || logs != "" {
		t.Errorf("disconnect: %d, logged %q; want %d and nothing logged", rec.Code, logs, httpx.StatusClientClosed)
	}
}

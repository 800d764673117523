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
	"github.com/labstack/echo/v4"

	"gatehouse/service"
)

func TestToAPIErrorMapsServiceErrorsOnce(t *testing.T) {
	t.Parallel()
	cases := []struct {
		err      error
		status   int
		code     string
		internal bool
	}{
		{fmt.Errorf("get: %w", service.ErrNotFound), 404, codeNotFound, false},
		{service.ErrConflict, 409, codeConflict, false},
		{fmt.Errorf("x: %w", service.ErrStaleLease), 409, codeConflict, false},
		{&service.InvalidError{Msg: "worker_id is required"}, 400, codeInvalid, false},
		{service.ErrForbidden, 403, codeForbidden, false},
		{errors.New("pq: password authentication failed for user secret"), 500, codeInternal, true},
		{fmt.Errorf("service: submit: %w", &pgconn.PgError{Code: "22021"}), 400, codeInvalid, false},
		{fmt.Errorf("service: propose: %w", &pgconn.PgError{Code: "22P05"}), 400, codeInvalid, false},
		{&pgconn.PgError{Code: "23505"}, 500, codeInternal, true},
	}
	for _, c := range cases {
		ae, internal := toAPIError(c.err)
		if ae.Status != c.status || ae.Code != c.code || internal != c.internal {
			t.Errorf("%v: %d %s internal=%v, want %d %s %v", c.err, ae.Status, ae.Code, internal, c.status, c.code, c.internal)
		}
		if c.internal && strings.Contains(ae.Message, "secret") {
			t.Errorf("internal error message leaks the cause: %q", ae.Message)
		}
	}
	if ae, _ := toAPIError(&service.InvalidError{Msg: "worker_id is required"}); ae.Message != "worker_id is required" {
		t.Errorf("InvalidError message not passed through: %q", ae.Message)
	}
}

func TestDecodeJSONIsStrict(t *testing.T) {
	t.Parallel()
	type body struct {
		A string `json:"a"`
	}
	cases := map[string]struct {
		in     string
		status int
	}{
		"ok":            {`{"a":"x"}`, 0},
		"unknown field": {`{"a":"x","b":1}`, 400},
		"trailing":      {`{"a":"x"} {"a":"y"}`, 400},
		"garbage":       {`{"a":`, 400},
		"wrong type":    {`{"a":1}`, 400},
		"empty":         {``, 400},
		"too large":     {`{"a":"` + strings.Repeat("x", maxBody) + `"}`, 413},
		"nul":           {`{"a":"x\u0000y"}`, 400},
		"escaped nul":   {`{"a":"x\\u0000y"}`, 0},
	}
	e := echo.New()
	for name, c := range cases {
		req := httptest.NewRequest(http.MethodPost, "/", strings.NewReader(c.in))
		ctx := e.NewContext(req, httptest.NewRecorder())
		var v body
		err := decodeJSON(ctx, &v)
		var ae *apiError
		switch {
		case c.status == 0 && err != nil:
			t.Errorf("%s: %v", name, err)
		case c.status != 0 && (!errors.As(err, &ae) || ae.Status != c.status):
			t.Errorf("%s: %v, want status %d", name, err, c.status)
		}
	}
}

func TestLimiterRefills(t *testing.T) {
	t.Parallel()
	now := time.Unix(0, 0)
	l := newLimiter(RateLimit{PerSecond: 2, Burst: 2}, func() time.Time { return now })
	for i := range 2 {
		if _, ok := l.allow("a"); !ok {
			t.Fatalf("request %d refused within the burst", i)
		}
	}
	wait, ok := l.allow("a")
	if ok || wait <= 0 || wait > time.Second {
		t.Fatalf("third request: ok=%v wait=%v", ok, wait)
	}
	if _, ok := l.allow("b"); !ok {
		t.Fatal("another key shares the bucket")
	}
	now = now.Add(500 * time.Millisecond)
	if _, ok := l.allow("a"); !ok {
		t.Fatal("no token after the refill time")
	}
}

func TestNulFieldNamesTheField(t *testing.T) {
	t.Parallel()
	type lease struct {
		WorkerID string `json:"worker_id"`
	}
	type action struct {
		Summary   string         `json:"summary"`
		Arguments map[string]any `json:"arguments"`
		Raw       []byte         `json:"raw"`
	}
	type request struct {
		lease
		Action  action  `json:"action"`
		Target  *string `json:"target,omitempty"`
		Ignored string  `json:"-"`
	}
	nul := "a\x00b"
	cases := []struct {
		in   request
		want string
	}{
		{request{lease: lease{WorkerID: nul}}, "worker_id"},
		{request{Action: action{Summary: nul}}, "action.summary"},
		{request{Action: action{Arguments: map[string]any{"path": nul}}}, "action.arguments.path"},
		{request{Action: action{Arguments: map[string]any{nul: "x"}}}, "action.arguments (a key)"},
		{request{Action: action{Arguments: map[string]any{"deep": []any{1, map[string]any{"x": nul}}}}}, "action.arguments.deep[1].x"},
		{request{Target: &nul}, "target"},
		{request{Ignored: nul, Action: action{Raw: []byte{0}, Arguments: map[string]any{"ok": "fine", "n": 1}}}, ""},
	}
	for _, c := range cases {
		got, ok := nulField(c.in, "json")
		if got != c.want || ok != (c.want != "") {
			t.Errorf("%+v: %q %v, want %q", c.in, got, ok, c.want)
		}
	}
}

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
		ae, internal := toAPIError(err)
		if ae.Status != http.StatusServiceUnavailable || ae.Code != codeUnavailable || internal {
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
	if rec.Code != statusClientClosed || logs != "" {
		t.Errorf("disconnect: %d, logged %q; want %d and nothing logged", rec.Code, logs, statusClientClosed)
	}
}

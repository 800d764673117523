package httpx

import (
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

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
		{fmt.Errorf("get: %w", service.ErrNotFound), 404, CodeNotFound, false},
		{service.ErrConflict, 409, CodeConflict, false},
		{fmt.Errorf("x: %w", service.ErrStaleLease), 409, CodeConflict, false},
		{&service.InvalidError{Msg: "worker_id is required"}, 400, CodeInvalid, false},
		{service.ErrForbidden, 403, CodeForbidden, false},
		{errors.New("pq: password authentication failed for user secret"), 500, CodeInternal, true},
		{fmt.Errorf("service: submit: %w", &pgconn.PgError{Code: "22021"}), 400, CodeInvalid, false},
		{fmt.Errorf("service: propose: %w", &pgconn.PgError{Code: "22P05"}), 400, CodeInvalid, false},
		{&pgconn.PgError{Code: "23505"}, 500, CodeInternal, true},
	}
	for _, c := range cases {
		ae, internal := ToError(c.err)
		if ae.Status != c.status || ae.Code != c.code || internal != c.internal {
			t.Errorf("%v: %d %s internal=%v, want %d %s %v", c.err, ae.Status, ae.Code, internal, c.status, c.code, c.internal)
		}
		if c.internal && strings.Contains(ae.Message, "secret") {
			t.Errorf("internal error message leaks the cause: %q", ae.Message)
		}
	}
	if ae, _ := ToError(&service.InvalidError{Msg: "worker_id is required"}); ae.Message != "worker_id is required" {
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
		"too large":     {`{"a":"` + strings.Repeat("x", MaxBody) + `"}`, 413},
		"nul":           {`{"a":"x\u0000y"}`, 400},
		"escaped nul":   {`{"a":"x\\u0000y"}`, 0},
	}
	e := echo.New()
	for name, c := range cases {
		req := httptest.NewRequest(http.MethodPost, "/", strings.NewReader(c.in))
		ctx := e.NewContext(req, httptest.NewRecorder())
		var v body
		err := DecodeJSON(ctx, &v)
		var ae *Error
		switch {
		case c.status == 0 && err != nil:
			t.Errorf("%s: %v", name, err)
		case c.status != 0 && (!errors.As(err, &ae) || ae.Status != c.status):
			t.Errorf("%s: %v, want status %d", name, err, c.status)
		}
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

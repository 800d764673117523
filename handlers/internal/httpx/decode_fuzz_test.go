package httpx

import (
	"bytes"
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"
	"unicode/utf8"

	"github.com/labstack/echo/v4"

	"gatehouse/api"
)

// FuzzDecodeJSON: whatever a client sends, the strict decoder either fills
// the request or answers a 4xx httpx.Error; it never panics and never lets a
// server error through, and what it accepts is valid UTF-8 with no key
// twice in an object.
func FuzzDecodeJSON(f *testing.F) {
	for _, s := range []string{
		`{"worker_id":"w","fencing_token":1,"action":{"action_id":"00000000-0000-4000-8000-000000000001","kind":"tool_call","name":"email.send","summary":"s","step_number":1,"arguments":{"to":"a@b.c","n":1e400},"argument_trust":{"to":"user"},"origin_trust":"user"}}`,
		`{"session_id":"00000000-0000-4000-8000-000000000001","agent_id":"a","agent_version":"1"}`,
		`{"resolution":"deny","reason":"no"}`,
		`{"worker_id":"w"} {"x":1}`,
		`{"unknown":true}`,
		`{"resolution":"deny","reason":"a","reason":"b"}`, "{\"resolution\":\"deny\",\"reason\":\"\xff\"}",
		`{"worker_id":"w","fencing_token":1,"action":{"step_number":2147483648}}`, `{"worker_id":"w","fencing_token":9223372036854775808}`,
		`[1,2,3]`, `"str"`, `null`, ``, `{`, `{"fencing_token":"1"}`,
	} {
		f.Add([]byte(s))
	}
	e := echo.New()
	f.Fuzz(func(t *testing.T, body []byte) {
		for _, v := range []any{&api.ProposeRequest{}, &api.SubmitRunInput{}, &api.ResolveRequest{}} {
			req := httptest.NewRequest(http.MethodPost, "/", bytes.NewReader(body))
			c := e.NewContext(req, httptest.NewRecorder())
			err := DecodeJSON(c, v)
			if err == nil {
				if !utf8.Valid(body) || bytes.Count(body, []byte(`"reason"`)) > 1 {
					t.Fatalf("decode %T accepted %q", v, body)
				}
				continue
			}
			var ae *Error
			if !errors.As(err, &ae) || ae.Status < 400 || ae.Status >= 500 {
				t.Fatalf("decode %T of %q: %v is not a 4xx httpx.Error", v, body, err)
			}
		}
	})
}

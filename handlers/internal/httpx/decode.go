package httpx

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"reflect"
	"strconv"
	"strings"

	"github.com/labstack/echo/v4"

	"gatehouse/engine"
)

// MaxBody bounds every request body.
const MaxBody = 1 << 20

// DecodeJSON decodes exactly one JSON value into v with engine.DecodeStrict
// (unknown fields, duplicate keys, invalid UTF-8 and integers outside their
// field's range are 400; numbers in free-form values stay json.Number),
// bodies over 1 MiB are 413, and a NUL character in any string (argument
// keys and values included) is a 400 naming the field.
func DecodeJSON(c echo.Context, v any) error {
	body, err := ReadBody(c)
	if err != nil {
		return err
	}
	return DecodeBody(body, v)
}

// ReadBody reads the request body, at most MaxBody bytes.
func ReadBody(c echo.Context) ([]byte, error) {
	body, err := io.ReadAll(http.MaxBytesReader(c.Response(), c.Request().Body, MaxBody))
	if err != nil {
		return nil, decodeError(err)
	}
	return body, nil
}

// DecodeBody is DecodeJSON's decoding half.
func DecodeBody(body []byte, v any) error {
	if err := engine.DecodeStrict(body, v); err != nil {
		return decodeError(err)
	}
	return RefuseNUL(v, "json")
}

// decodeError explains a decoding failure without echoing the body.
func decodeError(err error) *Error {
	var mbe *http.MaxBytesError
	var ie *engine.InputError
	var se *json.SyntaxError
	var te *json.UnmarshalTypeError
	switch {
	case errors.As(err, &mbe):
		return NewError(http.StatusRequestEntityTooLarge, CodeTooLarge, fmt.Sprintf("the body exceeds %d bytes", MaxBody))
	case errors.As(err, &ie):
		return Invalid(ie.Msg)
	case errors.Is(err, engine.ErrTrailingData):
		return Invalid("the body must be exactly one JSON value")
	case errors.Is(err, io.EOF):
		return Invalid("the body is empty: a JSON object is required")
	case errors.Is(err, io.ErrUnexpectedEOF), errors.As(err, &se):
		return Invalid("the body is not valid JSON")
	case errors.As(err, &te):
		if te.Field == "" {
			return Invalid("the body must be a JSON object")
		}
		if lo, hi, ok := intRange(te.Type); ok && strings.HasPrefix(te.Value, "number") {
			return Invalid(fmt.Sprintf("field %q must be an integer from %d to %d", te.Field, lo, hi))
		}
		return Invalid(fmt.Sprintf("field %q must be %s", te.Field, te.Type))
	}
	// DisallowUnknownFields reports `json: unknown field "x"`; the field name
	// is the caller's own input and safe to return.
	var unknown string
	if _, scanErr := fmt.Sscanf(err.Error(), "json: unknown field %q", &unknown); scanErr == nil {
		return Invalid(fmt.Sprintf("unknown field %q", unknown))
	}
	return Invalid("the body could not be decoded")
}

// intRange is the range of a signed integer type. Request fields have the
// width of their database column (int32 for integer, int64 for bigint), so
// the decoder's range is the column's.
func intRange(t reflect.Type) (lo, hi int64, ok bool) {
	switch t.Kind() {
	case reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64, reflect.Int:
		bits := t.Bits()
		return -1 << (bits - 1), 1<<(bits-1) - 1, true
	}
	return 0, 0, false
}

// QueryInt reads an optional integer query parameter within [lo, hi].
func QueryInt(c echo.Context, name string, lo, hi int) (int, error) {
	raw := c.QueryParam(name)
	if raw == "" {
		return 0, nil
	}
	n, err := strconv.Atoi(raw)
	if err != nil || n < lo || n > hi {
		return 0, Invalid(fmt.Sprintf("query parameter %q must be an integer from %d to %d", name, lo, hi))
	}
	return n, nil
}

package handlers

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

// maxBody bounds every request body.
const maxBody = 1 << 20

// decodeJSON decodes exactly one JSON value into v with engine.DecodeStrict
// (unknown fields, duplicate keys, invalid UTF-8 and integers outside their
// field's range are 400; numbers in free-form values stay json.Number),
// bodies over 1 MiB are 413, and a NUL character in any string (argument
// keys and values included) is a 400 naming the field.
func decodeJSON(c echo.Context, v any) error {
	body, err := readBody(c)
	if err != nil {
		return err
	}
	return decodeBody(body, v)
}

// readBody reads the request body, at most maxBody bytes.
func readBody(c echo.Context) ([]byte, error) {
	body, err := io.ReadAll(http.MaxBytesReader(c.Response(), c.Request().Body, maxBody))
	if err != nil {
		return nil, decodeError(err)
	}
	return body, nil
}

// decodeBody is decodeJSON's decoding half.
func decodeBody(body []byte, v any) error {
	if err := engine.DecodeStrict(body, v); err != nil {
		return decodeError(err)
	}
	return refuseNUL(v, "json")
}

// decodeError explains a decoding failure without echoing the body.
func decodeError(err error) *apiError {
	var mbe *http.MaxBytesError
	var ie *engine.InputError
	var se *json.SyntaxError
	var te *json.UnmarshalTypeError
	switch {
	case errors.As(err, &mbe):
		return newError(http.StatusRequestEntityTooLarge, codeTooLarge, fmt.Sprintf("the body exceeds %d bytes", maxBody))
	case errors.As(err, &ie):
		return invalid(ie.Msg)
	case errors.Is(err, engine.ErrTrailingData):
		return invalid("the body must be exactly one JSON value")
	case errors.Is(err, io.EOF):
		return invalid("the body is empty: a JSON object is required")
	case errors.Is(err, io.ErrUnexpectedEOF), errors.As(err, &se):
		return invalid("the body is not valid JSON")
	case errors.As(err, &te):
		if te.Field == "" {
			return invalid("the body must be a JSON object")
		}
		if lo, hi, ok := intRange(te.Type); ok && strings.HasPrefix(te.Value, "number") {
			return invalid(fmt.Sprintf("field %q must be an integer from %d to %d", te.Field, lo, hi))
		}
		return invalid(fmt.Sprintf("field %q must be %s", te.Field, te.Type))
	}
	// DisallowUnknownFields reports `json: unknown field "x"`; the field name
	// is the caller's own input and safe to return.
	var unknown string
	if _, scanErr := fmt.Sscanf(err.Error(), "json: unknown field %q", &unknown); scanErr == nil {
		return invalid(fmt.Sprintf("unknown field %q", unknown))
	}
	return invalid("the body could not be decoded")
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

// queryInt reads an optional integer query parameter within [lo, hi].
func queryInt(c echo.Context, name string, lo, hi int) (int, error) {
	raw := c.QueryParam(name)
	if raw == "" {
		return 0, nil
	}
	n, err := strconv.Atoi(raw)
	if err != nil || n < lo || n > hi {
		return 0, invalid(fmt.Sprintf("query parameter %q must be an integer from %d to %d", name, lo, hi))
	}
	return n, nil
}

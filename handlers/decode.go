package handlers

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"

	"github.com/labstack/echo/v4"
)

// maxBody bounds every request body.
const maxBody = 1 << 20

// decodeJSON decodes exactly one JSON value into v, strictly: unknown fields
// are refused, numbers in free-form values stay json.Number (no float
// rounding of amounts or ids), bodies over 1 MiB are 413, and a NUL
// character in any string (argument keys and values included) is a 400
// naming the field.
func decodeJSON(c echo.Context, v any) error {
	r := http.MaxBytesReader(c.Response(), c.Request().Body, maxBody)
	dec := json.NewDecoder(r)
	dec.DisallowUnknownFields()
	dec.UseNumber()
	if err := dec.Decode(v); err != nil {
		return decodeError(err)
	}
	if err := dec.Decode(&json.RawMessage{}); !errors.Is(err, io.EOF) {
		if err != nil {
			if de := decodeError(err); de.Status == http.StatusRequestEntityTooLarge {
				return de
			}
		}
		return invalid("the body must be exactly one JSON value")
	}
	return refuseNUL(v, "json")
}

// decodeError explains a decoding failure without echoing the body.
func decodeError(err error) *apiError {
	var mbe *http.MaxBytesError
	var se *json.SyntaxError
	var te *json.UnmarshalTypeError
	switch {
	case errors.As(err, &mbe):
		return newError(http.StatusRequestEntityTooLarge, codeTooLarge, fmt.Sprintf("the body exceeds %d bytes", maxBody))
	case errors.Is(err, io.EOF):
		return invalid("the body is empty: a JSON object is required")
	case errors.Is(err, io.ErrUnexpectedEOF), errors.As(err, &se):
		return invalid("the body is not valid JSON")
	case errors.As(err, &te):
		if te.Field != "" {
			return invalid(fmt.Sprintf("field %q must be %s", te.Field, te.Type))
		}
		return invalid("the body must be a JSON object")
	}
	// DisallowUnknownFields reports `json: unknown field "x"`; the field name
	// is the caller's own input and safe to return.
	var unknown string
	if _, scanErr := fmt.Sscanf(err.Error(), "json: unknown field %q", &unknown); scanErr == nil {
		return invalid(fmt.Sprintf("unknown field %q", unknown))
	}
	return invalid("the body could not be decoded")
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

package engine

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
)

// DecodeStrict decodes exactly one JSON value from b into v: unknown fields
// are refused, numbers stay json.Number (so normalization sees the literal
// the agent sent), and trailing data is an error.
func DecodeStrict(b []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	dec.UseNumber()
	if err := dec.Decode(v); err != nil {
		return fmt.Errorf("decode: %w", err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return errors.New("decode: trailing data after the JSON value")
	}
	return nil
}

// DecodeActionRequest decodes an action proposal as the API receives it.
func DecodeActionRequest(b []byte) (ActionRequest, error) {
	var req ActionRequest
	if err := DecodeStrict(b, &req); err != nil {
		return ActionRequest{}, err
	}
	return req, nil
}

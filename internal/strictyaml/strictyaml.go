// Package strictyaml decodes the operator's YAML files (policy profiles, the
// tool catalog, CONSOLE_NOTIFY) one way: exactly one document, unknown keys
// refused, and every failure carrying the line it is about, so each loader
// can name file:line in its own error type.
package strictyaml

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"strings"

	"gopkg.in/yaml.v3"
)

// Stable codes of the failures, as the loaders report them.
const (
	CodeSyntax       = "yaml.syntax" // malformed YAML, a wrong type, an unknown key
	CodeEmpty        = "yaml.empty"
	CodeMultipleDocs = "yaml.multiple_documents"
)

// Error is a decoding failure: its code, the line (0 when none) and what.
type Error struct {
	Code string
	Line int
	Msg  string
}

func (e *Error) Error() string {
	if e.Line > 0 {
		return fmt.Sprintf("line %d: %s: %s", e.Line, e.Code, e.Msg)
	}
	return e.Code + ": " + e.Msg
}

// Decode decodes exactly one YAML document of b into v, refusing unknown
// fields, and returns the document's node tree for line lookups. Errors
// are *Error.
func Decode(b []byte, v any) (*yaml.Node, error) {
	dec := yaml.NewDecoder(bytes.NewReader(b))
	dec.KnownFields(true)
	if err := dec.Decode(v); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, &Error{Code: CodeEmpty, Msg: "no YAML document"}
		}
		return nil, syntaxError(err)
	}
	var extra yaml.Node
	if err := dec.Decode(&extra); !errors.Is(err, io.EOF) {
		return nil, &Error{Code: CodeMultipleDocs, Line: extra.Line, Msg: "exactly one YAML document is allowed"}
	}
	var root yaml.Node
	if err := yaml.Unmarshal(b, &root); err != nil {
		return nil, syntaxError(err)
	}
	return &root, nil
}

// syntaxError turns a yaml.v3 error ("yaml: line 3: ...", or a TypeError
// listing "line 3: ...") into an Error carrying the first line.
func syntaxError(err error) error {
	msg := strings.TrimPrefix(err.Error(), "yaml: ")
	msg = strings.TrimPrefix(msg, "unmarshal errors:\n")
	msg = strings.TrimSpace(msg)
	line := 0
	if rest, ok := strings.CutPrefix(msg, "line "); ok {
		if i := strings.IndexByte(rest, ':'); i > 0 {
			if _, err := fmt.Sscanf(rest[:i], "%d", &line); err == nil {
				msg = strings.TrimSpace(rest[i+1:])
			}
		}
	}
	if i := strings.IndexByte(msg, '\n'); i >= 0 {
		msg = msg[:i]
	}
	return &Error{Code: CodeSyntax, Line: line, Msg: msg}
}

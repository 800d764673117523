package httpx

import (
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"unicode/utf8"
)

// PostgreSQL cannot store NUL in text or jsonb. Requests are checked for it
// once decoded, so the client learns which field is wrong;
// service.TranslateDBError is the backstop for anything that reaches the
// database another way.

// nulField returns the path of a string in v that holds a NUL character:
// struct fields (named by their tag, "json" or "form"; embedded structs
// flatten as in encoding/json), map keys and values, slice elements.
func nulField(v any, tag string) (string, bool) {
	return findString(reflect.ValueOf(v), "", tag, func(s string) bool { return strings.IndexByte(s, 0) >= 0 })
}

// InvalidUTF8Field is nulField for strings that are not valid UTF-8 (form
// values are percent-decoded bytes; JSON is checked by the decoder).
func InvalidUTF8Field(v any, tag string) (string, bool) {
	return findString(reflect.ValueOf(v), "", tag, func(s string) bool { return !utf8.ValidString(s) })
}

// findString returns the path of the first string in v (map keys included)
// for which bad is true.
func findString(v reflect.Value, path, tag string, bad func(string) bool) (string, bool) {
	switch v.Kind() {
	case reflect.String:
		if bad(v.String()) {
			return path, true
		}
	case reflect.Pointer, reflect.Interface:
		if !v.IsNil() {
			return findString(v.Elem(), path, tag, bad)
		}
	case reflect.Struct:
		t := v.Type()
		for i := range t.NumField() {
			f := t.Field(i)
			name, _, _ := strings.Cut(f.Tag.Get(tag), ",")
			// encoding/json fills exported fields and, through them, the
			// fields of embedded structs, exported or not.
			if (!f.IsExported() && !f.Anonymous) || name == "-" {
				continue
			}
			sub := path
			if !f.Anonymous || name != "" {
				if name == "" {
					name = f.Name
				}
				sub = joinPath(path, name)
			}
			if p, ok := findString(v.Field(i), sub, tag, bad); ok {
				return p, true
			}
		}
	case reflect.Map:
		iter := v.MapRange()
		for iter.Next() {
			k := iter.Key()
			if k.Kind() == reflect.String && bad(k.String()) {
				return path + " (a key)", true
			}
			if p, ok := findString(iter.Value(), joinPath(path, fmt.Sprint(k)), tag, bad); ok {
				return p, true
			}
		}
	case reflect.Slice, reflect.Array:
		if v.Type().Elem().Kind() == reflect.Uint8 {
			return "", false // bytes (json.RawMessage) are not text
		}
		for i := range v.Len() {
			if p, ok := findString(v.Index(i), path+"["+strconv.Itoa(i)+"]", tag, bad); ok {
				return p, true
			}
		}
	}
	return "", false
}

func joinPath(path, name string) string {
	if path == "" {
		return name
	}
	return path + "." + name
}

// RefuseNUL is the 400 for a NUL character in a request field.
func RefuseNUL(v any, tag string) error {
	if field, ok := nulField(v, tag); ok {
		return Invalid(fmt.Sprintf("field %q must not contain the NUL character (\\u0000)", field))
	}
	return nil
}

package engine

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestDecodeStrictRefusesWhatEncodingJSONRewrites(t *testing.T) {
	t.Parallel()
	cases := map[string]struct {
		in   string
		want string // substring of the InputError; "" means accepted
	}{
		"plain":                       {`{"a":1,"b":{"c":[1,{"d":"x"}]}}`, ""},
		"same key in sibling objects": {`{"a":{"k":1},"b":{"k":2},"c":[{"k":1},{"k":2}]}`, ""},
		"duplicate at top":            {`{"a":1,"a":2}`, `duplicate key "a"`},
		"duplicate nested":            {`{"x":{"y":[{"a":1,"b":2,"a":3}]}}`, `duplicate key "a"`},
		"duplicate by escape":         {`{"pay":1,"p\u0061y":2}`, `duplicate key "pay"`},
		"duplicate by case":           {`{"worker_id":"a","Worker_ID":"b"}`, `duplicate key "Worker_ID"`},
		"duplicate by kelvin sign":    {`{"k":1,"` + "\u212a" + `":2}`, "duplicate key"},
		"invalid UTF-8 in value":      {"{\"a\":\"pay \xff\"}", "invalid UTF-8"},
		"invalid UTF-8 in key":        {"{\"\xfe\":1}", "invalid UTF-8"},
		"truncated UTF-8":             {"{\"a\":\"\xe2\x82\"}", "invalid UTF-8"},
		"valid UTF-8":                 {`{"a":"pay €5 ✓ 😀"}`, ""},
		"surrogate pair":              {`{"a":"\ud83d\ude00"}`, ""},
		"lone high surrogate":         {`{"a":"\ud800"}`, "unpaired surrogate"},
		"lone low surrogate":          {`{"a":"\udc00x"}`, "unpaired surrogate"},
		"high then non-low":           {`{"a":"\ud800\u0041"}`, "unpaired surrogate"},
		"numeric in range":            {`{"a":1e131071,"b":1e-16383,"c":123456789012345678901234567890}`, ""},
		"numeric too large":           {`{"a":1e131072}`, "too large"},
		"numeric too precise":         {`{"a":1e-16384}`, "too large"},
		"huge exponent":               {`{"a":1e999999999999999999}`, "too large"},
	}
	// Objects past smallObject keys take the map path.
	var many strings.Builder
	for i := range 40 {
		fmt.Fprintf(&many, `"key%d":%d,`, i, i)
	}
	cases["many distinct keys"] = struct{ in, want string }{`{` + many.String() + `"last":0}`, ""}
	cases["many keys, duplicate by case"] = struct{ in, want string }{`{` + many.String() + `"KEY3":0}`, `duplicate key "KEY3"`}
	cases["many keys, duplicate by kelvin sign"] = struct{ in, want string }{`{"k":0,` + many.String() + `"` + "\u212a" + `":0}`, "duplicate key"}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			var v any
			err := DecodeStrict([]byte(c.in), &v)
			if c.want == "" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			var ie *InputError
			if !errors.As(err, &ie) || !strings.Contains(ie.Msg, c.want) {
				t.Fatalf("err = %v, want an InputError containing %q", err, c.want)
			}
		})
	}
}

// Malformed JSON is left to encoding/json, whose errors the API maps.
func TestDecodeStrictKeepsDecoderErrors(t *testing.T) {
	t.Parallel()
	var se *json.SyntaxError
	for _, in := range []string{`{"a":}`, `{"a" 1}`, `[1,]`, `{"a":01}`, `trux`} {
		var v any
		if err := DecodeStrict([]byte(in), &v); !errors.As(err, &se) {
			t.Errorf("%s: err = %v, want a json.SyntaxError", in, err)
		}
	}
	var v any
	if err := DecodeStrict([]byte(`{"a":1} {"a":1,"a":2}`), &v); !errors.Is(err, ErrTrailingData) {
		t.Errorf("trailing value: err = %v, want ErrTrailingData", err)
	}
	var req ActionRequest
	var te *json.UnmarshalTypeError
	if err := DecodeStrict([]byte(`{"step_number":2147483648}`), &req); !errors.As(err, &te) {
		t.Errorf("step_number 2^31: err = %v, want a json.UnmarshalTypeError", err)
	}
	if err := DecodeStrict([]byte(`{"step_number":2147483647}`), &req); err != nil || req.StepNumber != 1<<31-1 {
		t.Errorf("step_number 2^31-1: %v, %d", err, req.StepNumber)
	}
}

// duplicateKey is the reference check for the fuzz target: a token walk
// with one key set per open object.
func duplicateKey(b []byte) bool {
	dec := json.NewDecoder(bytes.NewReader(b))
	type frame struct {
		obj    bool
		keys   []string
		expect bool // next string token is a key
	}
	var stack []*frame
	for {
		tok, err := dec.Token()
		if err != nil {
			return false
		}
		var top *frame
		if len(stack) > 0 {
			top = stack[len(stack)-1]
		}
		if s, ok := tok.(string); ok && top != nil && top.obj && top.expect {
			for _, k := range top.keys {
				if strings.EqualFold(k, s) {
					return true
				}
			}
			top.keys = append(top.keys, s)
			top.expect = false
			continue
		}
		switch tok {
		case json.Delim('{'):
			stack = append(stack, &frame{obj: true, expect: true})
			continue
		case json.Delim('['):
			stack = append(stack, &frame{})
			continue
		case json.Delim('}'), json.Delim(']'):
			stack = stack[:len(stack)-1]
			if len(stack) == 0 {
				return false
			}
			top = stack[len(stack)-1]
		}
		if top != nil && top.obj {
			top.expect = true // a value ended: a key comes next
		}
		if len(stack) == 0 {
			return false
		}
	}
}

// FuzzDecodeStrict: never a panic, and whatever decodes is valid UTF-8
// with no key twice in any object (ignoring case).
func FuzzDecodeStrict(f *testing.F) {
	for _, s := range corpusSeeds() {
		f.Add([]byte(s))
	}
	for _, s := range []string{`{"a":1,"a":2}`, `{"a":{"b":1,"B":2}}`, "{\"a\":\"pay \xff\"}", `{"a":"\ud800"}`, `{"a":1e131072}`, `[{"k":1},{"k":1}]`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		var v any
		if err := DecodeStrict(b, &v); err != nil {
			return
		}
		if !utf8.Valid(b) {
			t.Fatalf("decoded invalid UTF-8: %q", b)
		}
		if duplicateKey(b) {
			t.Fatalf("decoded a duplicate key: %q", b)
		}
	})
}

// BenchmarkDecodeStrict: the strictness pass against the decode it guards,
// on a typical proposal.
func BenchmarkDecodeStrict(b *testing.B) {
	body := []byte(`{"action_id":"00000000-0000-4000-8000-000000000001","kind":"tool_call","name":"email.send","summary":"send the weekly report","step_number":3,"arguments":{"to":"a@example.com","subject":"Weekly report","body":"` + strings.Repeat("All systems nominal. ", 50) + `","cc":["b@example.com","c@example.com"],"n":12.5},"argument_trust":{"to":"user","body":"tool_output"},"origin_trust":"user"}`)
	b.Run("check", func(b *testing.B) {
		b.SetBytes(int64(len(body)))
		for b.Loop() {
			if err := checkStrict(body); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("decode", func(b *testing.B) {
		b.SetBytes(int64(len(body)))
		for b.Loop() {
			if _, err := DecodeActionRequest(body); err != nil {
				b.Fatal(err)
			}
		}
	})
}

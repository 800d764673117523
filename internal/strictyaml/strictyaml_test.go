package strictyaml

import (
	"errors"
	"testing"
)

func TestDecodeRefusesWithCodeAndLine(t *testing.T) {
	t.Parallel()
	type doc struct {
		Name string `yaml:"name"`
		N    int    `yaml:"n"`
	}
	cases := []struct {
		in   string
		code string
		line int
	}{
		{"", CodeEmpty, 0},
		{"name: a\n---\nname: b\n", CodeMultipleDocs, 2},
		{"name: a\ncolour: red\n", CodeSyntax, 2},
		{"name: a\nn: many\n", CodeSyntax, 2},
		{"name: [a\n", CodeSyntax, 1},
	}
	for _, c := range cases {
		var d doc
		root, err := Decode([]byte(c.in), &d)
		se, ok := errors.AsType[*Error](err)
		if root != nil || !ok || se.Code != c.code || se.Line != c.line {
			t.Errorf("%q: got %v (root %v), want %s at line %d", c.in, err, root != nil, c.code, c.line)
		}
	}
	var d doc
	root, err := Decode([]byte("name: a\nn: 2\n"), &d)
	if err != nil || root == nil || d != (doc{Name: "a", N: 2}) {
		t.Fatalf("%+v, %v", d, err)
	}
}

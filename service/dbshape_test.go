package service

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// tableFiles hold the service's SQL: each statement is declared in the file
// of the table it is about, next to the functions (table + verb, over a
// DBTX, or queued on a *pgx.Batch) that run it.
var tableFiles = []string{
	"runs.go", "invocations.go", "approvals.go", "approval_votes.go", "events.go",
	"console_sessions.go", "login_throttle.go", "policy_profiles.go", "notifications.go",
	"push_subscriptions.go", "push_vapid_keys.go", "console_oidc_logins.go",
	"browser_task_grants.go", "owner_consents.go",
}

// sqlStatement is how a statement constant's value starts.
var sqlStatement = regexp.MustCompile(`(?i)^\s*(SELECT|INSERT|UPDATE|DELETE|WITH)\b`)

// dbShapeExceptions are references the single gate pins: gate 3
// (TestGate03SingleGate) requires invocationAuthorize to be referenced by
// Service.authorize and by nothing else, so it is not wrapped.
var dbShapeExceptions = []string{"gate.go:invocationAuthorize"}

// TestStatementsStayInTheirTableFiles: flow code never runs SQL itself.
// Read as syntax trees, every constant of the package whose value is a
// statement is declared in a table file and referenced only in that file,
// and there never in a method (a flow of Service or ConsoleSessions), so
// flows reach the database only through the table's functions.
func TestStatementsStayInTheirTableFiles(t *testing.T) {
	t.Parallel()
	paths, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	files := map[string]*ast.File{}
	for _, p := range paths {
		if strings.HasSuffix(p, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, p, nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		files[p] = f
	}

	// Where each statement constant is declared.
	declared := map[string]string{}
	for path, f := range files {
		for _, d := range f.Decls {
			g, ok := d.(*ast.GenDecl)
			if !ok || g.Tok != token.CONST {
				continue
			}
			for _, spec := range g.Specs {
				vs := spec.(*ast.ValueSpec)
				for i, name := range vs.Names {
					if i < len(vs.Values) && sqlStatement.MatchString(leadingString(t, vs.Values[i])) {
						declared[name.Name] = path
					}
				}
			}
		}
	}
	if len(declared) == 0 {
		t.Fatal("no statement constants found: the test reads nothing")
	}
	for name, path := range declared {
		if !slices.Contains(tableFiles, path) {
			t.Errorf("statement %s is declared in %s, which is not a table file", name, path)
		}
	}

	for path, f := range files {
		for _, d := range f.Decls {
			fn, ok := d.(*ast.FuncDecl)
			flow := ok && fn.Recv != nil
			ast.Inspect(d, func(n ast.Node) bool {
				id, ok := n.(*ast.Ident)
				if !ok {
					return true
				}
				home, ok := declared[id.Name]
				switch {
				case !ok || slices.Contains(dbShapeExceptions, path+":"+id.Name):
				case home != path:
					t.Errorf("%s: statement %s (of %s) used outside its table file; call its table function",
						fset.Position(id.Pos()), id.Name, home)
				case flow:
					t.Errorf("%s: statement %s used in a method; call its table function",
						fset.Position(id.Pos()), id.Name)
				}
				return true
			})
		}
	}
}

// leadingString is the first string literal of a constant's value, for a
// value built as "literal" + columns + "literal"; "" when it starts with
// anything else.
func leadingString(t *testing.T, e ast.Expr) string {
	t.Helper()
	for {
		switch x := e.(type) {
		case *ast.BinaryExpr:
			e = x.X
		case *ast.ParenExpr:
			e = x.X
		case *ast.BasicLit:
			if x.Kind != token.STRING {
				return ""
			}
			s, err := strconv.Unquote(x.Value)
			if err != nil {
				t.Fatal(err)
			}
			return s
		default:
			return ""
		}
	}
}

package service

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/google/uuid"

	"gatehouse/api"
	"gatehouse/engine"
)

// TestGate03SingleGate: exactly one function can make an invocation
// AUTHORIZED. Three independent checks, each of which fails on its own when
// the property is broken:
//   - in the database, a trigger refuses every write of AUTHORIZED but an
//     UPDATE from PROPOSED or WAITING_FOR_APPROVAL that records the lease
//     (migrations/00010), whatever statement or package issues it;
//   - in the code, read as syntax trees across the whole module: the SQL
//     literal 'AUTHORIZED' is written (after SET or in VALUES, across lines
//     and spacing) by one statement, invocationAuthorize; that identifier
//     is referenced by one function, Service.authorize; the Go value
//     "AUTHORIZED" exists once, as the InvocationAuthorized constant, which
//     is only ever compared, never passed as a value (a parameterized write);
//   - at run time, Propose and Resume each reach authorize once.
func TestGate03SingleGate(t *testing.T) {
	t.Parallel()
	checkAuthorizeSyntax(t)

	b := setup(t)
	var mu sync.Mutex
	seen := map[string]int{}
	b.svc.onAuthorize = func(id string) { mu.Lock(); seen[id]++; mu.Unlock() }
	c := b.started()
	allow := b.propose(c, action("workspace.write_text", map[string]any{"path": "a.txt", "text": "x"}))
	req := action("http.post", map[string]any{"url": "https://example.com", "body": "x"})
	park := b.parked(c, req)
	b.resolve(park.ApprovalID, engine.ResolutionApproveOnce)
	c2 := b.claim(c.run.ID)
	if _, err := b.svc.Resume(b.ctx, b.owner, c.run.ID, park.InvocationID, c2.lease, api.ResumeInput{Arguments: req.Arguments, AgentVersion: "1.0"}); err != nil {
		t.Fatal(err)
	}
	mustEqual(t, "propose authorizations", seen[allow.InvocationID], 1)
	mustEqual(t, "resume authorizations", seen[park.InvocationID], 1)

	// Any other write of AUTHORIZED is refused by the database.
	denied := b.propose(b.started(), action("secrets.read", map[string]any{"name": "x"}))
	pending := b.parked(b.started(), action("http.post", map[string]any{"url": "https://example.com", "body": "y"}))
	for name, sql := range map[string]string{
		"from a final state":        `UPDATE actions SET status = 'AUTHORIZED', authorized_worker_id = 'w', authorized_fencing_token = 1 WHERE id = '` + denied.InvocationID + `'`,
		"without the lease":         `UPDATE actions SET status = 'AUTHORIZED' WHERE id = '` + pending.InvocationID + `'`,
		"as a parameter, no lease":  `UPDATE actions SET status = $1 WHERE id = '` + pending.InvocationID + `'`,
		"by an insert of a copy of": `INSERT INTO actions SELECT (jsonb_populate_record(t, '{"id": "` + uuid.NewString() + `", "action_id": "` + uuid.NewString() + `", "status": "AUTHORIZED"}')).* FROM actions t WHERE id = '` + allow.InvocationID + `'`,
	} {
		var args []any
		if strings.Contains(sql, "$1") {
			args = append(args, api.InvocationAuthorized)
		}
		if _, err := b.pool.Exec(b.ctx, sql, args...); err == nil || !strings.Contains(err.Error(), "only the single gate") {
			t.Errorf("%s: err = %v, want the authorize guard", name, err)
		}
	}
}

// SQL clauses, in a statement whose whitespace is collapsed (so a statement
// split across lines is read whole): a SET list or an INSERT's VALUES runs
// to the next clause keyword.
var (
	sqlSetOrValues = regexp.MustCompile(`(?i)\b(?:SET|VALUES)\b`)
	sqlClauseEnd   = regexp.MustCompile(`(?i)\b(?:WHERE|RETURNING|FROM|ON CONFLICT)\b|;`)
	sqlAuthorized  = regexp.MustCompile(`'AUTHORIZED'`)
)

// writesAuthorized reports whether a statement writes 'AUTHORIZED': the
// literal inside a SET list or VALUES.
func writesAuthorized(stmt string) bool {
	stmt = strings.Join(strings.Fields(stmt), " ")
	for _, loc := range sqlSetOrValues.FindAllStringIndex(stmt, -1) {
		clause := stmt[loc[1]:]
		if end := sqlClauseEnd.FindStringIndex(clause); end != nil {
			clause = clause[:end[0]]
		}
		if sqlAuthorized.MatchString(clause) {
			return true
		}
	}
	return false
}

func checkAuthorizeSyntax(t *testing.T) {
	t.Helper()
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	type file struct {
		path string
		ast  *ast.File
	}
	var files []file
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (strings.HasPrefix(d.Name(), ".") || d.Name() == "node_modules" || d.Name() == "bench") {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		files = append(files, file{rel, f})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}

	var sqlWrites, goValues, stmtRefs []string
	for _, f := range files {
		// The declaration each literal and identifier sits in, and the
		// function, for the messages and the one allowed site of each.
		var stack []ast.Node
		ast.Inspect(f.ast, func(n ast.Node) bool {
			if n == nil {
				stack = stack[:len(stack)-1]
				return false
			}
			where := f.path + ":" + enclosing(stack)
			switch x := n.(type) {
			case *ast.BasicLit:
				if x.Kind == token.STRING {
					s, err := strconv.Unquote(x.Value)
					if err != nil {
						t.Fatalf("%s: %v", where, err)
					}
					if writesAuthorized(s) {
						sqlWrites = append(sqlWrites, where)
					}
					if s == api.InvocationAuthorized {
						goValues = append(goValues, where)
					}
				}
			case *ast.Ident:
				switch x.Name {
				case "invocationAuthorize":
					stmtRefs = append(stmtRefs, where)
				case "InvocationAuthorized":
					if !comparedOnly(stack) {
						t.Errorf("%s uses InvocationAuthorized as a value, not in a comparison", where)
					}
				}
			}
			stack = append(stack, n)
			return true
		})
	}
	want := func(what string, got []string, site string) {
		if len(got) != 1 || got[0] != site {
			t.Errorf("%s at %v; want exactly one, at %s", what, got, site)
		}
	}
	want("SQL writes of 'AUTHORIZED'", sqlWrites, "service/invocations.go:invocationAuthorize")
	want("the Go value \"AUTHORIZED\"", goValues, "api/resources.go:InvocationAuthorized")
	// The declaration, and the one call in authorize.
	slices.Sort(stmtRefs)
	if !slices.Equal(stmtRefs, []string{"service/gate.go:authorize", "service/invocations.go:invocationAuthorize"}) {
		t.Errorf("invocationAuthorize referenced at %v; want its declaration and Service.authorize only", stmtRefs)
	}
}

// enclosing names the innermost function or value declaration on stack.
func enclosing(stack []ast.Node) string {
	for i := len(stack) - 1; i >= 0; i-- {
		switch x := stack[i].(type) {
		case *ast.FuncDecl:
			return x.Name.Name
		case *ast.ValueSpec:
			return x.Names[0].Name
		}
	}
	return "?"
}

// comparedOnly reports whether the identifier on top of stack (qualified,
// as api.InvocationAuthorized, or not) is declared there or is an operand
// of == or != or a case of a switch.
func comparedOnly(stack []ast.Node) bool {
	if len(stack) > 0 {
		if _, ok := stack[len(stack)-1].(*ast.SelectorExpr); ok {
			stack = stack[:len(stack)-1]
		}
	}
	if len(stack) == 0 {
		return false
	}
	switch p := stack[len(stack)-1].(type) {
	case *ast.ValueSpec:
		return true // its declaration
	case *ast.BinaryExpr:
		return p.Op == token.EQL || p.Op == token.NEQ
	case *ast.CaseClause:
		return true
	}
	return false
}

package client

import (
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// nonStandardDeps lists the packages pkg depends on, directly or not,
// outside the standard library.
func nonStandardDeps(t *testing.T, pkg string) []string {
	t.Helper()
	out, err := exec.Command("go", "list", "-deps", "-f", "{{if not .Standard}}{{.ImportPath}}{{end}}", pkg).Output()
	if err != nil {
		t.Fatalf("go list %s: %v", pkg, err)
	}
	return strings.Fields(string(out))
}

// TestClientLinksOnlyTheContract: an agent runtime that imports the client
// links the wire contract (package api) and the engine's vocabulary it is
// written in, and nothing of the server: no database driver, YAML parser,
// rules loader or service.
func TestClientLinksOnlyTheContract(t *testing.T) {
	t.Parallel()
	engineDeps := nonStandardDeps(t, "gatehouse/engine")
	deps := nonStandardDeps(t, ".")
	for _, dep := range deps {
		switch {
		case strings.Contains(dep, "pgx") || strings.Contains(dep, "yaml") || strings.HasPrefix(dep, "gatehouse/rules"):
			t.Errorf("the client depends on %s", dep)
		case dep == "gatehouse/client" || dep == "gatehouse/api" || slices.Contains(engineDeps, dep):
		default:
			t.Errorf("the client depends on %s, which is neither the contract nor the engine's", dep)
		}
	}
	if !slices.Contains(deps, "gatehouse/api") {
		t.Errorf("the client does not use package api: %v", deps)
	}
	// Directly, the client imports the contract and the standard library.
	out, err := exec.Command("go", "list", "-f", `{{join .Imports " "}}`, ".").Output()
	if err != nil {
		t.Fatal(err)
	}
	for _, imp := range strings.Fields(string(out)) {
		if strings.Contains(imp, ".") || (strings.HasPrefix(imp, "gatehouse/") && imp != "gatehouse/api") {
			t.Errorf("the client imports %s; it imports api and the standard library only", imp)
		}
	}
}

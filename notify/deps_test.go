package notify

import (
	"os/exec"
	"strings"
	"testing"
)

// TestNotifyKnowsNoDatabase: the channels are HTTP clients; the outbox that
// decides what to send lives in service, which imports notify, never the
// other way round.
func TestNotifyKnowsNoDatabase(t *testing.T) {
	t.Parallel()
	out, err := exec.Command("go", "list", "-deps", "-f", "{{if not .Standard}}{{.ImportPath}}{{end}}", ".").Output()
	if err != nil {
		t.Fatal(err)
	}
	for dep := range strings.FieldsSeq(string(out)) {
		if strings.Contains(dep, "pgx") || strings.Contains(dep, "database") ||
			(strings.HasPrefix(dep, "gatehouse/") && dep != "gatehouse/notify" && dep != "gatehouse/internal/strictyaml") {
			t.Errorf("notify depends on %s", dep)
		}
	}
}

package main

import (
	"bytes"
	"context"
	"os"
	"strings"
	"testing"

	"gatehouse/internal/testdb"
)

func TestMigrateCommands(t *testing.T) {
	dbURL := testdb.NewEmptyDatabase(t, "console_migrate")
	ctx := context.Background()
	migrate := func(args ...string) string {
		t.Helper()
		var out bytes.Buffer
		if err := runMigrate(ctx, loadEnvConfig(os.Getenv), append(args, "--database-url", dbURL), &out); err != nil {
			t.Fatalf("migrate %v: %v", args, err)
		}
		return out.String()
	}
	if out := migrate("status"); !strings.Contains(out, "pending") || strings.Contains(out, "applied\t") {
		t.Fatalf("status before up:\n%s", out)
	}
	out := migrate("up")
	if !strings.HasPrefix(out, "applied ") || strings.HasPrefix(out, "applied 0 ") || !strings.Contains(out, "00001") {
		t.Fatalf("up:\n%s", out)
	}
	if out := migrate("up"); !strings.HasPrefix(out, "applied 0 migration(s)") {
		t.Fatalf("second up:\n%s", out)
	}
	if out := migrate("status"); strings.Contains(out, "pending") || !strings.Contains(out, "00006_invocation_authorized_lease.sql") {
		t.Fatalf("status after up:\n%s", out)
	}
	var sink bytes.Buffer
	if err := runMigrate(ctx, loadEnvConfig(os.Getenv), []string{"down", "--database-url", dbURL}, &sink); err == nil {
		t.Fatal("migrate down accepted")
	}
}

package testdb_test

import (
	"context"
	"testing"

	"gatehouse/internal/testdb"
)

func TestNewIsMigrated(t *testing.T) {
	t.Parallel()
	pool := testdb.New(t)
	var n int
	err := pool.QueryRow(context.Background(),
		`SELECT count(*) FROM information_schema.tables WHERE table_name IN ('runs','actions','tool_invocations','approvals','events','policy_profiles')`).Scan(&n)
	if err != nil {
		t.Fatal(err)
	}
	if n != 6 {
		t.Fatalf("tables and views = %d, want 6", n)
	}
}

func TestNewDatabase(t *testing.T) {
	t.Parallel()
	u := testdb.NewDatabase(t, "testdb_fresh")
	pool := testdb.Pool(t, u)
	if err := pool.Ping(context.Background()); err != nil {
		t.Fatal(err)
	}
}

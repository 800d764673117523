package migrations_test

import (
	"context"
	"sync"
	"testing"

	"github.com/pressly/goose/v3"

	"gatehouse/internal/testdb"
	"gatehouse/migrations"
)

// Replicas start at once: the session locker lets one migrate and the
// others find nothing left to do.
func TestUpConcurrentReplicas(t *testing.T) {
	t.Parallel()
	pool := testdb.Pool(t, testdb.NewEmptyDatabase(t, "migrations_concurrent"))
	ctx := context.Background()
	var wg sync.WaitGroup
	errs := make([]error, 3)
	applied := make([][]int64, 3)
	for i := range 3 {
		wg.Go(func() { applied[i], errs[i] = migrations.Up(ctx, pool) })
	}
	wg.Wait()
	total := 0
	for i := range 3 {
		if errs[i] != nil {
			t.Fatalf("replica %d: %v", i, errs[i])
		}
		total += len(applied[i])
	}
	st, err := migrations.Status(ctx, pool)
	if err != nil {
		t.Fatal(err)
	}
	if total != len(st) {
		t.Fatalf("applied %d migrations in total, want each of %d once", total, len(st))
	}
	for _, s := range st {
		if s.State != goose.StateApplied {
			t.Fatalf("%s: state %s", s.Source.Path, s.State)
		}
	}
}

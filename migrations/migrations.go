// Package migrations holds Gatehouse's numbered goose SQL migrations,
// embedded, and the one way to apply them: goose's Provider behind its
// PostgreSQL session locker, so several replicas can start at once and only
// one migrates while the others wait.
package migrations

import (
	"context"
	"database/sql"
	"embed"
	"fmt"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/jackc/pgx/v5/stdlib"
	"github.com/pressly/goose/v3"
	"github.com/pressly/goose/v3/lock"
)

//go:embed *.sql
var files embed.FS

// lockID is the advisory lock key the session locker takes; any constant
// shared by every replica works, this one spells "gatehouse".
const lockID = 0x6761746568

// Up applies every pending migration and returns the versions applied.
func Up(ctx context.Context, pool *pgxpool.Pool) ([]int64, error) {
	var applied []int64
	err := withProvider(pool, func(p *goose.Provider) error {
		res, err := p.Up(ctx)
		for _, r := range res {
			applied = append(applied, r.Source.Version)
		}
		return err
	})
	if err != nil {
		return applied, fmt.Errorf("migrations: up: %w", err)
	}
	return applied, nil
}

// Status reports each migration and whether it is applied.
func Status(ctx context.Context, pool *pgxpool.Pool) ([]*goose.MigrationStatus, error) {
	var st []*goose.MigrationStatus
	err := withProvider(pool, func(p *goose.Provider) error {
		var err error
		st, err = p.Status(ctx)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("migrations: status: %w", err)
	}
	return st, nil
}

func withProvider(pool *pgxpool.Pool, fn func(*goose.Provider) error) error {
	// The sql.DB borrows connections from the pool; closing it does not
	// close the pool.
	db := stdlib.OpenDBFromPool(pool)
	defer db.Close()
	p, err := newProvider(db)
	if err != nil {
		return err
	}
	return fn(p)
}

func newProvider(db *sql.DB) (*goose.Provider, error) {
	// Poll the lock every second for up to five minutes: a replica that
	// starts while another migrates waits instead of failing.
	locker, err := lock.NewPostgresSessionLocker(lock.WithLockID(lockID), lock.WithLockTimeout(1, 300))
	if err != nil {
		return nil, fmt.Errorf("session locker: %w", err)
	}
	// Out-of-order: migrations are numbered per area (00001.. for the core
	// tables, 00100.. for the console's), so a database that already has a
	// later area's migration still takes a new core one.
	p, err := goose.NewProvider(goose.DialectPostgres, db, files,
		goose.WithSessionLocker(locker), goose.WithDisableGlobalRegistry(true),
		goose.WithAllowOutofOrder(true))
	if err != nil {
		return nil, fmt.Errorf("provider: %w", err)
	}
	return p, nil
}

// Package testdb gives tests a real, migrated PostgreSQL database. Each test
// package (each test binary) gets its own database, gatehouse_test_<pkg>,
// dropped and recreated once per process so packages run in parallel and a
// failed run can be inspected with psql afterwards. Tests inside a package
// isolate by tenant and uuid, so they can run with t.Parallel.
package testdb

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"gatehouse/internal/pgdb"
	"gatehouse/migrations"
)

const fallbackURL = "postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable"

// URL is the admin connection string: DATABASE_URL, or the loopback default.
func URL(t testing.TB) string {
	t.Helper()
	if u := os.Getenv("DATABASE_URL"); u != "" {
		return u
	}
	return fallbackURL
}

var (
	pkgOnce sync.Once
	pkgURL  string
	pkgErr  error
)

// New returns a pool on this package's migrated database, closed when the
// test ends.
func New(t testing.TB) *pgxpool.Pool {
	t.Helper()
	pkgOnce.Do(func() {
		pkgURL, pkgErr = create(URL(t), dbName(packageName()), true)
	})
	if pkgErr != nil {
		t.Fatalf("testdb: %v", pkgErr)
	}
	return Pool(t, pkgURL)
}

// NewDatabase creates a fresh migrated database gatehouse_test_<name> for a
// test that needs one of its own (e2e), and drops it when the test ends.
func NewDatabase(t testing.TB, name string) string {
	t.Helper()
	return newDatabase(t, name, true)
}

// NewEmptyDatabase is NewDatabase without the migrations, for tests of
// migrating itself.
func NewEmptyDatabase(t testing.TB, name string) string {
	t.Helper()
	return newDatabase(t, name, false)
}

func newDatabase(t testing.TB, name string, migrate bool) string {
	t.Helper()
	admin := URL(t)
	db := dbName(sanitize(name))
	u, err := create(admin, db, migrate)
	if err != nil {
		t.Fatalf("testdb: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := exec(ctx, admin, "DROP DATABASE IF EXISTS "+pgx.Identifier{db}.Sanitize()+" WITH (FORCE)"); err != nil {
			t.Logf("testdb: drop %s: %v", db, err)
		}
	})
	return u
}

// dbName is gatehouse_test_<name>, plus TESTDB_SUFFIX when set, so two
// checkouts of the repository (worktrees) test against one server in
// parallel instead of waiting for each other's databases.
func dbName(name string) string {
	return "gatehouse_test_" + name + sanitize(os.Getenv("TESTDB_SUFFIX"))
}

// Pool opens a pool on dbURL sized for concurrent tests, closed at cleanup.
func Pool(t testing.TB, dbURL string) *pgxpool.Pool {
	t.Helper()
	cfg, err := pgxpool.ParseConfig(dbURL)
	if err != nil {
		t.Fatalf("testdb: parse url: %v", err)
	}
	cfg.MaxConns = 16
	pgdb.Configure(cfg)
	pool, err := pgxpool.NewWithConfig(context.Background(), cfg)
	if err != nil {
		t.Fatalf("testdb: pool: %v", err)
	}
	t.Cleanup(pool.Close)
	return pool
}

func create(admin, dbName string, migrate bool) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	if err := claim(ctx, admin, dbName); err != nil {
		return "", err
	}
	ident := pgx.Identifier{dbName}.Sanitize()
	if err := exec(ctx, admin, "DROP DATABASE IF EXISTS "+ident+" WITH (FORCE)"); err != nil {
		return "", fmt.Errorf("drop %s: %w", dbName, err)
	}
	if err := exec(ctx, admin, "CREATE DATABASE "+ident); err != nil {
		return "", fmt.Errorf("create %s: %w", dbName, err)
	}
	u, err := withDatabase(admin, dbName)
	if err != nil || !migrate {
		return u, err
	}
	pool, err := pgxpool.New(ctx, u)
	if err != nil {
		return "", fmt.Errorf("connect %s: %w", dbName, err)
	}
	defer pool.Close()
	if _, err := migrations.Up(ctx, pool); err != nil {
		return "", fmt.Errorf("migrate %s: %w", dbName, err)
	}
	return u, nil
}

// claims holds, for the life of the test process, one connection per
// database it created, each holding a session advisory lock on the
// database's name. A second process testing the same package (a developer's
// run beside CI's, a benchmark beside the tests) waits for the first to exit
// instead of dropping the database under it. Exiting closes the connections
// and releases the locks.
// A process that creates the same database twice already holds its claim.
var (
	claimsMu sync.Mutex
	claims   = map[string]*pgx.Conn{}
)

func claim(ctx context.Context, admin, dbName string) error {
	claimsMu.Lock()
	defer claimsMu.Unlock()
	if claims[dbName] != nil {
		return nil
	}
	conn, err := pgx.Connect(ctx, admin)
	if err != nil {
		return fmt.Errorf("connect: %w", err)
	}
	if _, err := conn.Exec(ctx, "SELECT pg_advisory_lock(hashtext($1))", dbName); err != nil {
		_ = conn.Close(ctx)
		return fmt.Errorf("lock %s: %w", dbName, err)
	}
	claims[dbName] = conn
	return nil
}

func exec(ctx context.Context, dbURL, sql string) error {
	conn, err := pgx.Connect(ctx, dbURL)
	if err != nil {
		return fmt.Errorf("connect: %w", err)
	}
	defer conn.Close(ctx)
	_, err = conn.Exec(ctx, sql)
	return err
}

// withDatabase swaps the database name in a URL-form connection string.
func withDatabase(admin, dbName string) (string, error) {
	u, err := url.Parse(admin)
	if err != nil || u.Scheme == "" {
		return "", fmt.Errorf("DATABASE_URL must be a postgres:// URL")
	}
	u.Path = "/" + dbName
	return u.String(), nil
}

// packageName derives the package from the test binary's name (pkg.test).
func packageName() string {
	return sanitize(strings.TrimSuffix(filepath.Base(os.Args[0]), ".test"))
}

var unsafeChars = regexp.MustCompile(`[^a-z0-9_]+`)

func sanitize(s string) string {
	s = unsafeChars.ReplaceAllString(strings.ToLower(s), "_")
	if len(s) > 40 {
		s = s[:40]
	}
	return s
}

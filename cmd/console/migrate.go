package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"text/tabwriter"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"gatehouse/internal/pgdb"
	"gatehouse/migrations"
)

// runMigrate is `console migrate up|status`.
func runMigrate(ctx context.Context, env envConfig, args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("migrate", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	dbURL := fs.String("database-url", env.DatabaseURL, "PostgreSQL connection string (DATABASE_URL)")
	rest, err := parseInterspersed(fs, args)
	if err != nil {
		return fmt.Errorf("%w: migrate: %w", errUsage, err)
	}
	if len(rest) != 1 || (rest[0] != "up" && rest[0] != "status") {
		return fmt.Errorf("%w: migrate up|status", errUsage)
	}
	pool, err := connect(ctx, *dbURL)
	if err != nil {
		return err
	}
	defer pool.Close()
	if rest[0] == "up" {
		applied, err := migrations.Up(ctx, pool)
		if err != nil {
			return err
		}
		fmt.Fprintf(stdout, "applied %d migration(s)\n", len(applied))
		for _, v := range applied {
			fmt.Fprintf(stdout, "  %05d\n", v)
		}
		return nil
	}
	st, err := migrations.Status(ctx, pool)
	if err != nil {
		return err
	}
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "VERSION\tSTATE\tAPPLIED AT\tFILE")
	for _, s := range st {
		at := "-"
		if !s.AppliedAt.IsZero() {
			at = s.AppliedAt.UTC().Format(time.RFC3339)
		}
		fmt.Fprintf(tw, "%05d\t%s\t%s\t%s\n", s.Source.Version, s.State, at, s.Source.Path)
	}
	return tw.Flush()
}

// connect opens a small pool for a one-shot command.
func connect(ctx context.Context, dbURL string) (*pgxpool.Pool, error) {
	if dbURL == "" {
		return nil, errors.New("DATABASE_URL is not set")
	}
	return pgdb.Open(ctx, dbURL, 4)
}

// parseInterspersed parses flags that may come before, between or after
// positional arguments, and returns the positional ones.
func parseInterspersed(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		args = fs.Args()
		if len(args) == 0 {
			return pos, nil
		}
		pos = append(pos, args[0])
		args = args[1:]
	}
}

package main

import (
	"context"
	"errors"
	"io"
)

// runMigrate is a placeholder until its command lands.
func runMigrate(ctx context.Context, args []string, stdout io.Writer) error {
	return errors.New("migrate: not implemented yet")
}

package main

import (
	"context"
	"errors"
	"io"
)

// runServe is a placeholder until its command lands.
func runServe(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	return errors.New("serve: not implemented yet")
}

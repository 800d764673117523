package main

import (
	"context"
	"errors"
	"io"
)

// runDemo is a placeholder until its command lands.
func runDemo(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	return errors.New("demo: not implemented yet")
}

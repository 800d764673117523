package main

import (
	"context"
	"errors"
	"io"
)

// runPolicy is a placeholder until its command lands.
func runPolicy(ctx context.Context, args []string, stdin io.Reader, stdout io.Writer) error {
	return errors.New("policy: not implemented yet")
}

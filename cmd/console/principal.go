package main

import (
	"context"
	"errors"
	"io"
)

// runPrincipal is a placeholder until its command lands.
func runPrincipal(ctx context.Context, args []string, stdin io.Reader, stdout io.Writer) error {
	return errors.New("principal: not implemented yet")
}

package main

import (
	"context"
	"errors"
	"io"
)

// runApproval is a placeholder until its command lands.
func runApproval(ctx context.Context, args []string, stdout io.Writer) error {
	return errors.New("approval: not implemented yet")
}

package main

import (
	"context"
	"errors"
	"io"
	"log/slog"
)

// runDemo is a placeholder until the demo agent lands.
func runDemo(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	return errors.New("demo: not implemented yet")
}

// demoLoop drives a demo agent against a running server until ctx ends;
// `serve --demo` runs it in-process. Placeholder.
func demoLoop(ctx context.Context, baseURL, token string, logger *slog.Logger) error {
	<-ctx.Done()
	return nil
}

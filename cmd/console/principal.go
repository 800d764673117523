package main

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"strings"

	"gatehouse/auth"
)

// runPrincipal produces the secrets of principals.yaml: a password hash
// (the password read from stdin, never from an argument, which would leave
// it in shell history and the process list) or a fresh bearer token.
func runPrincipal(args []string, stdin io.Reader, stdout io.Writer) error {
	if len(args) != 1 {
		return fmt.Errorf("%w: principal hash-password|new-token", errUsage)
	}
	switch args[0] {
	case "hash-password":
		line, err := bufio.NewReader(stdin).ReadString('\n')
		if err != nil && !errors.Is(err, io.EOF) {
			return fmt.Errorf("reading the password from stdin: %w", err)
		}
		pw := strings.TrimRight(line, "\r\n")
		if pw == "" {
			return errors.New("no password on stdin")
		}
		h, err := auth.HashPassword(pw)
		if err != nil {
			return err
		}
		_, err = fmt.Fprintln(stdout, h)
		return err
	case "new-token":
		tok, sum, err := auth.NewToken()
		if err != nil {
			return err
		}
		_, err = fmt.Fprintf(stdout, "token:  %s\nsha256: %s\n# give the token to the agent; put only the sha256 in principals.yaml\n", tok, sum)
		return err
	default:
		return fmt.Errorf("%w: unknown principal command %q", errUsage, args[0])
	}
}

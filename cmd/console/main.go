// Command console is Gatehouse's one binary: the console and JSON API
// server, migrations, the policy tools, the approval CLI, principals and the
// demo agent.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
)

const usage = `usage: console <command> [arguments]

commands:
  serve                 console + API + metrics + reaper (migrates first)
  migrate up|status     database migrations
  policy version|check|eval
                        the loaded policy; eval dry-runs the gate on stdin
  policy test [--policy-dir D] [--tools F] [-v] CASES_DIR
                        run YAML policy cases; exit 1 when one fails
  policy diff --from DIR --to DIR [--cases CASES_DIR] [--database-url URL] [--exit-code]
                        what deploying the profiles of --to over --from changes
  approval --principal ID list|show ID|resolve ID approve_once|deny [--reason R]
  principal hash-password|new-token
  demo                  a demo agent that submits runs and proposes actions
  mcp stdio|demo-upstream
                        stdio bridge to a server's MCP gateway (/mcp);
                        the demo MCP server make run puts behind it
`

// errUsage marks an error whose remedy is reading the usage text.
var errUsage = errors.New("usage")

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "console:", err)
		if errors.Is(err, errUsage) {
			fmt.Fprint(os.Stderr, usage)
			os.Exit(2)
		}
		os.Exit(1)
	}
}

func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		return fmt.Errorf("%w: no command", errUsage)
	}
	cmd, rest := args[0], args[1:]
	env := loadEnvConfig(os.Getenv)
	switch cmd {
	case "serve":
		return runServe(ctx, env, rest, stderr)
	case "migrate":
		return runMigrate(ctx, env, rest, stdout)
	case "policy":
		return runPolicy(ctx, env, rest, stdin, stdout)
	case "approval":
		return runApproval(ctx, env, rest, stdout)
	case "principal":
		return runPrincipal(rest, stdin, stdout)
	case "demo":
		return runDemo(ctx, env, rest, stdout, stderr)
	case "mcp":
		return runMCP(ctx, env, rest, stdin, stdout, stderr)
	case "help", "-h", "--help":
		fmt.Fprint(stdout, usage)
		return nil
	default:
		return fmt.Errorf("%w: unknown command %q", errUsage, cmd)
	}
}

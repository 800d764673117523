package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"sort"
	"text/tabwriter"
	"time"

	"gatehouse/engine"
	"gatehouse/rules"
	"gatehouse/service"
)

// cliPrincipalID is who the approval CLI acts as: an operator principal of
// the tenant named on the command line, holding only the approval scopes.
// Resolutions it makes are recorded as resolved_by "cli".
const cliPrincipalID = "cli"

// runApproval is `console approval list|show ID|resolve ID approve_once|deny`.
// It calls the same service methods as the API and the console.
func runApproval(ctx context.Context, args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("approval", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	dbURL := fs.String("database-url", os.Getenv("DATABASE_URL"), "PostgreSQL connection string (DATABASE_URL)")
	tenant := fs.String("tenant", "", "tenant whose approvals to act on (required)")
	status := fs.String("status", "pending", "list: pending, resolved, approved, denied, expired or cancelled")
	runID := fs.String("run", "", "list: only this run's approvals")
	limit := fs.Int("limit", 50, "list: at most this many (max 200)")
	asJSON := fs.Bool("json", false, "print JSON")
	reason := fs.String("reason", "", "resolve: reason recorded with the resolution")
	rest, err := parseInterspersed(fs, args)
	if err != nil {
		return fmt.Errorf("%w: approval: %w", errUsage, err)
	}
	if len(rest) == 0 {
		return fmt.Errorf("%w: approval list|show|resolve", errUsage)
	}
	if *tenant == "" {
		return fmt.Errorf("%w: approval: --tenant is required", errUsage)
	}
	cmd, rest := rest[0], rest[1:]
	switch {
	case cmd == "list" && len(rest) == 0:
	case cmd == "show" && len(rest) == 1:
	case cmd == "resolve" && len(rest) == 2:
	default:
		return fmt.Errorf("%w: approval list | show ID | resolve ID approve_once|deny [--reason R]", errUsage)
	}

	pool, err := connect(ctx, *dbURL)
	if err != nil {
		return err
	}
	defer pool.Close()
	policy, err := rules.Load(rules.Options{
		PolicyDir:      os.Getenv("CONSOLE_POLICY_DIR"),
		ToolsFile:      os.Getenv("CONSOLE_TOOLS"),
		DefaultProfile: os.Getenv("CONSOLE_POLICY_PROFILE"),
	})
	if err != nil {
		return fmt.Errorf("loading policy: %w", err)
	}
	svc, err := service.New(ctx, service.Config{Pool: pool, Policy: policy, ReplicaID: "cli"})
	if err != nil {
		return err
	}
	p := engine.Principal{ID: cliPrincipalID, TenantID: *tenant, Scopes: []string{"approval.read", "approval.resolve"}}

	switch cmd {
	case "list":
		page, err := svc.ListApprovals(ctx, p, service.ApprovalFilter{
			Status: engine.ApprovalStatus(*status), RunID: *runID, Limit: *limit,
		})
		if err != nil {
			return err
		}
		if *asJSON {
			return writeJSON(stdout, page)
		}
		return printApprovalTable(stdout, page.Items)
	case "show":
		a, err := svc.GetApproval(ctx, p, rest[0])
		if err != nil {
			return err
		}
		if *asJSON {
			return writeJSON(stdout, a)
		}
		return printApproval(stdout, a)
	default:
		out, err := svc.ResolveApproval(ctx, p, rest[0], engine.ApprovalResolutionType(rest[1]), *reason)
		if err != nil {
			return err
		}
		if *asJSON {
			if err := writeJSON(stdout, map[string]any{"result": out.Result, "approval": out.Approval}); err != nil {
				return err
			}
		} else {
			fmt.Fprintf(stdout, "%s: %s (%s by %s)\n", out.Result, out.Approval.ID, out.Approval.Status, orDash(out.Approval.ResolvedBy))
		}
		if out.Result == service.ResolveConflict {
			return errors.New("conflict: the approval was already settled differently")
		}
		return nil
	}
}

func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

func printApprovalTable(w io.Writer, items []service.Approval) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tRISK\tTOOL\tSTATUS\tCREATED\tEXPIRES\tSUMMARY")
	for _, a := range items {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", a.ID, a.Risk, a.ToolName, a.Status,
			a.CreatedAt.UTC().Format(time.RFC3339), a.ExpiresAt.UTC().Format(time.RFC3339), oneLine(a.ActionSummary, 60))
	}
	return tw.Flush()
}

func printApproval(w io.Writer, a service.Approval) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	row := func(k, v string) { fmt.Fprintf(tw, "%s\t%s\n", k, v) }
	row("id", a.ID)
	row("status", string(a.Status))
	row("tool", a.ToolName)
	row("summary", oneLine(a.ActionSummary, 200))
	row("risk", string(a.Risk))
	row("side effect", string(a.SideEffect))
	row("policy reason", a.PolicyReason)
	row("policy version", a.PolicyVersion)
	row("run", a.RunID)
	row("session", a.SessionID)
	row("created", a.CreatedAt.UTC().Format(time.RFC3339))
	row("expires", a.ExpiresAt.UTC().Format(time.RFC3339))
	row("resolution", orDash(string(a.Resolution)))
	row("resolved by", orDash(a.ResolvedBy))
	if a.ResolvedAt != nil {
		row("resolved at", a.ResolvedAt.UTC().Format(time.RFC3339))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	// The arguments are the redacted view; digests cover truncated values.
	fmt.Fprintln(w, "arguments:")
	keys := make([]string, 0, len(a.Arguments))
	for k := range a.Arguments {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		v, _ := json.Marshal(a.Arguments[k])
		fmt.Fprintf(w, "  %s: %s\n", k, v)
		if d, ok := a.ArgumentDigests[k]; ok {
			fmt.Fprintf(w, "    sha256 of the full value: %s\n", d)
		}
	}
	return nil
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// oneLine flattens and shortens free text for a table cell.
func oneLine(s string, max int) string {
	out := make([]rune, 0, len(s))
	for _, r := range s {
		if r == '\n' || r == '\r' || r == '\t' {
			r = ' '
		}
		out = append(out, r)
	}
	if len(out) > max {
		return string(out[:max-1]) + "…"
	}
	return string(out)
}

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

	"gatehouse/api"
	"gatehouse/auth"
	"gatehouse/engine"
	"gatehouse/service"
)

// runApproval is `console approval list|show ID|resolve ID approve_once|deny`.
// It acts as a real principal from the principals file (--principal), with
// that principal's tenant and scopes, and calls the same service methods as
// the API and the console: list and show need approval.read, resolve needs
// approval.resolve, and a resolution is recorded under the principal's id,
// so the profile's distinct-resolver rule applies to the CLI too.
func runApproval(ctx context.Context, args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("approval", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	dbURL := fs.String("database-url", os.Getenv("DATABASE_URL"), "PostgreSQL connection string (DATABASE_URL)")
	principalID := fs.String("principal", "", "principal to act as, from the principals file (required; AUTH_MODE=dev: dev)")
	principalsFile := fs.String("principals", envOr("CONSOLE_PRINCIPALS", "./principals.yaml"), "principals file (CONSOLE_PRINCIPALS)")
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
	cmd, rest := rest[0], rest[1:]
	scope := "approval.read"
	switch {
	case cmd == "list" && len(rest) == 0:
	case cmd == "show" && len(rest) == 1:
	case cmd == "resolve" && len(rest) == 2:
		scope = "approval.resolve"
	default:
		return fmt.Errorf("%w: approval list | show ID | resolve ID approve_once|deny [--reason R] --principal ID", errUsage)
	}
	p, err := approvalPrincipal(*principalsFile, *principalID, scope)
	if err != nil {
		return err
	}

	pool, err := connect(ctx, *dbURL)
	if err != nil {
		return err
	}
	defer pool.Close()
	policy, err := loadPolicyFromEnv()
	if err != nil {
		return fmt.Errorf("loading policy: %w", err)
	}
	svc, err := service.New(ctx, service.Config{Pool: pool, Policy: policy, ReplicaID: "cli", SkipProfileAudit: true})
	if err != nil {
		return err
	}

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

// approvalPrincipal finds the principal the CLI acts as: in the principals
// file, or the dev principal under AUTH_MODE=dev, and holding scope.
func approvalPrincipal(file, id, scope string) (engine.Principal, error) {
	var dir *auth.Directory
	if os.Getenv("AUTH_MODE") == "dev" {
		dir = auth.Dev()
		if id == "" {
			id = auth.DevPrincipalID
		}
	} else {
		var err error
		if dir, err = auth.Load(file); err != nil {
			return engine.Principal{}, err
		}
	}
	if id == "" {
		return engine.Principal{}, fmt.Errorf("%w: approval: --principal is required", errUsage)
	}
	p, ok := dir.ByID(id)
	if !ok {
		return engine.Principal{}, fmt.Errorf("approval: no principal %q in the principals file", id)
	}
	if len(engine.MissingScopes([]string{scope}, p.Scopes)) > 0 {
		return engine.Principal{}, fmt.Errorf("approval: principal %q lacks the %s scope", id, scope)
	}
	return p, nil
}

func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

func printApprovalTable(w io.Writer, items []api.Approval) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tRISK\tTOOL\tSTATUS\tCREATED\tEXPIRES\tSUMMARY")
	for _, a := range items {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", a.ID, a.Risk, a.ToolName, a.Status,
			a.CreatedAt.UTC().Format(time.RFC3339), a.ExpiresAt.UTC().Format(time.RFC3339), oneLine(a.ActionSummary, 60))
	}
	return tw.Flush()
}

func printApproval(w io.Writer, a api.Approval) error {
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

package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"sort"
	"text/tabwriter"
	"time"

	"gatehouse/api"
	"gatehouse/auth"
	"gatehouse/engine"
	"gatehouse/rules"
	"gatehouse/service"
)

// runApproval is `console approval list|show ID|resolve ID approve_once|deny`.
// It acts as a real principal from the principals file (--principal), with
// that principal's tenant and scopes, and calls the same service methods as
// the API and the console: list and show need approval.read, resolve needs
// approval.resolve, and a resolution is recorded under the principal's id,
// so the profile's distinct-resolver rule applies to the CLI too.
func runApproval(ctx context.Context, env envConfig, args []string, stdout io.Writer) error {
	req, err := parseApprovalArgs(env, args)
	if err != nil {
		return err
	}
	p, err := approvalPrincipal(env.DevMode, req.principalsFile, req.principalID, req.scope)
	if err != nil {
		return err
	}
	pool, err := connect(ctx, req.dbURL)
	if err != nil {
		return err
	}
	defer pool.Close()
	opts, err := env.policyOptions()
	if err != nil {
		return err
	}
	policy, err := rules.Load(opts)
	if err != nil {
		return fmt.Errorf("loading policy: %w", err)
	}
	svc, err := service.New(ctx, service.Config{Pool: pool, Policy: policy, ReplicaID: "cli", SkipProfileAudit: true})
	if err != nil {
		return err
	}
	switch req.cmd {
	case "list":
		return approvalList(ctx, svc, p, req, stdout)
	case "show":
		return approvalShow(ctx, svc, p, req, stdout)
	default:
		return approvalResolve(ctx, svc, p, req, stdout)
	}
}

// approvalRequest is one parsed `console approval` command line.
type approvalRequest struct {
	cmd            string   // list, show or resolve
	rest           []string // show: ID; resolve: ID and resolution
	scope          string   // what cmd needs of the principal
	dbURL          string
	principalID    string
	principalsFile string
	status         string
	runID          string
	limit          int
	asJSON         bool
	reason         string
}

// parseApprovalArgs reads the flags (anywhere on the line) and checks the
// command's arity.
func parseApprovalArgs(env envConfig, args []string) (approvalRequest, error) {
	var req approvalRequest
	fs := flag.NewFlagSet("approval", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.StringVar(&req.dbURL, "database-url", env.DatabaseURL, "PostgreSQL connection string (DATABASE_URL)")
	fs.StringVar(&req.principalID, "principal", "", "principal to act as, from the principals file (required; AUTH_MODE=dev: dev)")
	fs.StringVar(&req.principalsFile, "principals", env.Principals, "principals file (CONSOLE_PRINCIPALS)")
	fs.StringVar(&req.status, "status", "pending", "list: pending, resolved, approved, denied, expired or cancelled")
	fs.StringVar(&req.runID, "run", "", "list: only this run's approvals")
	fs.IntVar(&req.limit, "limit", 50, "list: at most this many (max 200)")
	fs.BoolVar(&req.asJSON, "json", false, "print JSON")
	fs.StringVar(&req.reason, "reason", "", "resolve: reason recorded with the resolution")
	rest, err := parseInterspersed(fs, args)
	if err != nil {
		return req, fmt.Errorf("%w: approval: %w", errUsage, err)
	}
	if len(rest) == 0 {
		return req, fmt.Errorf("%w: approval list|show|resolve", errUsage)
	}
	req.cmd, req.rest = rest[0], rest[1:]
	req.scope = engine.ScopeApprovalRead
	switch {
	case req.cmd == "list" && len(req.rest) == 0:
	case req.cmd == "show" && len(req.rest) == 1:
	case req.cmd == "resolve" && len(req.rest) == 2:
		req.scope = engine.ScopeApprovalResolve
	default:
		return req, fmt.Errorf("%w: approval list | show ID | resolve ID approve_once|deny [--reason R] --principal ID", errUsage)
	}
	return req, nil
}

// approvalList prints one page of the principal's approvals.
func approvalList(ctx context.Context, svc *service.Service, p engine.Principal, req approvalRequest, stdout io.Writer) error {
	page, err := svc.ListApprovals(ctx, p, service.ApprovalFilter{
		Status: engine.ApprovalStatus(req.status), RunID: req.runID, Limit: req.limit,
	})
	if err != nil {
		return err
	}
	if req.asJSON {
		return writeJSON(stdout, page)
	}
	return printApprovalTable(stdout, page.Items)
}

// approvalShow prints one approval.
func approvalShow(ctx context.Context, svc *service.Service, p engine.Principal, req approvalRequest, stdout io.Writer) error {
	a, err := svc.GetApproval(ctx, p, req.rest[0])
	if err != nil {
		return err
	}
	if req.asJSON {
		return writeJSON(stdout, a)
	}
	return printApproval(stdout, a)
}

// approvalResolve settles one approval; a conflict (settled differently
// before) is printed and then fails the command.
func approvalResolve(ctx context.Context, svc *service.Service, p engine.Principal, req approvalRequest, stdout io.Writer) error {
	out, err := svc.ResolveApproval(ctx, p, req.rest[0], engine.ApprovalResolutionType(req.rest[1]), req.reason)
	if err != nil {
		return err
	}
	if req.asJSON {
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

// approvalPrincipal finds the principal the CLI acts as: in the principals
// file, or the dev principal under AUTH_MODE=dev, and holding scope.
func approvalPrincipal(devMode bool, file, id, scope string) (engine.Principal, error) {
	var dir *auth.Directory
	if devMode {
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

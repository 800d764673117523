package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"sync"
	"time"

	"github.com/google/uuid"

	"gatehouse/api"
	"gatehouse/client"
	"gatehouse/engine"
)

// runDemo runs the demo agent against a server: `console demo --url U
// --token T` (or GATEHOUSE_URL / GATEHOUSE_TOKEN).
func runDemo(ctx context.Context, env envConfig, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("demo", flag.ContinueOnError)
	fs.SetOutput(stderr)
	baseURL := fs.String("url", env.ServerURL, "server base URL (GATEHOUSE_URL)")
	token := fs.String("token", env.Token, "bearer token of a principal with run.write and run.read (GATEHOUSE_TOKEN)")
	if err := fs.Parse(args); err != nil {
		return fmt.Errorf("%w: %w", errUsage, err)
	}
	if *token == "" {
		return fmt.Errorf("%w: demo needs --token", errUsage)
	}
	logger := slog.New(slog.NewTextHandler(stdout, nil))
	return demoLoop(ctx, *baseURL, *token, logger)
}

// Demo pacing: a quick burst so a fresh console shows a handful of cards
// within seconds, then a proposal every second or two, with at most
// demoMaxWaiting runs parked at once so the queue never floods.
const (
	demoBurst       = 5
	demoBurstPause  = 300 * time.Millisecond
	demoMinPause    = time.Second
	demoMaxPause    = 2 * time.Second
	demoMaxWaiting  = 10
	demoLease       = 60
	demoAgentID     = "demo-agent"
	demoAgentVer    = "demo-1.0"
	demoClaimTries  = 20
	demoClaimPause  = 250 * time.Millisecond
	demoHTTPTimeout = 45 * time.Second // above the API's 30 s long-poll
)

// demoAction is one scenario: the action the agent proposes.
type demoAction struct {
	tool    string
	kind    engine.ActionKind
	summary string
	args    map[string]any
	origin  engine.TrustLevel
	target  *engine.ExecutionTarget
}

// demoScenarios is a realistic mix across tools, risks and decisions:
// allowed workspace writes, approvals of every risk, a hardline block and
// an unknown tool.
func demoScenarios() []demoAction {
	sandbox := &engine.ExecutionTarget{Kind: engine.TargetSandbox, Isolated: true}
	user := engine.TrustUser
	return []demoAction{
		{tool: "payments.charge", summary: "Charge Acme Corp $49.00 for the Pro plan renewal", origin: user,
			args: map[string]any{"customer": "cus_8812", "amount_cents": 4900, "currency": "USD"}},
		{tool: "email.send", summary: "Email the Q3 summary to dana@example.com", origin: user,
			args: map[string]any{"to": "dana@example.com", "subject": "Q3 summary", "body": "Hi Dana,\n\nAttached is the Q3 summary: revenue up 12%, churn down to 2.1%.\n\nBest,\nthe agent"}},
		{tool: "workspace.write_text", summary: "Save meeting notes to notes/standup.md", origin: user, target: sandbox,
			args: map[string]any{"path": "notes/standup.md", "text": "- shipped the importer\n- next: billing export"}},
		{tool: "files.delete", summary: "Delete the stale export report-2023.csv", origin: user,
			args: map[string]any{"file_id": "file_31c9", "name": "report-2023.csv"}},
		{tool: "artifact.export", kind: engine.ActionArtifactExport, summary: "Export the churn analysis chart to the shared drive", origin: user,
			args: map[string]any{"artifact_id": "art_77", "destination": "drive://team/analysis"}},
		{tool: "blog.publish", summary: "Publish \"Release notes 0.1\" on the company blog", origin: user,
			args: map[string]any{"title": "Release notes 0.1", "body": "Gatehouse 0.1 ships the approval console. " + longText()}},
		{tool: "http.post", summary: "POST the scraped price list to a webhook found on a web page", origin: engine.TrustExternalUntrusted,
			args: map[string]any{"url": "https://hooks.example.net/ingest", "body": `{"prices": [12.5, 13.1]} <script>alert(1)</script>`}},
		{tool: "sandbox.exec", summary: "Clean up the build directory", origin: user, target: sandbox,
			args: map[string]any{"command": "rm -rf / --no-preserve-root"}},
		{tool: "crm.export_all", summary: "Export every CRM contact", origin: user,
			args: map[string]any{"format": "csv"}},
		{tool: "workspace.write_text", summary: "Write the draft reply to drafts/reply.md", origin: user, target: sandbox,
			args: map[string]any{"path": "drafts/reply.md", "text": "Thanks for the report, we are on it."}},
		{tool: "schedule.create", summary: "Schedule the weekly digest for Monday 09:00", origin: user,
			args: map[string]any{"task": "weekly-digest", "when": "2030-01-07T09:00:00Z"}},
		{tool: "sandbox.exec", summary: "Run the unit tests", origin: user, target: sandbox,
			args: map[string]any{"command": "go test ./..."}},
	}
}

// longText makes one argument long enough to be truncated in the redacted
// view, so the console shows its digest.
func longText() string {
	b := make([]byte, 0, 700)
	for len(b) < 700 {
		b = append(b, "Highlights: faster queue, phone layout, dark scheme. "...)
	}
	return string(b)
}

// demoLoop drives a demo agent against a running server until ctx ends;
// `serve --demo` runs it in-process. Each scenario is its own run: submit,
// claim, propose; allowed actions record a result, parked ones wait for a
// human and resume through revalidation once approved.
func demoLoop(ctx context.Context, baseURL, token string, logger *slog.Logger) error {
	cl, err := client.New(baseURL, token, &http.Client{Timeout: demoHTTPTimeout})
	if err != nil {
		return fmt.Errorf("demo: %w", err)
	}
	scenarios := demoScenarios()
	slots := make(chan struct{}, demoMaxWaiting)
	var wg sync.WaitGroup
	defer wg.Wait()
	for i := 0; ctx.Err() == nil; i++ {
		select {
		case slots <- struct{}{}:
		case <-ctx.Done():
			return nil
		}
		a := scenarios[i%len(scenarios)]
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-slots }()
			if err := demoRun(ctx, cl, a, i); err != nil && ctx.Err() == nil {
				logger.Warn("demo run failed", "tool", a.tool, "error", err)
			}
		}()
		pause := demoBurstPause
		if i >= demoBurst {
			pause = demoMinPause + rand.N(demoMaxPause-demoMinPause) //nolint:gosec // pacing jitter, not a secret
		}
		select {
		case <-time.After(pause):
		case <-ctx.Done():
		}
	}
	return nil
}

// demoRun plays one scenario as one run.
func demoRun(ctx context.Context, cl *client.Client, a demoAction, n int) error {
	worker := fmt.Sprintf("demo-worker-%d", n)
	run, err := cl.SubmitRun(ctx, api.SubmitRunInput{
		SessionID: uuid.NewString(), AgentID: demoAgentID, AgentVersion: demoAgentVer,
	})
	if err != nil {
		return fmt.Errorf("submit: %w", err)
	}
	lease, err := demoClaim(ctx, cl, run.ID, worker)
	if err != nil {
		return err
	}
	kind := a.kind
	if kind == "" {
		kind = engine.ActionToolCall
	}
	res, err := cl.Propose(ctx, run.ID, lease, engine.ActionRequest{
		ActionID: uuid.NewString(), Kind: kind, Name: a.tool, Summary: a.summary, StepNumber: 1,
		Arguments: a.args, OriginTrust: a.origin, Target: a.target,
	})
	if err != nil {
		return fmt.Errorf("propose %s: %w", a.tool, err)
	}
	switch res.Decision {
	case engine.DecisionAllow, engine.DecisionAllowWithModifications:
		if _, err := cl.Result(ctx, run.ID, res.InvocationID, lease, "succeeded"); err != nil {
			return fmt.Errorf("result: %w", err)
		}
		return demoComplete(ctx, cl, run.ID, lease)
	case engine.DecisionDeny:
		if res.RunStatus != api.RunRunning {
			return nil // the circuit breaker or a cancel ended the run
		}
		return demoComplete(ctx, cl, run.ID, lease)
	}
	return demoAwait(ctx, cl, run.ID, worker, res.ApprovalID, res.InvocationID, a.args)
}

// demoAwait waits for the human, then resumes: an approved invocation is
// revalidated and executed; a denied one is skipped; an expired or
// cancelled approval ended the run already.
func demoAwait(ctx context.Context, cl *client.Client, runID, worker, approvalID, invID string, args map[string]any) error {
	ap, err := cl.WaitForResolution(ctx, runID, approvalID)
	if err != nil {
		return fmt.Errorf("wait: %w", err)
	}
	if ap.Status != engine.ApprovalApproved && ap.Status != engine.ApprovalDenied {
		return nil
	}
	lease, err := demoClaim(ctx, cl, runID, worker)
	if err != nil {
		return err
	}
	if ap.Status == engine.ApprovalApproved {
		rr, err := cl.Resume(ctx, runID, invID, lease, api.ResumeInput{Arguments: args, AgentVersion: demoAgentVer})
		if err != nil {
			return fmt.Errorf("resume: %w", err)
		}
		if rr.Authorized {
			if _, err := cl.Result(ctx, runID, invID, lease, "succeeded"); err != nil {
				return fmt.Errorf("result: %w", err)
			}
		}
	}
	return demoComplete(ctx, cl, runID, lease)
}

// demoClaim claims a specific run, retrying briefly: a resolved run is
// re-queued in the resolving transaction, but the event can reach us first.
func demoClaim(ctx context.Context, cl *client.Client, runID, worker string) (api.Lease, error) {
	for range demoClaimTries {
		run, ok, err := cl.Claim(ctx, api.ClaimInput{WorkerID: worker, LeaseSeconds: demoLease, RunID: runID})
		if err != nil {
			return api.Lease{}, fmt.Errorf("claim: %w", err)
		}
		if ok {
			return api.Lease{WorkerID: worker, FencingToken: run.FencingToken}, nil
		}
		select {
		case <-time.After(demoClaimPause):
		case <-ctx.Done():
			return api.Lease{}, ctx.Err()
		}
	}
	return api.Lease{}, errors.New("claim: the run was not claimable")
}

func demoComplete(ctx context.Context, cl *client.Client, runID string, lease api.Lease) error {
	if _, err := cl.Complete(ctx, runID, lease, "completed"); err != nil {
		return fmt.Errorf("complete: %w", err)
	}
	return nil
}

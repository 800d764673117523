package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/uuid"

	"gatehouse/api"
	"gatehouse/engine"
	"gatehouse/internal/testdb"
	"gatehouse/rules"
	"gatehouse/service"
)

const testPrincipals = `principals:
  - id: alice
    tenant_id: acme
    display_name: Alice
    scopes: [run.read, run.write, demo.write]
  - id: bob
    tenant_id: acme
    display_name: Bob
    scopes: [approval.read]
  - id: carol
    tenant_id: acme
    display_name: Carol
    scopes: [approval.read, approval.resolve]
  - id: mallory
    tenant_id: other
    display_name: Mallory
    scopes: [approval.read, approval.resolve]
`

// parkedApproval parks one demo.external_write of alice's and returns the
// approval id.
func parkedApproval(t *testing.T, dbURL string) string {
	t.Helper()
	return parkedApprovalUnder(t, dbURL, rules.Options{}, "", engine.ActionRequest{
		ActionID: uuid.NewString(), Kind: engine.ActionToolCall, Name: "demo.external_write", Summary: "write a record",
		StepNumber: 1, Arguments: map[string]any{"record": "r1", "field": "f", "value": "v"}, OriginTrust: engine.TrustUser,
	})
}

// parkedApprovalUnder parks action in a run of alice's under profile of
// the set opts loads and returns the approval id.
func parkedApprovalUnder(t *testing.T, dbURL string, opts rules.Options, profile string, action engine.ActionRequest) string {
	t.Helper()
	ctx := context.Background()
	pool := testdb.Pool(t, dbURL)
	policy, err := rules.Load(opts)
	if err != nil {
		t.Fatal(err)
	}
	svc, err := service.New(ctx, service.Config{Pool: pool, Policy: policy, ReplicaID: "test"})
	if err != nil {
		t.Fatal(err)
	}
	alice := engine.Principal{ID: "alice", TenantID: "acme", Scopes: []string{"run.read", "run.write", "demo.write"}, AnyPolicyProfile: true}
	run, err := svc.SubmitRun(ctx, alice, api.SubmitRunInput{SessionID: uuid.NewString(), AgentID: "a", AgentVersion: "1", PolicyProfile: profile})
	if err != nil {
		t.Fatal(err)
	}
	run, _, err = svc.ClaimRun(ctx, alice, api.ClaimInput{WorkerID: "w", LeaseSeconds: 60, RunID: run.ID})
	if err != nil {
		t.Fatal(err)
	}
	res, err := svc.Propose(ctx, alice, run.ID, api.Lease{WorkerID: "w", FencingToken: run.FencingToken}, action)
	if err != nil || res.ApprovalID == "" {
		t.Fatalf("park: %+v %v", res, err)
	}
	return res.ApprovalID
}

func TestApprovalCommands(t *testing.T) {
	dbURL := testdb.NewDatabase(t, "console_approval")
	file := filepath.Join(t.TempDir(), "principals.yaml")
	if err := os.WriteFile(file, []byte(testPrincipals), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("DATABASE_URL", dbURL)
	t.Setenv("CONSOLE_PRINCIPALS", file)
	t.Setenv("AUTH_MODE", "")
	for _, k := range []string{"CONSOLE_POLICY_DIR", "CONSOLE_TOOLS", "CONSOLE_POLICY_PROFILE"} {
		t.Setenv(k, "")
	}
	id := parkedApproval(t, dbURL)
	ctx := context.Background()
	approval := func(args ...string) (string, error) {
		var out bytes.Buffer
		err := runApproval(ctx, loadEnvConfig(os.Getenv), args, &out)
		return out.String(), err
	}

	out, err := approval("list", "--principal", "carol")
	if err != nil || !strings.Contains(out, id) || !strings.Contains(out, "demo.external_write") {
		t.Fatalf("list: %v\n%s", err, out)
	}
	out, err = approval("list", "--principal", "mallory", "--json")
	var page api.ApprovalPage
	if err != nil || json.Unmarshal([]byte(out), &page) != nil || len(page.Items) != 0 {
		t.Fatalf("another tenant lists: %v\n%s", err, out)
	}
	out, err = approval("show", id, "--principal", "bob")
	if err != nil || !strings.Contains(out, "pending") || !strings.Contains(out, "record") {
		t.Fatalf("show: %v\n%s", err, out)
	}
	if _, err := approval("show", id, "--principal", "mallory"); !errors.Is(err, service.ErrNotFound) {
		t.Fatalf("show across tenants: %v", err)
	}

	// Refusals: no principal, an unknown one, one without the scope, and
	// the run's owner who holds no approval scope at all.
	if _, err := approval("list"); !errors.Is(err, errUsage) {
		t.Fatalf("no --principal: %v", err)
	}
	for who, args := range map[string][]string{
		"unknown": {"list", "--principal", "eve"},
		"bob":     {"resolve", id, "approve_once", "--principal", "bob"},
		"alice":   {"resolve", id, "approve_once", "--principal", "alice"},
	} {
		if _, err := approval(args...); err == nil {
			t.Fatalf("%s: resolve accepted", who)
		}
	}

	out, err = approval("resolve", id, "approve_once", "--principal", "carol", "--reason", "looks right", "--json")
	var res struct {
		Result   service.ResolveResult
		Approval api.Approval
	}
	if err != nil || json.Unmarshal([]byte(out), &res) != nil {
		t.Fatalf("resolve: %v\n%s", err, out)
	}
	if res.Result != service.ResolveApplied || res.Approval.ResolvedBy != "carol" || res.Approval.Status != engine.ApprovalApproved {
		t.Fatalf("resolve: %+v", res)
	}
	if out, err := approval("resolve", id, "approve_once", "--principal", "carol"); err != nil || !strings.HasPrefix(out, "same") {
		t.Fatalf("repeat: %v %q", err, out)
	}
	if _, err := approval("resolve", id, "deny", "--principal", "carol"); err == nil {
		t.Fatal("a differing resolution reported success")
	}
}

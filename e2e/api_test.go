package e2e

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"gatehouse/api"
	"gatehouse/client"
	"gatehouse/engine"
)

// TestAPI runs the black-box API cases against one server; each subtest
// isolates itself by run (and tenant where it matters).
func TestAPI(t *testing.T) {
	srv := startServer(t, serverOptions{ReaperInterval: 200 * time.Millisecond})
	cases := []struct {
		name string
		fn   func(*testing.T, *server)
	}{
		{"AuthAndScopes", testAuthAndScopes},
		{"Gate07CrossTenant", testGate07CrossTenant},
		{"ProposeParkResolveResume", testProposeParkResolveResume},
		{"Gate09IdempotentResolution", testGate09IdempotentResolution},
		{"Gate08DenialResultKeys", testGate08DenialResultKeys},
		{"Gate08WorkerResponsesHideTheRule", testGate08WorkerResponsesHideTheRule},
		{"Gate12RunReadCannotWrite", testGate12RunReadCannotWrite},
		{"SchemaInvalidProposalIsADenial", testSchemaInvalidProposalIsADenial},
		{"Expiry", testExpiry},
		{"AgentWaitsForResolution", testAgentWaitsForResolution},
		{"Cancellation", testCancellation},
		{"BadInput", testBadInput},
		{"Pagination", testPagination},
		{"OperationalEndpoints", testOperationalEndpoints},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			c.fn(t, srv)
		})
	}
}

// route is one API route with its scope ("" = any principal).
type route struct {
	method, path, scope string
}

// apiRoutes lists every /v1 route with a placeholder id (scope checks run
// before the handler looks the id up).
var apiRoutes = []route{
	{"GET", "/v1/policy", ""},
	{"GET", "/v1/tools", "run.read"},
	{"POST", "/v1/runs", "run.write"},
	{"GET", "/v1/runs/x", "run.read"},
	{"POST", "/v1/runs/claim", "run.write"},
	{"POST", "/v1/runs/x/heartbeat", "run.write"},
	{"POST", "/v1/runs/x/actions", "run.write"},
	{"POST", "/v1/runs/x/invocations/y/resume", "run.write"},
	{"POST", "/v1/runs/x/invocations/y/result", "run.write"},
	{"POST", "/v1/runs/x/complete", "run.write"},
	{"POST", "/v1/runs/x/cancel", "run.cancel"},
	{"GET", "/v1/approvals", "approval.read"},
	{"GET", "/v1/approvals/x", "approval.read"},
	{"POST", "/v1/approvals/x/resolve", "approval.resolve"},
	{"GET", "/v1/events", "run.read"},
}

func testAuthAndScopes(t *testing.T, srv *server) {
	// A live console session of a principal holding every route's scope.
	session := consoleLogin(t, srv, "alice")
	for _, r := range apiRoutes {
		url := srv.BaseURL + r.path
		if st, body := rawCall(t, r.method, url, "", "{}"); st != http.StatusUnauthorized || errorCode(body) != "unauthenticated" {
			t.Errorf("%s %s without a token: %d %v", r.method, r.path, st, body)
		}
		if st, body := rawCall(t, r.method, url, "ghs_not-a-real-token", "{}"); st != http.StatusUnauthorized || errorCode(body) != "unauthenticated" {
			t.Errorf("%s %s with a bad token: %d %v", r.method, r.path, st, body)
		}
		// The console's cookie is no credential for the JSON API.
		if st, body := rawCall(t, r.method, url, "", "{}", "Cookie", session.Name+"="+session.Value); st != http.StatusUnauthorized || errorCode(body) != "unauthenticated" {
			t.Errorf("%s %s with only a live console cookie: %d %v, want 401", r.method, r.path, st, body)
		}
		st, body := rawCall(t, r.method, url, srv.Token("nobody"), "{}")
		if r.scope == "" {
			if st != http.StatusOK {
				t.Errorf("%s %s as a principal without scopes: %d, want 200", r.method, r.path, st)
			}
			continue
		}
		if st != http.StatusForbidden || errorCode(body) != "missing_scope" || !strings.Contains(errorMessage(body), r.scope) {
			t.Errorf("%s %s as nobody: %d %v, want 403 missing_scope naming %s", r.method, r.path, st, body, r.scope)
		}
	}
	// bob approves but does not run: a run route names run.write.
	st, body := rawCall(t, "POST", srv.BaseURL+"/v1/runs", srv.Token("bob"), `{}`)
	if st != http.StatusForbidden || !strings.Contains(errorMessage(body), "run.write") || strings.Contains(errorMessage(body), "approval") {
		t.Errorf("bob submitting a run: %d %v", st, body)
	}
}

func testGate07CrossTenant(t *testing.T, srv *server) {
	a, res := park(t, srv.Client("alice"))
	run, inv, appr := a.run.ID, res.InvocationID, res.ApprovalID
	carol := srv.Token("carol")
	lease := `{"worker_id":"` + a.lease.WorkerID + `","fencing_token":` + jsonNumber(a.lease.FencingToken)
	for _, r := range []struct{ method, path, body string }{
		{"GET", "/v1/runs/" + run, ""},
		{"POST", "/v1/runs/" + run + "/heartbeat", lease + `}`},
		{"POST", "/v1/runs/" + run + "/actions", lease + `,"action":{"action_id":"` + uuid.NewString() + `","kind":"tool_call","name":"workspace.read_text","summary":"s","step_number":1,"arguments":{"path":"a"},"argument_trust":{},"origin_trust":"user"}}`},
		{"POST", "/v1/runs/" + run + "/invocations/" + inv + "/resume", lease + `,"arguments":{},"agent_version":"1.0.0"}`},
		{"POST", "/v1/runs/" + run + "/invocations/" + inv + "/result", lease + `,"status":"succeeded"}`},
		{"POST", "/v1/runs/" + run + "/complete", lease + `,"status":"completed"}`},
		{"POST", "/v1/runs/" + run + "/cancel", ""},
		{"GET", "/v1/approvals/" + appr, ""},
		{"POST", "/v1/approvals/" + appr + "/resolve", `{"resolution":"approve_once"}`},
	} {
		if st, body := rawCall(t, r.method, srv.BaseURL+r.path, carol, r.body); st != http.StatusNotFound || errorCode(body) != "not_found" {
			t.Errorf("carol %s %s: %d %v, want 404 not_found", r.method, r.path, st, body)
		}
	}
	ctx := testContext(t)
	// Claiming by id answers "nothing to claim" (204), exactly as for an own
	// run that is not claimable: the answer says nothing about alice's run.
	if _, ok, err := srv.Client("carol").Claim(ctx, api.ClaimInput{WorkerID: "w", LeaseSeconds: 30, RunID: run}); ok || err != nil {
		t.Errorf("carol claims alice's run: ok=%v err=%v", ok, err)
	}
	page, err := srv.Client("carol").ListApprovals(ctx, client.ApprovalQuery{RunID: run})
	if err != nil || len(page.Items) != 0 {
		t.Errorf("carol lists alice's approvals: %v %v", page.Items, err)
	}
	events, err := srv.Client("carol").Events(ctx, client.EventQuery{RunID: run})
	if err != nil || len(events.Events) != 0 {
		t.Errorf("carol reads alice's events: %v %v", events.Events, err)
	}
	// Nothing carol did changed alice's approval.
	got, err := srv.Client("alice").GetApproval(ctx, appr)
	if err != nil || got.Status != engine.ApprovalPending {
		t.Fatalf("alice's approval after carol: %+v %v", got, err)
	}
}

func jsonNumber(n int64) string {
	b, _ := json.Marshal(n)
	return string(b)
}

func testProposeParkResolveResume(t *testing.T, srv *server) {
	ctx := testContext(t)
	alice, bob := srv.Client("alice"), srv.Client("bob")
	a := startRun(t, alice, nil)

	// An allowed action is authorized at once.
	if res := a.propose(t, allowedAction()); res.Decision != engine.DecisionAllow || res.RunStatus != api.RunRunning {
		t.Fatalf("allowed action: %+v", res)
	}
	// Proposing the same action id again is idempotent.
	req := parkingAction()
	res := a.propose(t, req)
	if res.Decision != engine.DecisionRequireApproval || res.RunStatus != api.RunWaitingForApproval {
		t.Fatalf("parking action: %+v", res)
	}
	run, err := alice.GetRun(ctx, a.run.ID)
	if err != nil || run.Status != api.RunWaitingForApproval || !slices.Contains(run.Checkpoint.PendingApprovalIDs, res.ApprovalID) {
		t.Fatalf("parked run: %+v %v", run, err)
	}

	page, err := bob.ListApprovals(ctx, client.ApprovalQuery{RunID: a.run.ID})
	if err != nil || len(page.Items) != 1 || page.Items[0].ID != res.ApprovalID {
		t.Fatalf("bob's queue: %+v %v", page, err)
	}
	card := page.Items[0]
	if card.ToolName != "demo.external_write" || card.ActionSummary == "" || card.Risk != engine.RiskHigh ||
		card.PolicyReason == "" || card.ExpiresAt.IsZero() || card.Arguments["record"] != "42" || card.SessionID != a.run.SessionID {
		t.Errorf("approval card: %+v", card)
	}
	var rawCard map[string]any
	_, rawCard = rawCall(t, "GET", srv.BaseURL+"/v1/approvals/"+res.ApprovalID, srv.Token("bob"), "")
	for _, k := range []string{"action_summary", "tool_name", "arguments", "argument_digests", "risk", "expires_at", "policy_reason", "status", "run_id", "session_id"} {
		if _, ok := rawCard[k]; !ok {
			t.Errorf("approval lacks %q: %v", k, rawCard)
		}
	}
	for _, k := range []string{"rule_id", "explanation", "decision"} {
		if _, ok := rawCard[k]; ok {
			t.Errorf("approval carries %q (the rule that fired)", k)
		}
	}

	approved, err := bob.Resolve(ctx, res.ApprovalID, engine.ResolutionApproveOnce, "looks right")
	if err != nil || approved.Status != engine.ApprovalApproved || approved.ResolvedBy != "bob" || approved.ResolvedAt == nil {
		t.Fatalf("resolve: %+v %v", approved, err)
	}
	run, err = alice.GetRun(ctx, a.run.ID)
	if err != nil || run.Status != api.RunQueued {
		t.Fatalf("run after approval: %+v %v", run, err)
	}

	// A (new) worker claims the re-queued run and resumes.
	b := claim(t, alice, a.run.ID)
	if b.lease.FencingToken <= a.lease.FencingToken {
		t.Errorf("fencing token did not increase: %d then %d", a.lease.FencingToken, b.lease.FencingToken)
	}
	// The old worker's lease is stale.
	if _, err := alice.Heartbeat(ctx, a.run.ID, a.lease, 30); !client.IsCode(err, "conflict") {
		t.Errorf("stale heartbeat: %v, want 409 conflict", err)
	}
	resumed, err := alice.Resume(ctx, a.run.ID, res.InvocationID, b.lease, api.ResumeInput{Arguments: req.Arguments, AgentVersion: "1.0.0"})
	if err != nil || !resumed.Authorized {
		t.Fatalf("resume: %+v %v", resumed, err)
	}
	if _, err := alice.Result(ctx, a.run.ID, res.InvocationID, b.lease, "succeeded"); err != nil {
		t.Fatalf("result: %v", err)
	}
	done, err := alice.Complete(ctx, a.run.ID, b.lease, "completed")
	if err != nil || done.Status != api.RunCompleted {
		t.Fatalf("complete: %+v %v", done, err)
	}

	counts := eventCounts(t, alice, a.run.ID)
	if counts[api.EventApprovalRequested] != 1 || counts[api.EventApprovalResolved] != 1 {
		t.Errorf("events of the run: %v", counts)
	}
}

// eventCounts counts a run's events by type, paging through the log.
// An event becomes visible once every older transaction of the cluster has
// ended (docs/OPERATIONS.md), so a reader right behind a write may see it a
// moment later: the last page is a short long-poll that ends empty only
// when nothing more arrives.
func eventCounts(t testing.TB, c *client.Client, runID string) map[string]int {
	t.Helper()
	counts := map[string]int{}
	var after string
	for {
		page, err := c.Events(testContext(t), client.EventQuery{After: after, RunID: runID, Limit: 500, Wait: 1})
		if err != nil {
			t.Fatalf("events: %v", err)
		}
		for _, e := range page.Events {
			counts[e.Type]++
		}
		if len(page.Events) == 0 {
			return counts
		}
		after = page.Watermark
	}
}

// resolveConcurrently resolves one approval from two goroutines at once.
func resolveConcurrently(t *testing.T, c *client.Client, id string, r1, r2 engine.ApprovalResolutionType) [2]struct {
	a   api.Approval
	err error
} {
	var out [2]struct {
		a   api.Approval
		err error
	}
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i, r := range []engine.ApprovalResolutionType{r1, r2} {
		wg.Go(func() {
			<-start
			out[i].a, out[i].err = c.Resolve(testContext(t), id, r, "")
		})
	}
	close(start)
	wg.Wait()
	return out
}

func testGate09IdempotentResolution(t *testing.T, srv *server) {
	bob := srv.Client("bob")
	t.Run("identical", func(t *testing.T) {
		_, res := park(t, srv.Client("alice"))
		out := resolveConcurrently(t, bob, res.ApprovalID, engine.ResolutionDeny, engine.ResolutionDeny)
		for i, o := range out {
			if o.err != nil {
				t.Fatalf("resolution %d: %v", i, o.err)
			}
		}
		if out[0].a.Status != engine.ApprovalDenied || out[0].a.ResolvedAt == nil || !out[0].a.ResolvedAt.Equal(*out[1].a.ResolvedAt) || out[0].a.ResolvedBy != out[1].a.ResolvedBy {
			t.Fatalf("two identical resolutions differ: %+v / %+v", out[0].a, out[1].a)
		}
		if n := eventCounts(t, bob, out[0].a.RunID)[api.EventApprovalResolved]; n != 1 {
			t.Errorf("%d approval.resolved events, want 1", n)
		}
	})
	t.Run("differing", func(t *testing.T) {
		_, res := park(t, srv.Client("alice"))
		out := resolveConcurrently(t, bob, res.ApprovalID, engine.ResolutionApproveOnce, engine.ResolutionDeny)
		var won, lost int
		var stored api.Approval
		for _, o := range out {
			var ce *client.Error
			switch {
			case o.err == nil:
				won++
				stored = o.a
			case errors.As(o.err, &ce) && ce.Status == http.StatusConflict && ce.Approval != nil:
				lost++
				if ce.Approval.Status == engine.ApprovalPending {
					t.Errorf("conflict body carries a pending approval")
				}
			default:
				t.Fatalf("unexpected outcome: %v", o.err)
			}
		}
		if won != 1 || lost != 1 {
			t.Fatalf("won %d, lost %d; want one each", won, lost)
		}
		for _, o := range out {
			var ce *client.Error
			if errors.As(o.err, &ce) && (ce.Approval.Status != stored.Status || ce.Approval.ResolvedBy != stored.ResolvedBy) {
				t.Errorf("conflict carries %+v, the winner stored %+v", ce.Approval, stored)
			}
		}
		if n := eventCounts(t, bob, stored.RunID)[api.EventApprovalResolved]; n != 1 {
			t.Errorf("%d approval.resolved events, want 1", n)
		}
	})
}

func testGate08DenialResultKeys(t *testing.T, srv *server) {
	a := startRun(t, srv.Client("alice"), nil)
	want := []string{"action", "message", "reason_code", "remediation", "retryable", "status"}
	for _, c := range []struct {
		req    engine.ActionRequest
		reason string
	}{
		{engine.ActionRequest{ActionID: uuid.NewString(), Kind: engine.ActionToolCall, Name: "secrets.read", Summary: "read a secret", StepNumber: 1, Arguments: map[string]any{"name": "prod-db"}, OriginTrust: engine.TrustUser}, "policy.hardline."},
		{engine.ActionRequest{ActionID: uuid.NewString(), Kind: engine.ActionToolCall, Name: "no.such.tool", Summary: "?", StepNumber: 1, Arguments: map[string]any{}, OriginTrust: engine.TrustUser}, engine.ReasonUnclassifiable},
	} {
		body := `{"worker_id":"` + a.lease.WorkerID + `","fencing_token":` + jsonNumber(a.lease.FencingToken) + `,"action":` + mustJSON(t, c.req) + `}`
		st, res := rawCall(t, "POST", srv.BaseURL+"/v1/runs/"+a.run.ID+"/actions", srv.Token("alice"), body)
		if st != http.StatusOK || res["decision"] != "deny" {
			t.Fatalf("%s: %d %v", c.req.Name, st, res)
		}
		result, _ := res["result"].(map[string]any)
		var keys []string
		for k := range result {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		if !slices.Equal(keys, want) {
			t.Errorf("%s: denial result keys %v, want exactly %v", c.req.Name, keys, want)
		}
		if rc, _ := result["reason_code"].(string); !strings.HasPrefix(rc, c.reason) {
			t.Errorf("%s: reason_code %q, want %s…", c.req.Name, rc, c.reason)
		}
	}
}

// hiddenKey returns the first of the keys found at any depth of v.
func hiddenKey(v any, keys ...string) string {
	switch x := v.(type) {
	case map[string]any:
		for k, child := range x {
			if slices.Contains(keys, k) {
				return k
			}
			if found := hiddenKey(child, keys...); found != "" {
				return found
			}
		}
	case []any:
		for _, child := range x {
			if found := hiddenKey(child, keys...); found != "" {
				return found
			}
		}
	}
	return ""
}

// testGate08WorkerResponsesHideTheRule drives a run through every
// worker-facing route, allowed, denied, parked and resumed, and checks
// that no response names the rule that fired: neither an explanation nor a
// rule_id, at any depth.
func testGate08WorkerResponsesHideTheRule(t *testing.T, srv *server) {
	tok := srv.Token("alice")
	base := srv.BaseURL + "/v1/runs"
	do := func(what string, wantStatus int, method, url, body string) map[string]any {
		t.Helper()
		st, res := rawCall(t, method, url, tok, body)
		if st != wantStatus {
			t.Fatalf("%s: %d %v, want %d", what, st, res, wantStatus)
		}
		if k := hiddenKey(res, "explanation", "rule_id"); k != "" {
			t.Errorf("%s: the response carries %q: %v", what, k, res)
		}
		return res
	}
	run := do("submit", http.StatusCreated, "POST", base, `{"session_id":"`+uuid.NewString()+`","agent_id":"a","agent_version":"1.0.0"}`)
	id, _ := run["id"].(string)
	lease := func(worker string) string {
		claimed := do("claim", http.StatusOK, "POST", base+"/claim", `{"worker_id":"`+worker+`","lease_seconds":60,"run_id":"`+id+`"}`)
		token, _ := claimed["fencing_token"].(float64)
		return `"worker_id":"` + worker + `","fencing_token":` + jsonNumber(int64(token))
	}
	l := lease("w-gate08-a")
	do("heartbeat", http.StatusOK, "POST", base+"/"+id+"/heartbeat", `{`+l+`,"lease_seconds":60}`)
	do("get", http.StatusOK, "GET", base+"/"+id, "")
	propose := func(what string, req engine.ActionRequest) map[string]any {
		return do(what, http.StatusOK, "POST", base+"/"+id+"/actions", `{`+l+`,"action":`+mustJSON(t, req)+`}`)
	}
	allowed := propose("propose allowed", allowedAction())
	propose("propose denied", engine.ActionRequest{ActionID: uuid.NewString(), Kind: engine.ActionToolCall, Name: "secrets.read", Summary: "s", StepNumber: 1, Arguments: map[string]any{"name": "prod-db"}, OriginTrust: engine.TrustUser})
	propose("propose unclassifiable", engine.ActionRequest{ActionID: uuid.NewString(), Kind: engine.ActionToolCall, Name: "no.such.tool", Summary: "s", StepNumber: 1, Arguments: map[string]any{}, OriginTrust: engine.TrustUser})
	req := parkingAction()
	parked := propose("propose parked", req)
	approval, _ := parked["approval_id"].(string)
	inv, _ := parked["invocation_id"].(string)
	if _, err := srv.Client("bob").Resolve(testContext(t), approval, engine.ResolutionApproveOnce, ""); err != nil {
		t.Fatal(err)
	}
	l = lease("w-gate08-b")
	resume := `{` + l + `,"arguments":` + mustJSON(t, req.Arguments) + `,"agent_version":"1.0.0"}`
	do("resume", http.StatusOK, "POST", base+"/"+id+"/invocations/"+inv+"/resume", resume)
	do("resume again", http.StatusOK, "POST", base+"/"+id+"/invocations/"+inv+"/resume", resume)
	do("result", http.StatusOK, "POST", base+"/"+id+"/invocations/"+inv+"/result", `{`+l+`,"status":"succeeded"}`)
	allowedInv, _ := allowed["invocation_id"].(string)
	do("result of the allowed call", http.StatusOK, "POST", base+"/"+id+"/invocations/"+allowedInv+"/result", `{`+l+`,"status":"uncertain"}`)
	do("complete", http.StatusOK, "POST", base+"/"+id+"/complete", `{`+l+`,"status":"completed"}`)
}

// testGate12RunReadCannotWrite: through the real routes, a principal
// holding run.read (bob) reads a run of its tenant but cannot work it; the
// run.write holder can. run.write does not imply run.read's sibling
// rights, nor does run.read imply run.write.
func testGate12RunReadCannotWrite(t *testing.T, srv *server) {
	a := startRun(t, srv.Client("alice"), nil)
	bob := srv.Token("bob")
	runURL := srv.BaseURL + "/v1/runs/" + a.run.ID
	if st, body := rawCall(t, "GET", runURL, bob, ""); st != http.StatusOK {
		t.Fatalf("run.read reading the run: %d %v", st, body)
	}
	lease := `"worker_id":"` + a.lease.WorkerID + `","fencing_token":` + jsonNumber(a.lease.FencingToken)
	writes := []struct{ path, body string }{
		{"/heartbeat", `{` + lease + `,"lease_seconds":60}`},
		{"/actions", `{` + lease + `,"action":` + mustJSON(t, allowedAction()) + `}`},
		{"/complete", `{` + lease + `,"status":"completed"}`},
	}
	for _, w := range writes {
		st, body := rawCall(t, "POST", runURL+w.path, bob, w.body)
		if st != http.StatusForbidden || errorCode(body) != "missing_scope" || !strings.Contains(errorMessage(body), "run.write") {
			t.Errorf("run.read POST %s: %d %v, want 403 missing_scope naming run.write", w.path, st, body)
		}
	}
	if st, body := rawCall(t, "POST", srv.BaseURL+"/v1/runs/claim", bob, `{"worker_id":"w","lease_seconds":30}`); st != http.StatusForbidden {
		t.Errorf("run.read claiming: %d %v", st, body)
	}
	// The run is untouched and alice's lease still works: run.write can.
	st, body := rawCall(t, "POST", runURL+"/complete", srv.Token("alice"), `{`+lease+`,"status":"completed"}`)
	if st != http.StatusOK || body["status"] != api.RunCompleted {
		t.Fatalf("run.write completing: %d %v", st, body)
	}
}

// testSchemaInvalidProposalIsADenial: a proposal the strict decoder refuses
// for its shape, with a readable action_id on a run the worker holds, is
// answered with the thin denial result and recorded (a retry answers the
// same invocation); what cannot be keyed stays a 400.
func testSchemaInvalidProposalIsADenial(t *testing.T, srv *server) {
	a := startRun(t, srv.Client("alice"), nil)
	tok := srv.Token("alice")
	actions := srv.BaseURL + "/v1/runs/" + a.run.ID + "/actions"
	lease := `"worker_id":"` + a.lease.WorkerID + `","fencing_token":` + jsonNumber(a.lease.FencingToken)
	// Each case reads its own path: the breaker would end the run at the
	// third identical denial.
	proposal := func(id, path, fields string) string {
		return `{` + lease + `,"action":{"action_id":"` + id + `","kind":"tool_call","name":"workspace.read_text","summary":"s","arguments":{"path":"` + path + `"},"argument_trust":{},"origin_trust":"user",` + fields + `}}`
	}
	for name, fields := range map[string]string{
		"step_number past int32":    `"step_number":3000000000`,
		"step_number fractional":    `"step_number":1.5`,
		"target of the wrong type":  `"step_number":1,"target":"sandbox"`,
		"a field not in the schema": `"step_number":1,"side_effect":"none"`,
	} {
		body := proposal(uuid.NewString(), name, fields)
		st, res := rawCall(t, "POST", actions, tok, body)
		result, _ := res["result"].(map[string]any)
		if st != http.StatusOK || res["decision"] != "deny" || result["reason_code"] != engine.ReasonUnclassifiable {
			t.Errorf("%s: %d %v, want 200 deny %s", name, st, res, engine.ReasonUnclassifiable)
			continue
		}
		st, again := rawCall(t, "POST", actions, tok, body)
		if st != http.StatusOK || again["invocation_id"] != res["invocation_id"] {
			t.Errorf("%s retried: %d %v, want the recorded invocation %v", name, st, again, res["invocation_id"])
		}
	}
	for name, body := range map[string]string{
		"no usable action_id": proposal("x", "x", `"step_number":3000000000`),
		"no action":           `{` + lease + `}`,
		"duplicate key":       proposal(uuid.NewString(), "dup", `"step_number":1,"step_number":3000000000`),
		"bad lease":           `{"worker_id":7,"fencing_token":1,"action":{"action_id":"` + uuid.NewString() + `","step_number":1.5}}`,
		"not JSON":            `{` + lease + `,"action":{`,
	} {
		if st, res := rawCall(t, "POST", actions, tok, body); st != http.StatusBadRequest || errorCode(res) != "invalid_request" {
			t.Errorf("%s: %d %v, want 400 invalid_request", name, st, res)
		}
	}
}

func mustJSON(t testing.TB, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// testExpiry parks a run whose deadline is two seconds ahead: the approval's
// expiry is capped by the deadline and the 200 ms reaper expires it.
func testExpiry(t *testing.T, srv *server) {
	ctx := testContext(t)
	alice := srv.Client("alice")
	deadline := time.Now().Add(2 * time.Second)
	a := startRun(t, alice, &deadline)
	res := a.propose(t, parkingAction())
	if res.Decision != engine.DecisionRequireApproval {
		t.Fatalf("propose: %+v", res)
	}
	wctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	got, err := alice.WaitForResolution(wctx, a.run.ID, res.ApprovalID)
	if err != nil || got.Status != engine.ApprovalExpired {
		t.Fatalf("approval after the deadline: %+v %v", got, err)
	}
	run, err := alice.GetRun(ctx, a.run.ID)
	if err != nil || run.Status != api.RunFailed {
		t.Fatalf("run after expiry: %+v %v", run, err)
	}
	if _, err := srv.Client("bob").Resolve(ctx, res.ApprovalID, engine.ResolutionApproveOnce, ""); !client.IsCode(err, "conflict") {
		t.Errorf("approving an expired approval: %v, want 409", err)
	}
}

// testAgentWaitsForResolution: an agent token holds run.read and
// run.write but no approval scope; it still learns how its approval was
// resolved.
func testAgentWaitsForResolution(t *testing.T, srv *server) {
	ctx := testContext(t)
	agentC := srv.Client("agent")
	a, res := park(t, agentC)
	if _, err := agentC.GetApproval(ctx, res.ApprovalID); !client.IsCode(err, "missing_scope") {
		t.Fatalf("the agent reads the approval: %v, want 403 missing_scope", err)
	}
	type outcome struct {
		a   api.ApprovalResolution
		err error
	}
	waited := make(chan outcome, 1)
	go func() {
		got, err := agentC.WaitForResolution(ctx, a.run.ID, res.ApprovalID)
		waited <- outcome{got, err}
	}()
	stored, err := srv.Client("bob").Resolve(ctx, res.ApprovalID, engine.ResolutionDeny, "not today")
	if err != nil {
		t.Fatal(err)
	}
	got := <-waited
	if got.err != nil || got.a.ID != res.ApprovalID || got.a.Status != engine.ApprovalDenied ||
		got.a.Resolution != engine.ResolutionDeny || got.a.ResolvedBy != "bob" || got.a.ResolvedAt.IsZero() ||
		got.a.ToolInvocationID != res.InvocationID {
		t.Fatalf("waited: %+v %v; stored %+v", got.a, got.err, stored)
	}
	// A second wait, after the fact, finds the same resolution at once.
	again, err := agentC.WaitForResolution(ctx, a.run.ID, res.ApprovalID)
	if err != nil || again.Status != engine.ApprovalDenied || again.ResolvedBy != "bob" {
		t.Fatalf("waiting after the resolution: %+v %v", again, err)
	}
}

func testCancellation(t *testing.T, srv *server) {
	ctx := testContext(t)
	alice := srv.Client("alice")
	a, res := park(t, alice)
	run, err := alice.Cancel(ctx, a.run.ID)
	if err != nil || run.Status != api.RunCancelled {
		t.Fatalf("cancel: %+v %v", run, err)
	}
	appr, err := alice.GetApproval(ctx, res.ApprovalID)
	if err != nil || appr.Status != engine.ApprovalCancelled {
		t.Fatalf("approval after cancel: %+v %v", appr, err)
	}
	_, err = srv.Client("bob").Resolve(ctx, res.ApprovalID, engine.ResolutionApproveOnce, "")
	var ce *client.Error
	if !errors.As(err, &ce) || ce.Status != http.StatusConflict || ce.Approval == nil || ce.Approval.Status != engine.ApprovalCancelled {
		t.Fatalf("resolving a cancelled approval: %v", err)
	}
	// The cancelled run's worker is fenced off.
	if _, err := alice.Propose(ctx, a.run.ID, a.lease, allowedAction()); err == nil {
		t.Error("a cancelled run accepted a proposal")
	}
}

func testBadInput(t *testing.T, srv *server) {
	a := startRun(t, srv.Client("alice"), nil)
	tok := srv.Token("alice")
	lease := `"worker_id":"` + a.lease.WorkerID + `","fencing_token":` + jsonNumber(a.lease.FencingToken)
	actions := srv.BaseURL + "/v1/runs/" + a.run.ID + "/actions"
	huge := `{"session_id":"` + strings.Repeat("x", 2<<20) + `","agent_id":"a","agent_version":"1"}`
	cases := []struct {
		name, method, url, body string
		want                    int
	}{
		{"malformed", "POST", srv.BaseURL + "/v1/runs", `{"session_id":`, 400},
		{"not an object", "POST", srv.BaseURL + "/v1/runs", `[1,2]`, 400},
		{"empty body", "POST", srv.BaseURL + "/v1/runs", ``, 400},
		{"two values", "POST", srv.BaseURL + "/v1/runs", `{"session_id":"s","agent_id":"a","agent_version":"1"} {}`, 400},
		{"unknown field", "POST", srv.BaseURL + "/v1/runs", `{"session_id":"s","agent_id":"a","agent_version":"1","tenant_id":"globex"}`, 400},
		{"wrong type", "POST", srv.BaseURL + "/v1/runs", `{"session_id":7,"agent_id":"a","agent_version":"1"}`, 400},
		{"oversized", "POST", srv.BaseURL + "/v1/runs", huge, 413},
		{"unknown action field", "POST", actions, `{` + lease + `,"action":{"action_id":"x","kind":"tool_call","name":"workspace.read_text","side_effect":"none","arguments":{}}}`, 400},
		{"wrong action kind type", "POST", actions, `{` + lease + `,"action":{"action_id":"x","kind":7,"name":"workspace.read_text","arguments":{}}}`, 400},
		{"arguments not an object", "POST", actions, `{` + lease + `,"action":{"action_id":"x","kind":"tool_call","name":"workspace.read_text","arguments":"rm -rf"}}`, 400},
		{"bad resolution", "POST", srv.BaseURL + "/v1/approvals/x/resolve", `{"resolution":"approve_forever"}`, 400},
		{"bad limit", "GET", srv.BaseURL + "/v1/approvals?limit=0", ``, 400},
		{"bad status", "GET", srv.BaseURL + "/v1/approvals?status=maybe", ``, 400},
		{"bad wait", "GET", srv.BaseURL + "/v1/events?wait=31", ``, 400},
		{"bad after", "GET", srv.BaseURL + "/v1/events?after=-1", ``, 400},
		{"unknown route", "GET", srv.BaseURL + "/v1/nothing", ``, 404},
	}
	for _, c := range cases {
		st, body := rawCall(t, c.method, c.url, tok, c.body)
		if st != c.want {
			t.Errorf("%s: %d %v, want %d", c.name, st, body, c.want)
		}
		if st < 500 && errorCode(body) == "" {
			t.Errorf("%s: no error code in %v", c.name, body)
		}
	}
	// PostgreSQL cannot store NUL: 400 naming the field, never a 500.
	propose := func(summary, args string) string {
		return `{` + lease + `,"action":{"action_id":"` + uuid.NewString() + `","kind":"tool_call","name":"workspace.write_text","summary":"` + summary + `","step_number":1,"arguments":` + args + `,"argument_trust":{},"origin_trust":"user"}}`
	}
	for _, c := range []struct{ name, url, body, field string }{
		{"NUL in agent_id", srv.BaseURL + "/v1/runs", `{"session_id":"` + uuid.NewString() + `","agent_id":"a\u0000b","agent_version":"1"}`, `"agent_id"`},
		{"NUL in worker_id", srv.BaseURL + "/v1/runs/claim", `{"worker_id":"w\u0000","lease_seconds":30}`, `"worker_id"`},
		{"NUL in an argument value", actions, propose("s", `{"path":"a\u0000b"}`), `"action.arguments.path"`},
		{"NUL in an argument key", actions, propose("s", `{"pa\u0000th":"a"}`), `"action.arguments (a key)"`},
		{"NUL in summary", actions, propose(`s\u0000`, `{"path":"a"}`), `"action.summary"`},
	} {
		st, body := rawCall(t, "POST", c.url, tok, c.body)
		if st != http.StatusBadRequest || errorCode(body) != "invalid_request" || !strings.Contains(errorMessage(body), c.field) {
			t.Errorf("%s: %d %v, want 400 invalid_request naming %s", c.name, st, body, c.field)
		}
	}
	// Inputs the service must refuse with 4xx, not 5xx: unknown tools deny,
	// empty fields and unknown enum values are 400.
	for name, body := range map[string]string{
		"unknown tool":     `{` + lease + `,"action":{"action_id":"` + uuid.NewString() + `","kind":"tool_call","name":"rm.everything","summary":"s","step_number":1,"arguments":{},"argument_trust":{},"origin_trust":"user"}}`,
		"unknown kind":     `{` + lease + `,"action":{"action_id":"` + uuid.NewString() + `","kind":"teleport","name":"workspace.read_text","summary":"s","step_number":1,"arguments":{"path":"a"},"argument_trust":{},"origin_trust":"user"}}`,
		"unknown trust":    `{` + lease + `,"action":{"action_id":"` + uuid.NewString() + `","kind":"tool_call","name":"workspace.read_text","summary":"s","step_number":1,"arguments":{"path":"a"},"argument_trust":{"path":"divine"},"origin_trust":"user"}}`,
		"empty action id":  `{` + lease + `,"action":{"action_id":"","kind":"tool_call","name":"workspace.read_text","summary":"s","step_number":1,"arguments":{"path":"a"},"argument_trust":{},"origin_trust":"user"}}`,
		"big number":       `{` + lease + `,"action":{"action_id":"` + uuid.NewString() + `","kind":"tool_call","name":"payments.charge","summary":"s","step_number":1,"arguments":{"customer":"c","amount_cents":1e400,"currency":"EUR"},"argument_trust":{},"origin_trust":"user"}}`,
		"nested arguments": `{` + lease + `,"action":{"action_id":"` + uuid.NewString() + `","kind":"tool_call","name":"workspace.write_text","summary":"s","step_number":1,"arguments":{"path":"a","text":{"deep":[1,{"x":null}]}},"argument_trust":{},"origin_trust":"user"}}`,
	} {
		st, res := rawCall(t, "POST", actions, tok, body)
		if st >= 500 {
			t.Errorf("%s: %d %v", name, st, res)
		}
	}
	for name, body := range map[string]string{
		"empty session":   `{"session_id":"","agent_id":"a","agent_version":"1"}`,
		"unknown profile": `{"session_id":"` + uuid.NewString() + `","agent_id":"a","agent_version":"1","policy_profile":"nope"}`,
		"bad deadline":    `{"session_id":"` + uuid.NewString() + `","agent_id":"a","agent_version":"1","deadline":"tomorrow"}`,
	} {
		if st, res := rawCall(t, "POST", srv.BaseURL+"/v1/runs", tok, body); st != http.StatusBadRequest {
			t.Errorf("%s: %d %v, want 400", name, st, res)
		}
	}
}

func testPagination(t *testing.T, srv *server) {
	ctx := testContext(t)
	alice, bob := srv.Client("alice"), srv.Client("bob")
	// A session of this subtest's own keeps other subtests' approvals out.
	session := uuid.NewString()
	want := map[string]bool{}
	for range 3 {
		run, err := alice.SubmitRun(ctx, api.SubmitRunInput{SessionID: session, AgentID: "a", AgentVersion: "1.0.0"})
		if err != nil {
			t.Fatal(err)
		}
		a := claim(t, alice, run.ID)
		res := a.propose(t, parkingAction())
		want[res.ApprovalID] = true
	}
	seen := map[string]bool{}
	var cursor string
	for pages := 0; ; pages++ {
		page, err := bob.ListApprovals(ctx, client.ApprovalQuery{SessionID: session, Limit: 2, Cursor: cursor})
		if err != nil {
			t.Fatalf("page %d: %v", pages, err)
		}
		if len(page.Items) > 2 {
			t.Fatalf("page of %d items with limit 2", len(page.Items))
		}
		for _, it := range page.Items {
			if seen[it.ID] {
				t.Fatalf("approval %s listed twice", it.ID)
			}
			seen[it.ID] = true
		}
		if cursor = page.NextCursor; cursor == "" || pages > 5 {
			break
		}
	}
	if len(seen) != len(want) {
		t.Errorf("paged through %d approvals, want %d", len(seen), len(want))
	}
	if st, _ := rawCall(t, "GET", srv.BaseURL+"/v1/approvals?cursor=garbage", srv.Token("bob"), ""); st != http.StatusBadRequest {
		t.Errorf("garbage cursor: %d, want 400", st)
	}
}

func testOperationalEndpoints(t *testing.T, srv *server) {
	for _, p := range []string{"/healthz", "/readyz", "/v1/openapi.json"} {
		if st, _ := rawCall(t, "GET", srv.BaseURL+p, "", ""); st != http.StatusOK {
			t.Errorf("GET %s: %d", p, st)
		}
	}
	req, _ := http.NewRequestWithContext(testContext(t), "GET", srv.BaseURL+"/metrics", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var sb strings.Builder
	_, _ = io.Copy(&sb, resp.Body)
	for _, m := range []string{"gatehouse_http_request_duration_seconds", "go_goroutines"} {
		if !strings.Contains(sb.String(), m) {
			t.Errorf("/metrics lacks %s", m)
		}
	}
	pol, err := srv.Client("nobody").Policy(testContext(t))
	if err != nil || pol.PolicyVersion == "" || pol.Profile == "" {
		t.Errorf("policy: %+v %v", pol, err)
	}
	tools, err := srv.Client("alice").Tools(testContext(t))
	if err != nil || len(tools) < 20 {
		t.Errorf("tools: %d %v", len(tools), err)
	}
}

// TestAPIRateLimit checks the per-principal token bucket: once a principal's
// burst is spent it gets 429 with Retry-After, and another principal does not.
func TestAPIRateLimit(t *testing.T) {
	t.Parallel()
	srv := startServer(t, serverOptions{Env: []string{"CONSOLE_RATE_LIMIT=0.5", "CONSOLE_RATE_BURST=3"}})
	url := srv.BaseURL + "/v1/policy"
	for i := range 3 {
		if st, body := rawCall(t, "GET", url, srv.Token("alice"), ""); st != http.StatusOK {
			t.Fatalf("request %d: %d %v", i, st, body)
		}
	}
	req, _ := http.NewRequestWithContext(testContext(t), "GET", url, nil)
	req.Header.Set("Authorization", "Bearer "+srv.Token("alice"))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusTooManyRequests || resp.Header.Get("Retry-After") == "" {
		t.Fatalf("fourth request: %d, Retry-After %q", resp.StatusCode, resp.Header.Get("Retry-After"))
	}
	if st, _ := rawCall(t, "GET", url, srv.Token("bob"), ""); st != http.StatusOK {
		t.Fatalf("bob limited by alice's bucket: %d", st)
	}
}

package e2e

import (
	"net/http"
	"strings"
	"testing"

	"github.com/google/uuid"

	"gatehouse/engine"
)

// principalProfiles are the policy_profiles of the test principals: alice
// may name the built-in default even where the operator chose another.
var principalProfiles = map[string][]string{"alice": {"default"}}

// TestAPIStrictRequests sends raw bytes to real routes of a server whose
// operator made the stricter test profile "modify" the default: duplicate
// keys, invalid UTF-8, out-of-range integers and mistyped tokens are 4xx,
// never 5xx, and a run names another profile only when its principal lists
// it.
func TestAPIStrictRequests(t *testing.T) {
	srv := startServer(t, serverOptions{PolicyDir: "../rules/testdata/profiles", PolicyProfile: "modify"})
	t.Run("ProfileBinding", func(t *testing.T) { testProfileBinding(t, srv) })
	t.Run("BadBytes", func(t *testing.T) { testStrictBodies(t, srv) })
	t.Run("TokenTypo", func(t *testing.T) { testTokenTypo(t, srv) })
}

func submitBody(profile string) string {
	b := `{"session_id":"` + uuid.NewString() + `","agent_id":"a","agent_version":"1"`
	if profile != "" {
		b += `,"policy_profile":"` + profile + `"`
	}
	return b + `}`
}

func testProfileBinding(t *testing.T, srv *server) {
	runs := srv.BaseURL + "/v1/runs"
	st, body := rawCall(t, "POST", runs, srv.Token("agent"), submitBody("default"))
	if st != http.StatusForbidden || errorCode(body) != "profile_not_permitted" || !strings.Contains(errorMessage(body), `"default"`) {
		t.Errorf("agent naming the unlisted default profile: %d %v, want 403 profile_not_permitted naming it", st, body)
	}
	for _, profile := range []string{"", "modify"} {
		st, body := rawCall(t, "POST", runs, srv.Token("agent"), submitBody(profile))
		if st != http.StatusCreated || body["policy_profile"] != "modify" {
			t.Errorf("agent naming %q: %d %v, want 201 under modify", profile, st, body)
		}
	}
	st, body = rawCall(t, "POST", runs, srv.Token("alice"), submitBody("default"))
	if st != http.StatusCreated || body["policy_profile"] != "default" {
		t.Errorf("alice naming her listed profile: %d %v, want 201 under default", st, body)
	}
	if st, body := rawCall(t, "POST", runs, srv.Token("agent"), submitBody("nope")); st != http.StatusBadRequest {
		t.Errorf("an unknown profile: %d %v, want 400", st, body)
	}
}

func testStrictBodies(t *testing.T, srv *server) {
	agentTok, bobTok := srv.Token("agent"), srv.Token("bob")
	// A parked invocation, approved, to resume with different bytes.
	a, parked := park(t, srv.Client("agent"))
	if st, body := rawCall(t, "POST", srv.BaseURL+"/v1/approvals/"+parked.ApprovalID+"/resolve", bobTok, `{"resolution":"approve_once"}`); st != http.StatusOK {
		t.Fatalf("approve: %d %v", st, body)
	}
	a = claim(t, srv.Client("agent"), a.run.ID) // the approval re-queued the run
	b := startRun(t, srv.Client("agent"), nil)
	lease := `"worker_id":"` + b.lease.WorkerID + `","fencing_token":` + jsonNumber(b.lease.FencingToken)
	aLease := `"worker_id":"` + a.lease.WorkerID + `","fencing_token":` + jsonNumber(a.lease.FencingToken)
	actions := srv.BaseURL + "/v1/runs/" + b.run.ID + "/actions"
	resume := srv.BaseURL + "/v1/runs/" + a.run.ID + "/invocations/" + parked.InvocationID + "/resume"
	action := func(stepNumber, args string) string {
		return `{` + lease + `,"action":{"action_id":"` + uuid.NewString() + `","kind":"tool_call","name":"demo.external_write","summary":"s","step_number":` + stepNumber + `,"arguments":` + args + `,"argument_trust":{},"origin_trust":"user"}}`
	}
	args := `{"record":"42","field":"status","value":"shipped"}`
	cases := []struct {
		name, method, url, token, body, msg string
	}{
		{"duplicate top-level key", "POST", srv.BaseURL + "/v1/runs", agentTok, `{"session_id":"` + uuid.NewString() + `","agent_id":"a","agent_id":"b","agent_version":"1"}`, "duplicate key"},
		{"duplicate key by case", "POST", srv.BaseURL + "/v1/runs/claim", agentTok, `{"worker_id":"w","WORKER_ID":"x","lease_seconds":30}`, "duplicate key"},
		{"duplicate argument key", "POST", actions, agentTok, action("1", `{"record":"42","field":"status","value":"shipped","value":"lost"}`), "duplicate key"},
		{"duplicate key by escape", "POST", actions, agentTok, action("1", `{"record":"42","field":"status","value":"shipped","v\u0061lue":"lost"}`), "duplicate key"},
		{"duplicate resolve reason", "POST", srv.BaseURL + "/v1/approvals/" + parked.ApprovalID + "/resolve", bobTok, `{"resolution":"deny","reason":"a","reason":"b"}`, "duplicate key"},
		{"invalid UTF-8 in an argument", "POST", actions, agentTok, action("1", "{\"record\":\"42\",\"field\":\"status\",\"value\":\"pay \xff\"}"), "UTF-8"},
		{"invalid UTF-8 in a resume", "POST", resume, agentTok, `{` + aLease + ",\"arguments\":{\"record\":\"42\",\"field\":\"status\",\"value\":\"pay \xfe\"},\"agent_version\":\"1.0.0\"}", "UTF-8"},
		{"invalid UTF-8 in a key", "POST", srv.BaseURL + "/v1/runs", agentTok, "{\"session_id\":\"s\",\"\xc3\":1}", "UTF-8"},
		{"lone surrogate", "POST", actions, agentTok, action("1", `{"record":"42","field":"status","value":"\ud800"}`), "surrogate"},
		{"step_number 2^31 without a usable action_id", "POST", actions, agentTok, strings.Replace(action("2147483648", args), `"action_id":"`, `"action_id":"x`, 1), "integer from"},
		{"fencing_token 2^63", "POST", srv.BaseURL + "/v1/runs/" + b.run.ID + "/heartbeat", agentTok, `{"worker_id":"w","fencing_token":9223372036854775808}`, "integer from"},
		{"lease_seconds 2^63", "POST", srv.BaseURL + "/v1/runs/claim", agentTok, `{"worker_id":"w","lease_seconds":9223372036854775808}`, "integer from"},
		{"lease_seconds 2^31", "POST", srv.BaseURL + "/v1/runs/claim", agentTok, `{"worker_id":"w","lease_seconds":2147483648}`, "lease_seconds"},
		{"heartbeat lease_seconds 2^40", "POST", srv.BaseURL + "/v1/runs/" + b.run.ID + "/heartbeat", agentTok, `{` + lease + `,"lease_seconds":1099511627776}`, "lease_seconds"},
		{"unstorable argument number", "POST", actions, agentTok, action("1", `{"record":"42","field":"status","value":1e131072}`), "too large"},
		{"limit 2^31", "GET", srv.BaseURL + "/v1/approvals?limit=2147483648", bobTok, ``, "limit"},
		{"after 2^63", "GET", srv.BaseURL + "/v1/events?after=9223372036854775808", agentTok, ``, ""},
	}
	for _, c := range cases {
		st, body := rawCall(t, c.method, c.url, c.token, c.body)
		if st != http.StatusBadRequest || errorCode(body) != "invalid_request" || !strings.Contains(errorMessage(body), c.msg) {
			t.Errorf("%s: %d %v, want 400 invalid_request mentioning %q", c.name, st, body, c.msg)
		}
	}
	// An out-of-range step_number on a proposal that can be keyed is the
	// seed's schema failure: DENY policy.unclassifiable_action, recorded.
	c := startRun(t, srv.Client("agent"), nil)
	cLease := `"worker_id":"` + c.lease.WorkerID + `","fencing_token":` + jsonNumber(c.lease.FencingToken)
	for _, n := range []string{"2147483648", "-2147483649", "1e3"} {
		body := strings.Replace(action(n, args), lease, cLease, 1)
		st, res := rawCall(t, "POST", srv.BaseURL+"/v1/runs/"+c.run.ID+"/actions", agentTok, body)
		result, _ := res["result"].(map[string]any)
		if st != http.StatusOK || res["decision"] != "deny" || result["reason_code"] != engine.ReasonUnclassifiable {
			t.Errorf("step_number %s: %d %v, want 200 deny %s", n, st, res, engine.ReasonUnclassifiable)
		}
	}
	// Nothing above authorized the resume or moved the approval.
	st, body := rawCall(t, "POST", resume, agentTok, `{`+aLease+`,"arguments":{"record":"42","field":"status","value":"shipped"},"agent_version":"1.0.0"}`)
	if st != http.StatusOK || body["authorized"] != true {
		t.Errorf("the approved resume with the approved bytes: %d %v, want authorized", st, body)
	}
}

func testTokenTypo(t *testing.T, srv *server) {
	tok := srv.Token("agent")
	if !strings.HasPrefix(tok, "gatehouse_") {
		t.Fatalf("test token %q lacks the gatehouse_ prefix", tok)
	}
	last := tok[len(tok)-1]
	typo := tok[:len(tok)-1] + map[bool]string{true: "b", false: "a"}[last == 'a']
	for _, bad := range []string{typo, tok[:len(tok)-1], strings.Replace(tok, "gatehouse_", "gatehouse_x", 1)} {
		st, body := rawCall(t, "GET", srv.BaseURL+"/v1/tools", bad, "")
		if st != http.StatusUnauthorized || errorCode(body) != "unauthenticated" {
			t.Errorf("token %q: %d %v, want 401", bad, st, body)
		}
	}
	if st, body := rawCall(t, "GET", srv.BaseURL+"/v1/tools", tok, ""); st != http.StatusOK {
		t.Errorf("the right token: %d %v", st, body)
	}
}

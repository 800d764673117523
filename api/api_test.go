package api

import (
	"encoding/json"
	"os/exec"
	"reflect"
	"strings"
	"testing"
	"time"

	"gatehouse/engine"
)

// TestContractIsALeaf: package api imports the standard library and the
// engine only, so whatever imports it links nothing of the server.
func TestContractIsALeaf(t *testing.T) {
	t.Parallel()
	out, err := exec.Command("go", "list", "-f", `{{join .Imports "\n"}}`, ".").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	for _, imp := range strings.Fields(string(out)) {
		if strings.Contains(imp, ".") || (strings.HasPrefix(imp, "gatehouse/") && imp != "gatehouse/engine") {
			t.Errorf("api imports %s", imp)
		}
	}
}

// TestEveryEventTypeDecodesToItsPayload: each payload struct names its
// type, and DecodePayload of that type gives the same struct back, so
// writers and readers share one description per type.
func TestEveryEventTypeDecodesToItsPayload(t *testing.T) {
	t.Parallel()
	payloads := []EventPayload{
		RunSubmittedPayload{AgentID: "a", AgentVersion: "1", PolicyProfile: "default"},
		RunClaimedPayload{WorkerID: "w", FencingToken: 3},
		RunQueuedPayload{},
		RunCompletedPayload{},
		RunFailedPayload{FailureReason: "worker_failed"},
		RunCancelledPayload{CancelledBy: "alice", ApprovalsCancelled: 1},
		ActionAuthorizedPayload{InvocationID: "i", ToolName: "t", Decision: engine.DecisionAllow, PolicyVersion: "v", ApprovalID: "x"},
		ActionDeniedPayload{InvocationID: "i", ToolName: "t", ReasonCode: "r", Cause: "c"},
		ActionResultPayload{InvocationID: "i", ToolName: "t", Status: InvocationSucceeded},
		ApprovalRequestedPayload{ApprovalID: "x", InvocationID: "i", ToolName: "t", Risk: engine.RiskHigh, SideEffect: engine.SideEffectExternalWrite, ExpiresAt: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)},
		ApprovalResolvedPayload{ApprovalID: "x", InvocationID: "i", ToolName: "t", Risk: engine.RiskHigh, Status: engine.ApprovalDenied, Resolution: "deny", ResolvedBy: "bob"},
		ApprovalInvalidatedPayload{ApprovalID: "x", InvocationID: "i", Cause: "c"},
		ApprovalVotedPayload{ApprovalID: "x", InvocationID: "i", ToolName: "t", Risk: engine.RiskCritical, VotedBy: "alice", Approvals: 1, Quorum: 2},
		PolicyProfileLoadedPayload{PolicyVersion: "v", Profile: "default", LoadedBy: "r"},
		CircuitBreakerPayload{ToolName: "t", ReasonCode: "r", Denials: 3},
		BrowserGrantCreatedPayload{GrantID: "g", ApprovalID: "x", Origin: "https://shop.example", PathPrefix: "/cart", Budget: 200, ExpiresAt: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC), CreatedBy: "bob"},
		BrowserGrantUsedPayload{GrantID: "g", InvocationID: "i", Uses: 1, Budget: 200},
		BrowserGrantRevokedPayload{GrantID: "g", RevokedBy: "bob", Uses: 7},
		ConsentRecordedPayload{ConsentID: "c", SessionID: "s", ToolName: "t", ArgumentsHash: "h", CreatedBy: "alice", ExpiresAt: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)},
		ConsentConsumedPayload{ConsentID: "c", ApprovalID: "x", InvocationID: "i", CreatedBy: "alice"},
	}
	if len(payloads) != len(payloadDecoders) {
		t.Fatalf("%d payloads listed here, %d event types decode", len(payloads), len(payloadDecoders))
	}
	seen := map[string]bool{}
	for _, p := range payloads {
		typ := p.EventType()
		if seen[typ] {
			t.Errorf("two payloads for %s", typ)
		}
		seen[typ] = true
		raw, err := json.Marshal(p)
		if err != nil {
			t.Fatal(err)
		}
		got, err := Event{Type: typ, Payload: raw}.DecodePayload()
		if err != nil || !reflect.DeepEqual(got, p) {
			t.Errorf("%s: decoded %#v, %v; want %#v", typ, got, err, p)
		}
	}
	if _, err := (Event{Type: "no.such.type", Payload: []byte(`{}`)}).DecodePayload(); err == nil {
		t.Error("an unknown event type decodes")
	}
	if _, err := (Event{Type: EventRunFailed, Payload: []byte(`[1]`)}).DecodePayload(); err == nil {
		t.Error("a payload that is not its type's decodes")
	}
}

// TestResolutionReadsOnlyResolvedEvents: an approval's resolution comes
// from approval.resolved alone, with the human's resolution only when a
// human resolved it.
func TestResolutionReadsOnlyResolvedEvents(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	event := func(typ string, p any) Event {
		raw, _ := json.Marshal(p)
		return Event{Type: typ, TenantID: "t", RunID: "r", CreatedAt: at, Payload: raw}
	}
	denied, ok := event(EventApprovalResolved, ApprovalResolvedPayload{
		ApprovalID: "x", InvocationID: "i", ToolName: "http.post", Status: engine.ApprovalDenied, Resolution: "deny", ResolvedBy: "bob",
	}).Resolution()
	want := ApprovalResolution{ID: "x", TenantID: "t", RunID: "r", ToolInvocationID: "i", ToolName: "http.post",
		Status: engine.ApprovalDenied, Resolution: engine.ResolutionDeny, ResolvedBy: "bob", ResolvedAt: at}
	if !ok || denied != want {
		t.Errorf("denied: %+v %v; want %+v", denied, ok, want)
	}
	expired, ok := event(EventApprovalResolved, ApprovalResolvedPayload{ApprovalID: "x", Status: engine.ApprovalExpired, Resolution: "expired"}).Resolution()
	if !ok || expired.Status != engine.ApprovalExpired || expired.Resolution != "" {
		t.Errorf("expired: %+v %v; want status expired, no resolution", expired, ok)
	}
	if r, ok := event(EventApprovalRequested, ApprovalRequestedPayload{ApprovalID: "x"}).Resolution(); ok {
		t.Errorf("a request read as a resolution: %+v", r)
	}
	if r, ok := event(EventApprovalResolved, map[string]any{"approval_id": "x"}).Resolution(); ok {
		t.Errorf("a resolution without a status: %+v", r)
	}
}

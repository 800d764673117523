package handlers

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"gatehouse/api"
	"gatehouse/engine"
	"gatehouse/service"
)

// charge parks a critical payment.
func (b *bundle) charge() api.Approval {
	b.t.Helper()
	return b.parkAction("payments.charge", "Charge Acme $49", map[string]any{"customer": "cus_1", "amount_cents": 4900, "currency": "USD"})
}

func (b *bundle) principal(name string) engine.Principal {
	b.t.Helper()
	p, ok := b.s.cfg.Directory.ByID(b.id(name))
	if !ok {
		b.t.Fatalf("no principal %s", name)
	}
	return p
}

// A viewer without approval.resolve sees no resolve buttons and no batch
// form, without run.read no run link, and a forged resolve or batch post
// is refused all the same.
func TestConsoleHidesWhatTheViewerMayNotDo(t *testing.T) {
	t.Parallel()
	b := setup(t)
	a := b.park()
	reader := b.signedIn("reader")
	queue := b.get(reader, "/")
	for _, hidden := range []string{`data-testid="approve"`, `data-testid="resolve-form"`, `data-testid="batch-form"`, `data-testid="run-link"`} {
		if strings.Contains(queue.Body, hidden) {
			t.Errorf("a reader's queue shows %s", hidden)
		}
	}
	tok := b.formToken(queue)
	for path, form := range map[string]url.Values{
		"/approvals/" + a.ID + "/resolve": {"_csrf": {tok}, "resolution": {"approve_once"}, "arguments_hash": {a.ArgumentsHash}},
		"/approvals/batch":                {"_csrf": {tok}, "resolution": {"approve_once"}, "item": {a.ID + ":" + a.ArgumentsHash}},
	} {
		if r := b.postForm(reader, path, form); r.Status != http.StatusForbidden {
			t.Errorf("forged POST %s by a reader: %d, want 403", path, r.Status)
		}
	}
	if got := b.approvalOf(a.ID); got.Status != engine.ApprovalPending {
		t.Errorf("the forged posts changed the approval: %s", got.Status)
	}
	full := b.get(b.signedIn("full"), "/")
	for _, shown := range []string{`data-testid="approve"`, `data-testid="batch-form"`, `data-testid="run-link"`} {
		if !strings.Contains(full.Body, shown) {
			t.Errorf("a reviewer's queue lacks %s", shown)
		}
	}
}

func (b *bundle) approvalOf(id string) api.Approval {
	b.t.Helper()
	a, err := b.svc.GetApproval(context.Background(), b.principal("full"), id)
	if err != nil {
		b.t.Fatal(err)
	}
	return a
}

// Approving a critical action needs the confirmation box: the server
// refuses a post without it (however the page was bypassed), and a deny
// needs none.
func TestCriticalApprovalNeedsConfirmation(t *testing.T) {
	t.Parallel()
	b := setup(t)
	a, d := b.charge(), b.charge()
	hc := b.signedIn("full")
	tok := b.formToken(b.get(hc, "/"))
	r := b.postForm(hc, "/approvals/"+a.ID+"/resolve", url.Values{"_csrf": {tok}, "resolution": {"approve_once"}, "arguments_hash": {a.ArgumentsHash}})
	if r.Status != http.StatusBadRequest || !strings.Contains(r.Body, "confirmation") {
		t.Fatalf("approve a critical action unconfirmed: %d %.200s, want 400 naming the confirmation", r.Status, r.Body)
	}
	if b.approvalOf(a.ID).Status != engine.ApprovalPending {
		t.Fatal("an unconfirmed approval was applied")
	}
	r = b.postForm(hc, "/approvals/"+a.ID+"/resolve", url.Values{"_csrf": {tok}, "resolution": {"approve_once"}, "arguments_hash": {a.ArgumentsHash}, "confirm": {"critical"}})
	if r.Status != http.StatusSeeOther || b.approvalOf(a.ID).Status != engine.ApprovalApproved {
		t.Fatalf("confirmed approval: %d, status %s", r.Status, b.approvalOf(a.ID).Status)
	}
	r = b.postForm(hc, "/approvals/"+d.ID+"/resolve", url.Values{"_csrf": {tok}, "resolution": {"deny"}, "preset": {"Too risky right now"}})
	if got := b.approvalOf(d.ID); r.Status != http.StatusSeeOther || got.Status != engine.ApprovalDenied || got.ResolutionReason != "Too risky right now" {
		t.Fatalf("deny a critical action with a preset: %d, %s %q", r.Status, got.Status, got.ResolutionReason)
	}
}

// A batch is N guarded resolutions, each bound to the hash its reviewer
// saw: one resolved elsewhere meanwhile, one whose hash is not the one
// stored, and a critical one are reported and left as they are.
func TestBatchResolvesOnlyWhatTheReviewerSaw(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ok, elsewhere, changed, critical := b.park(), b.park(), b.park(), b.charge()
	hc := b.signedIn("full")
	tok := b.formToken(b.get(hc, "/"))
	if _, err := b.svc.ResolveApproval(context.Background(), b.principal("full"), elsewhere.ID, engine.ResolutionDeny, "no"); err != nil {
		t.Fatal(err)
	}
	items := []string{
		ok.ID + ":" + ok.ArgumentsHash,
		elsewhere.ID + ":" + elsewhere.ArgumentsHash,
		changed.ID + ":" + strings.Repeat("0", 64),
		critical.ID + ":" + critical.ArgumentsHash,
	}
	r := b.postForm(hc, "/approvals/batch", url.Values{"_csrf": {tok}, "resolution": {"approve_once"}, "item": items})
	if r.Status != http.StatusOK {
		t.Fatalf("batch: %d %.300s", r.Status, r.Body)
	}
	for id, want := range map[string]engine.ApprovalStatus{
		ok.ID: engine.ApprovalApproved, elsewhere.ID: engine.ApprovalDenied,
		changed.ID: engine.ApprovalPending, critical.ID: engine.ApprovalPending,
	} {
		if got := b.approvalOf(id).Status; got != want {
			t.Errorf("%s: %s, want %s", id, got, want)
		}
	}
	for _, say := range []string{"Approved by you", "Already denied", "changed since you saw it", "critical action is decided on its own card"} {
		if !strings.Contains(r.Body, say) {
			t.Errorf("the batch report does not say %q", say)
		}
	}
	bad := b.postForm(hc, "/approvals/batch", url.Values{"_csrf": {tok}, "resolution": {"approve_once"}, "item": {"not-an-item"}})
	if bad.Status != http.StatusBadRequest {
		t.Errorf("a malformed item: %d, want 400", bad.Status)
	}
}

// A holder of run.cancel cancels a run from its page; its approval ends
// cancelled. Without run.cancel there is no button and the post is refused.
func TestConsoleCancelsARun(t *testing.T) {
	t.Parallel()
	b := setup(t)
	a := b.park()
	full, canceller := b.signedIn("full"), b.signedIn("canceller")
	page := b.get(full, "/runs/"+a.RunID)
	if strings.Contains(page.Body, `data-testid="cancel-run"`) {
		t.Error("a viewer without run.cancel sees the cancel button")
	}
	if r := b.postForm(full, "/runs/"+a.RunID+"/cancel", url.Values{"_csrf": {b.formToken(page)}}); r.Status != http.StatusForbidden {
		t.Errorf("cancel without run.cancel: %d, want 403", r.Status)
	}
	page = b.get(canceller, "/runs/"+a.RunID)
	if !strings.Contains(page.Body, `data-testid="cancel-run"`) {
		t.Fatal("a holder of run.cancel sees no cancel button")
	}
	r := b.postForm(canceller, "/runs/"+a.RunID+"/cancel", url.Values{"_csrf": {b.formToken(page)}})
	if r.Status != http.StatusSeeOther {
		t.Fatalf("cancel: %d %.200s", r.Status, r.Body)
	}
	if got := b.approvalOf(a.ID).Status; got != engine.ApprovalCancelled {
		t.Errorf("the run's approval is %s, want cancelled", got)
	}
	if after := b.get(canceller, "/runs/"+a.RunID); strings.Contains(after.Body, `data-testid="cancel-run"`) || !strings.Contains(after.Body, "CANCELLED") {
		t.Error("the cancelled run still offers cancel, or does not say it is cancelled")
	}
}

// The history's export holds exactly the rows the filter selects, as the
// service lists them for the API.
func TestHistoryExportMatchesTheFilter(t *testing.T) {
	t.Parallel()
	b := setup(t)
	p := b.principal("full")
	ctx := context.Background()
	var denied []string
	for i := range 5 {
		a := b.park()
		res := engine.ResolutionApproveOnce
		if i%2 == 0 {
			res, denied = engine.ResolutionDeny, append(denied, a.ID)
		}
		if _, err := b.svc.ResolveApproval(ctx, p, a.ID, res, "=cmd()"); err != nil {
			t.Fatal(err)
		}
	}
	hc := b.signedIn("full")
	r := b.get(hc, "/history/export.json?status=denied")
	if r.Status != http.StatusOK || !strings.HasPrefix(r.Header.Get("Content-Type"), "application/json") {
		t.Fatalf("export: %d %s", r.Status, r.Header.Get("Content-Type"))
	}
	var got []api.Approval
	if err := json.Unmarshal([]byte(r.Body), &got); err != nil {
		t.Fatalf("export is not a JSON array: %v", err)
	}
	want, err := b.svc.ListApprovals(ctx, p, service.ApprovalFilter{Status: engine.ApprovalDenied, Limit: 200})
	if err != nil {
		t.Fatal(err)
	}
	wantJSON, _ := json.Marshal(want.Items)
	gotJSON, _ := json.Marshal(got)
	if len(got) != len(denied) || string(gotJSON) != string(wantJSON) {
		t.Errorf("export has %d rows, want the %d the API lists:\n%s\n%s", len(got), len(denied), gotJSON, wantJSON)
	}
	csv := b.get(hc, "/history/export.csv?status=denied")
	lines := strings.Split(strings.TrimSpace(csv.Body), "\n")
	if csv.Status != http.StatusOK || len(lines) != len(denied)+1 || !strings.HasPrefix(lines[0], "id,created_at") {
		t.Errorf("CSV export: %d, %d lines: %.300s", csv.Status, len(lines), csv.Body)
	}
	if strings.Contains(csv.Body, ",=cmd()") {
		t.Error("a reason that looks like a formula went into the CSV as one")
	}
	if empty := b.get(hc, "/history/export.json?q=nothing-matches-this"); strings.TrimSpace(empty.Body) != "[]" {
		t.Errorf("an empty export: %q, want []", empty.Body)
	}
}

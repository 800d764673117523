package handlers

import (
	"net/http"
	"strings"
	"testing"
)

// The console asks for the scopes the API asks for the same data: the
// policy page and run timelines need run.read, like GET /v1/tools and
// GET /v1/events.
func TestConsoleScopesMatchTheAPI(t *testing.T) {
	t.Parallel()
	b := setup(t)
	a := b.park()
	reader, full := b.signedIn("reader"), b.signedIn("full")
	for _, c := range []struct {
		hc     *http.Client
		path   string
		status int
	}{
		{reader, "/policy", http.StatusForbidden},
		{full, "/policy", http.StatusOK},
		{reader, "/runs/" + a.RunID, http.StatusForbidden},
		{full, "/runs/" + a.RunID, http.StatusOK},
		{reader, "/approvals/" + a.ID, http.StatusOK},
	} {
		r := b.get(c.hc, c.path)
		if r.Status != c.status {
			t.Errorf("GET %s: %d, want %d", c.path, r.Status, c.status)
		}
		if c.status == http.StatusForbidden && !strings.Contains(r.Body, "run.read") {
			t.Errorf("GET %s: the refusal does not name run.read", c.path)
		}
	}
	// Without run.read the approval shows without its run's timeline.
	if r := b.get(reader, "/approvals/"+a.ID); strings.Contains(r.Body, "Run timeline") || strings.Contains(r.Body, `data-testid="event"`) {
		t.Error("a viewer without run.read sees the run timeline")
	}
	if r := b.get(full, "/approvals/"+a.ID); !strings.Contains(r.Body, `data-testid="event"`) {
		t.Error("a viewer with run.read does not see the run timeline")
	}
}

// The queue's poll answers with approval cards of the viewer's tenant and
// nothing else, however far back its watermark reaches.
func TestQueuePollShowsOnlyOwnApprovals(t *testing.T) {
	t.Parallel()
	mine, theirs := setup(t), setup(t)
	own, other := mine.park(), theirs.park()
	r := mine.get(mine.signedIn("reader"), "/queue/updates?after=0", "HX-Request", "true")
	if r.Status != http.StatusOK || !strings.Contains(r.Body, own.ID) {
		t.Fatalf("poll: %d, own approval shown: %v", r.Status, strings.Contains(r.Body, own.ID))
	}
	if strings.Contains(r.Body, other.ID) || strings.Contains(r.Body, other.RunID) {
		t.Error("the poll shows another tenant's approval")
	}
	for _, leak := range []string{"run.submitted", "run.claimed", "action.proposed"} {
		if strings.Contains(r.Body, leak) {
			t.Errorf("the poll carries a %s event", leak)
		}
	}
}

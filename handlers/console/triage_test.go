package console

import (
	"strings"
	"testing"
	"time"

	"gatehouse/engine"
	"gatehouse/service"
	"gatehouse/web/templates"
)

// A viewer without approval.resolve gets no resolve form, and one without
// run.read no run link; a reviewer gets both, with the arguments hash in
// the form.
func TestCardShowsOnlyWhatTheViewerMayDo(t *testing.T) {
	t.Parallel()
	a := sampleApproval()
	a.ArgumentsHash = strings.Repeat("ab", 32)
	reader := engine.Principal{ID: "rita", TenantID: "acme", Scopes: []string{"approval.read"}}
	doc := render(t, templates.CardView(cardView(a, reader, fixedNow, "")))
	for _, id := range []string{"resolve-form", "approve", "deny", "run-link"} {
		if n := len(byTestID(t, doc, id)); n != 0 {
			t.Errorf("a reader without resolve or run.read sees %d %s", n, id)
		}
	}
	doc = render(t, templates.CardView(cardView(a, viewer, fixedNow, "")))
	for _, id := range []string{"resolve-form", "approve", "deny", "run-link", "deny-open"} {
		if n := len(byTestID(t, doc, id)); n != 1 {
			t.Errorf("a reviewer sees %d %s, want 1", n, id)
		}
	}
	if !strings.Contains(string(doc), `name="arguments_hash" value="`+a.ArgumentsHash+`"`) {
		t.Error("the resolve form does not carry the arguments hash")
	}
	if n := len(byTestID(t, doc, "deny-preset")); n != len(templates.DenyPresets) {
		t.Errorf("%d deny presets, want %d", n, len(templates.DenyPresets))
	}
	if n := len(byTestID(t, doc, "confirm-critical")); n != 0 {
		t.Error("a high-risk card asks for the critical confirmation")
	}
	a.Risk = engine.RiskCritical
	doc = render(t, templates.CardView(queueCard(a, viewer, fixedNow, "token")))
	if n := len(byTestID(t, doc, "confirm-critical")); n != 1 {
		t.Error("a critical card lacks its confirmation box")
	}
	if n := len(byTestID(t, doc, "batch-pick")); n != 0 {
		t.Error("a critical card is offered to the batch")
	}
}

// The clock turns amber inside 15 minutes and red inside 5; within the
// hour it counts seconds.
func TestCardClockUrgency(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		left    time.Duration
		urgency string
		text    string
	}{
		{2 * time.Hour, "", "in 2h 0m"},
		{14*time.Minute + 5*time.Second, "soon", "in 14m 05s"},
		{4 * time.Minute, "urgent", "in 4m 00s"},
	} {
		a := sampleApproval()
		a.ExpiresAt = fixedNow.Add(tc.left)
		c := cardView(a, viewer, fixedNow, "")
		if c.Urgency != tc.urgency || c.ExpiresIn != tc.text {
			t.Errorf("%v left: urgency %q text %q, want %q %q", tc.left, c.Urgency, c.ExpiresIn, tc.urgency, tc.text)
		}
	}
}

// A deny's reason is the preset and the free text; an unknown preset is
// refused, and an approval ignores the presets.
func TestDenyReason(t *testing.T) {
	t.Parallel()
	preset := templates.DenyPresets[0]
	for _, tc := range []struct {
		res          engine.ApprovalResolutionType
		preset, text string
		want         string
		bad          bool
	}{
		{engine.ResolutionDeny, preset, "", preset, false},
		{engine.ResolutionDeny, preset, " the second one ", preset + ": the second one", false},
		{engine.ResolutionDeny, "", "free", "free", false},
		{engine.ResolutionDeny, "made up", "", "", true},
		{engine.ResolutionApproveOnce, preset, "fine", "fine", false},
	} {
		got, err := denyReason(tc.res, tc.preset, tc.text)
		if (err != nil) != tc.bad || got != tc.want {
			t.Errorf("%s %q %q: %q %v, want %q (error %v)", tc.res, tc.preset, tc.text, got, err, tc.want, tc.bad)
		}
	}
}

// CSV cells an agent wrote cannot become spreadsheet formulas.
func TestInertCell(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"=HYPERLINK(\"x\")": "'=HYPERLINK(\"x\")", "+1": "'+1", "-2": "'-2", "@SUM": "'@SUM",
		"plain": "plain", "": "",
	} {
		if got := inertCell(in); got != want {
			t.Errorf("inertCell(%q) = %q, want %q", in, got, want)
		}
	}
}

// An hourly chart names each bar's hour, labels its axis every six hours
// and links to the history it counts; a pending tile links to the queue of
// its risk.
func TestOverviewLinksAndLabelledHours(t *testing.T) {
	t.Parallel()
	end := time.Date(2026, 3, 4, 14, 0, 0, 0, time.UTC)
	ch := hourChart("Denials per hour", "bad", engine.ApprovalDenied, make([]int, 24), end)
	if got := ch.Bars[23].Label; got != "13:00–14:00 UTC" {
		t.Errorf("last bar %q", got)
	}
	if got := strings.Join(ch.Axis, " "); got != "14:00 20:00 02:00 08:00 now" {
		t.Errorf("axis %q", got)
	}
	if ch.Href != "/history?since=2026-03-03&status=denied" {
		t.Errorf("chart link %q", ch.Href)
	}
	m := overviewView(templates.Page{}, service.Overview{PendingByRisk: map[engine.RiskLevel]int{engine.RiskCritical: 2}, At: end})
	if tile := m.PendingByRisk[0]; tile.Label != "critical" || tile.Value != 2 || tile.Href != "/?risk=critical" {
		t.Errorf("first tile %+v", tile)
	}
}

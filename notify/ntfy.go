package notify

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
)

type ntfy struct {
	name     string
	url      string // server root; the topic travels in the JSON body, never in the URL
	topic    string
	token    string // "" when the server needs none
	withArgs bool
	post     poster
}

func (n *ntfy) Name() string           { return n.name }
func (n *ntfy) Type() string           { return TypeNtfy }
func (n *ntfy) IncludeArguments() bool { return n.withArgs }

// ntfyMessage is ntfy's JSON publish body (https://docs.ntfy.sh/publish/#publish-as-json).
type ntfyMessage struct {
	Topic    string   `json:"topic"`
	Title    string   `json:"title"`
	Message  string   `json:"message"`
	Priority int      `json:"priority"`
	Tags     []string `json:"tags"`
	Click    string   `json:"click,omitempty"`
}

// ntfyPriority by risk (ntfy: 5 max, 4 high, 3 default, 2 low, 1 min). A
// follow-up (resolved, expired, ...) is informational: it goes out at low
// priority so it never buzzes louder than the request did.
var ntfyPriority = map[string]int{"critical": 5, "high": 4, "medium": 3, "low": 2}

// ntfyTags become emoji on the phone (ntfy maps known shortcodes) and filters.
var ntfyTags = map[string]string{
	KindRequested: "bell", KindExpiring: "hourglass_flowing_sand", KindExpired: "hourglass",
	KindCancelled: "no_entry_sign", KindInvalidated: "warning", KindTest: "test_tube",
}

// Deliver publishes one message; a follow-up is a new message about the
// same approval (ntfy has no portable edit), titled with the outcome.
func (n *ntfy) Deliver(ctx context.Context, d Delivery) (Result, error) {
	m := d.Message
	prio := ntfyPriority[m.Risk]
	if prio == 0 || terminal(m.Kind) {
		prio = 2
	}
	tag := ntfyTags[m.Kind]
	if m.Kind == KindResolved {
		tag = "x"
		if m.Status == "approved" {
			tag = "white_check_mark"
		}
	}
	lines := []string{
		plain(m.Summary, maxSummary),
		"Tool: " + plain(m.Tool, maxField) + " · risk " + m.Risk,
		status(m),
	}
	if n.withArgs && m.Arguments != nil {
		if args, err := json.Marshal(m.Arguments); err == nil {
			lines = append(lines, "Arguments: "+truncate(string(args), 2000))
		}
	}
	body, err := json.Marshal(ntfyMessage{
		Topic: n.topic, Title: headline(m), Message: strings.Join(lines, "\n"),
		Priority: prio, Tags: slices.DeleteFunc([]string{tag, "risk-" + m.Risk}, func(s string) bool { return s == "" || s == "risk-" }), Click: m.URL,
	})
	if err != nil {
		return Result{}, Permanent(fmt.Errorf("encode message: %w", err))
	}
	h := http.Header{}
	h.Set("Content-Type", "application/json")
	if n.token != "" {
		h.Set("Authorization", "Bearer "+n.token)
	}
	code, data, err := n.post.post(ctx, n.url, h, body)
	if err != nil {
		return Result{Status: code}, err
	}
	var r struct {
		ID string `json:"id"`
	}
	_ = json.Unmarshal(data, &r) // the id is a convenience for the attempt log; a 2xx is delivered either way
	return Result{Ref: plain(r.ID, maxField), Status: code}, nil
}

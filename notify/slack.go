package notify

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
)

// Slack's own limits on Block Kit text.
const (
	slackHeaderMax  = 150
	slackSectionMax = 3000
)

type slack struct {
	name     string
	apiURL   string
	token    string
	channel  string
	withArgs bool
	post     poster
}

func (s *slack) Name() string           { return s.name }
func (s *slack) Type() string           { return TypeSlack }
func (s *slack) IncludeArguments() bool { return s.withArgs }

// slackResponse is the part of a Web API answer the channel reads.
type slackResponse struct {
	OK      bool   `json:"ok"`
	Error   string `json:"error"`
	Channel string `json:"channel"`
	TS      string `json:"ts"`
}

// slackRetryable are the Web API errors worth another attempt; every other
// ok:false (invalid_auth, channel_not_found, not_in_channel, missing_scope,
// invalid_blocks, ...) needs an operator, so it is Permanent.
var slackRetryable = map[string]bool{
	"ratelimited": true, "internal_error": true, "fatal_error": true,
	"service_unavailable": true, "request_timeout": true,
}

// slackGone are the chat.update errors that mean the original message cannot
// be edited (deleted, too old): the channel posts the new state instead.
var slackGone = map[string]bool{"message_not_found": true, "cant_update_message": true, "edit_window_closed": true}

// Deliver posts a message for a new approval, and for a later notification
// of the same approval (PriorRef set) edits that message in place, so the
// channel never keeps a stale "pending". An "expiring" notice also posts a
// reply broadcast to the channel, because an edit pings nobody.
func (s *slack) Deliver(ctx context.Context, d Delivery) (Result, error) {
	msg := s.render(d.Message)
	prevChannel, prevTS, hasPrior := strings.Cut(d.PriorRef, ":")
	if !hasPrior || prevChannel == "" || prevTS == "" {
		return s.call(ctx, "chat.postMessage", msg)
	}
	msg["channel"], msg["ts"] = prevChannel, prevTS
	res, err := s.call(ctx, "chat.update", msg)
	var se *slackError
	if errors.As(err, &se) && slackGone[se.code] {
		delete(msg, "ts")
		return s.call(ctx, "chat.postMessage", msg)
	}
	if err != nil || d.Kind != KindExpiring {
		return res, err
	}
	reply := map[string]any{
		"channel": prevChannel, "thread_ts": prevTS, "reply_broadcast": true,
		"text": slackEscape(status(d.Message)) + " <" + d.URL + "|Open in Gatehouse>",
	}
	if r, err := s.call(ctx, "chat.postMessage", reply); err != nil {
		return r, err
	}
	return res, nil
}

type slackError struct{ code string }

func (e *slackError) Error() string { return "slack: " + e.code }

// call invokes one Web API method; Slack answers 200 with ok:false for most
// failures, so both the status and the body decide.
func (s *slack) call(ctx context.Context, method string, msg map[string]any) (Result, error) {
	body, err := json.Marshal(msg)
	if err != nil {
		return Result{}, Permanent(fmt.Errorf("encode message: %w", err))
	}
	h := http.Header{}
	h.Set("Content-Type", "application/json; charset=utf-8")
	h.Set("Authorization", "Bearer "+s.token)
	code, data, err := s.post.post(ctx, s.apiURL+"/"+method, h, body)
	if err != nil {
		return Result{Status: code}, err
	}
	var r slackResponse
	if err := json.Unmarshal(data, &r); err != nil {
		return Result{Status: code}, fmt.Errorf("slack %s: answer is not JSON", method)
	}
	if !r.OK {
		err := &slackError{code: plain(r.Error, maxField)}
		if slackRetryable[r.Error] {
			return Result{Status: code}, err
		}
		return Result{Status: code}, Permanent(err)
	}
	return Result{Ref: r.Channel + ":" + r.TS, Status: code}, nil
}

// render builds the Block Kit message. It has no approve or deny button: the
// only action is a link to the card in the console, where approving happens
// behind the approver's session.
func (s *slack) render(m Message) map[string]any {
	lines := []string{
		"*Tool:* " + slackEscape(plain(m.Tool, maxField)) + "   *Risk:* " + slackEscape(m.Risk) + "   *Side effect:* " + slackEscape(m.SideEffect),
		"*Summary:* " + slackEscape(plain(m.Summary, maxSummary)),
		"*Status:* " + slackEscape(status(m)),
	}
	blocks := []any{
		map[string]any{"type": "header", "text": map[string]any{"type": "plain_text", "text": truncate(headline(m), slackHeaderMax)}},
		map[string]any{"type": "section", "text": map[string]any{"type": "mrkdwn", "text": truncate(strings.Join(lines, "\n"), slackSectionMax)}},
	}
	if s.withArgs && m.Arguments != nil {
		if args, err := json.MarshalIndent(m.Arguments, "", "  "); err == nil {
			blocks = append(blocks, map[string]any{"type": "section", "text": map[string]any{
				"type": "mrkdwn", "text": truncate("```"+slackEscape(strings.ReplaceAll(string(args), "```", "'''"))+"```", slackSectionMax),
			}})
		}
	}
	if m.URL != "" {
		blocks = append(blocks, map[string]any{"type": "actions", "elements": []any{map[string]any{
			"type": "button", "text": map[string]any{"type": "plain_text", "text": "Open in Gatehouse"}, "url": m.URL,
		}}})
	}
	return map[string]any{
		"channel":      s.channel,
		"text":         slackEscape(headline(m) + " — " + plain(m.Summary, maxSummary)),
		"blocks":       blocks,
		"unfurl_links": false,
		"unfurl_media": false,
	}
}

// slackEscape escapes the three characters Slack's mrkdwn interprets as
// control sequences (links, @channel mentions, entities), so agent text
// cannot ping a channel or disguise a link.
func slackEscape(s string) string {
	return strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;").Replace(s)
}

package notify

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
)

// slackAPI is a Slack-Web-API-shaped server: it checks the bot token, keeps
// the messages it was asked to post by ts, and answers the way Slack does
// (200 with ok:false for most errors). failWith makes the next call fail.
type slackAPI struct {
	mu       sync.Mutex
	messages map[string]map[string]any // ts -> last posted or updated body
	calls    []string                  // method names, in order
	failWith map[string]string         // method -> Slack error code
	server   *httptest.Server
}

func newSlackAPI(t *testing.T) *slackAPI {
	t.Helper()
	s := &slackAPI{messages: map[string]map[string]any{}, failWith: map[string]string{}}
	s.server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		defer s.mu.Unlock()
		method := strings.TrimPrefix(r.URL.Path, "/api/")
		s.calls = append(s.calls, method)
		answer := func(v map[string]any) { _ = json.NewEncoder(w).Encode(v) }
		if r.Header.Get("Authorization") != "Bearer xoxb-test-token" {
			answer(map[string]any{"ok": false, "error": "invalid_auth"})
			return
		}
		var body map[string]any
		if err := json.NewDecoder(r.Body).Decode(&body); err != nil || body["channel"] != "C0123456" {
			answer(map[string]any{"ok": false, "error": "channel_not_found"})
			return
		}
		if code := s.failWith[method]; code != "" {
			delete(s.failWith, method)
			answer(map[string]any{"ok": false, "error": code})
			return
		}
		var ts string
		switch method {
		case "chat.postMessage":
			ts = "1777888800.0000" + string(rune('0'+len(s.messages)))
		case "chat.update":
			ts, _ = body["ts"].(string)
			if _, ok := s.messages[ts]; !ok {
				answer(map[string]any{"ok": false, "error": "message_not_found"})
				return
			}
		default:
			http.NotFound(w, r)
			return
		}
		if _, thread := body["thread_ts"]; !thread {
			s.messages[ts] = body
		}
		answer(map[string]any{"ok": true, "channel": "C0123456", "ts": ts})
	}))
	t.Cleanup(s.server.Close)
	return s
}

func (s *slackAPI) channel(t *testing.T) Channel {
	return channel(t, `
channels:
  - name: slack
    type: slack
    token_env: SLACK_BOT_TOKEN
    channel: C0123456
    api_url: `+s.server.URL+`/api/
`, BuildOptions{})
}

func (s *slackAPI) message(ts string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	b, _ := json.Marshal(s.messages[ts])
	return string(b)
}

// postedRequest is a Slack API with the request for approval already posted.
func postedRequest(t *testing.T) (*slackAPI, Channel, Result) {
	t.Helper()
	api := newSlackAPI(t)
	ch := api.channel(t)
	res, err := deliver(t, ch, requested())
	if err != nil {
		t.Fatal(err)
	}
	return api, ch, res
}

func TestSlackPostsTheRequestThenUpdatesTheSameMessageWithTheOutcome(t *testing.T) {
	t.Parallel()
	api, ch, res := postedRequest(t)
	channelID, ts, _ := strings.Cut(res.Ref, ":")
	if channelID != "C0123456" || ts == "" {
		t.Fatalf("ref %q", res.Ref)
	}
	pending := api.message(ts)
	mustContain(t, "pending message", pending, "Approval needed: email.send", "Expires in 1h", "Open in Gatehouse", requested().URL)

	res2, err := deliver(t, ch, resolved(res.Ref))
	if err != nil {
		t.Fatal(err)
	}
	if res2.Ref != res.Ref || strings.Join(api.calls, ",") != "chat.postMessage,chat.update" {
		t.Fatalf("want the same message updated, got ref %q after calls %v", res2.Ref, api.calls)
	}
	final := api.message(ts)
	mustContain(t, "updated message", final, "Approved by bob: email.send", "checked the recipient", "Open in Gatehouse")
	mustNotContain(t, "updated message", final, "Expires in", "Approval needed", "action_id", "approve")
}

func TestSlackMessageHasOnlyALinkButton(t *testing.T) {
	t.Parallel()
	msg := (&slack{channel: "C0123456"}).render(requested().Message)
	b, _ := json.Marshal(msg)
	if n := strings.Count(string(b), `"type":"button"`); n != 1 {
		t.Fatalf("want exactly one button, got %d: %s", n, b)
	}
	mustContain(t, "message", string(b), `"url":"`+requested().URL+`"`)
	mustNotContain(t, "message", string(b), "action_id", "value")
}

func TestSlackEscapesAgentTextSoItCannotMentionOrLink(t *testing.T) {
	t.Parallel()
	d := requested()
	d.Summary = "<!channel> see <https://evil.example|your bank> & pay\n\u202eevil\x1b[31m"
	msg := (&slack{channel: "C0123456"}).render(d.Message)
	text, _ := msg["text"].(string)
	var blocks strings.Builder
	enc := json.NewEncoder(&blocks)
	enc.SetEscapeHTML(false) // compare the text Slack decodes, not JSON's \u003c
	if err := enc.Encode(msg["blocks"]); err != nil {
		t.Fatal(err)
	}
	for what, s := range map[string]string{"fallback text": text, "blocks": blocks.String()} {
		mustContain(t, what, s, "&lt;!channel&gt;", "&lt;https://evil.example|your bank&gt; &amp; pay")
		mustNotContain(t, what, s, "<!channel>", "<https://evil", "\u202e", "\x1b", `\u001b`, `\u202e`)
	}
}

func TestSlackErrorsMapToRetryOrGiveUp(t *testing.T) {
	t.Parallel()
	for code, permanent := range map[string]bool{
		"ratelimited": false, "internal_error": false, "service_unavailable": false,
		"invalid_auth": true, "channel_not_found": true, "not_in_channel": true, "missing_scope": true, "invalid_blocks": true,
	} {
		api := newSlackAPI(t)
		api.failWith["chat.postMessage"] = code
		_, err := deliver(t, api.channel(t), requested())
		if err == nil || IsPermanent(err) != permanent || !strings.Contains(err.Error(), code) {
			t.Errorf("%s: got %v (permanent %v), want permanent %v", code, err, IsPermanent(err), permanent)
		}
	}
}

func TestSlackWithAWrongTokenGivesUp(t *testing.T) {
	t.Parallel()
	api := newSlackAPI(t)
	cfg, err := ParseConfig("t.yaml", []byte("channels:\n  - {name: slack, type: slack, token_env: T, channel: C0123456, api_url: \""+api.server.URL+"/api\"}\n"),
		func(string) string { return "xoxb-revoked" })
	if err != nil {
		t.Fatal(err)
	}
	chs, err := cfg.Build(BuildOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := deliver(t, chs["slack"], requested()); !IsPermanent(err) || !strings.Contains(err.Error(), "invalid_auth") {
		t.Fatalf("want a permanent invalid_auth, got %v", err)
	}
}

func TestSlackPostsAgainWhenTheOriginalMessageIsGone(t *testing.T) {
	t.Parallel()
	api := newSlackAPI(t)
	res, err := deliver(t, api.channel(t), resolved("C0123456:1700000000.000000"))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(api.calls, ",") != "chat.update,chat.postMessage" || res.Ref == "C0123456:1700000000.000000" {
		t.Fatalf("calls %v, ref %q", api.calls, res.Ref)
	}
	_, ts, _ := strings.Cut(res.Ref, ":")
	mustContain(t, "new message", api.message(ts), "Approved by bob")
}

func TestSlackExpiringUpdatesTheMessageAndBroadcastsAReply(t *testing.T) {
	t.Parallel()
	api, ch, res := postedRequest(t)
	d := requested()
	d.ID, d.Kind, d.PriorRef, d.SentAt = "ntf_0003", KindExpiring, res.Ref, d.ExpiresAt.Add(-9*60e9)
	res2, err := deliver(t, ch, d)
	if err != nil || res2.Ref != res.Ref {
		t.Fatalf("expiring: %v, ref %q", err, res2.Ref)
	}
	if strings.Join(api.calls, ",") != "chat.postMessage,chat.update,chat.postMessage" {
		t.Fatalf("calls %v", api.calls)
	}
	_, ts, _ := strings.Cut(res.Ref, ":")
	mustContain(t, "updated message", api.message(ts), "Expiring soon: email.send", "Expires in 9m")
}

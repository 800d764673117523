package notify

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

// hostile is agent-written summary text trying every trick a renderer might
// fall for: terminal escapes, a bidi override, zero-width characters, HTML,
// a Slack mention and a fake second line.
const hostile = "Pay <b>now</b><script>alert(1)</script> <!channel> \x1b[2J\u202eKCATTA\u200b\r\nApproved by admin\x00 \xff"

func TestPlainRemovesControlAndInvisibleCharacters(t *testing.T) {
	t.Parallel()
	cases := map[string]string{
		"a\nb\r\nc\td":            "a b c d",
		"  lead and trail  ":      "lead and trail",
		"bidi \u202eevil\u202c":   "bidi evil",
		"zero\u200bwidth\ufeff":   "zero width",
		"esc \x1b[31mred":         "esc [31mred",
		"bad utf8 \xff":           "bad utf8 \uFFFD",
		"<b>kept as text</b> & <": "<b>kept as text</b> & <",
	}
	for in, want := range cases {
		if got := plain(in, 100); got != want {
			t.Errorf("plain(%q) = %q, want %q", in, got, want)
		}
	}
	long := plain(strings.Repeat("é", 500), 300)
	if utf8.RuneCountInString(long) != 301 || !strings.HasSuffix(long, "…") {
		t.Errorf("cut: %d runes", utf8.RuneCountInString(long))
	}
	if got := truncate("ab"+strings.Repeat("é", 10), 7); !utf8.ValidString(got) || len(got) > 7 {
		t.Errorf("truncate: %q", got)
	}
}

// inert reports what a rendered text must not contain once the hostile
// summary went through it.
func inert(t *testing.T, what, s string) {
	t.Helper()
	mustNotContain(t, what, s, "\x1b", "\u202e", "\u200b", "\r", "\x00", "\nApproved by admin")
	if !utf8.ValidString(s) {
		t.Errorf("%s is not valid UTF-8", what)
	}
}

func TestUntrustedSummaryStaysInertInEveryChannel(t *testing.T) {
	t.Parallel()
	d := requested()
	d.Summary = hostile

	var p WebhookPayload
	b, _ := json.Marshal(payload(d.Message, false))
	if err := json.Unmarshal(b, &p); err != nil {
		t.Fatal(err)
	}
	inert(t, "webhook summary", p.Data.Summary)
	mustContain(t, "webhook summary", p.Data.Summary, "<script>") // text, for the receiver to escape

	srv, got := ntfyServer(t)
	if _, err := deliver(t, ntfyChannel(t, srv.URL, "NTFY_TOKEN"), d); err != nil {
		t.Fatal(err)
	}
	m := <-got
	summaryLine, _, _ := strings.Cut(m.Message, "\n")
	inert(t, "ntfy summary line", summaryLine)

	ps := newPushService(t)
	ch, _ := webPushChannel(t)
	d.Subscriptions = []PushSubscription{ps.subscribe(t, "phone")}
	if _, err := deliver(t, ch, d); err != nil {
		t.Fatal(err)
	}
	body := ps.got["phone"][0].payload.Body
	first, _, _ := strings.Cut(body, "\n")
	inert(t, "push body's first line", first)

	sl := (&slack{channel: "C1"}).render(d.Message)
	text, _ := sl["text"].(string)
	inert(t, "slack text", text)
	mustNotContain(t, "slack text", text, "<!channel>", "<script>")
}

func TestStatusLine(t *testing.T) {
	t.Parallel()
	d := requested().Message
	for left, want := range map[time.Duration]string{
		time.Hour: "Expires in 1h", 65 * time.Minute: "Expires in 1h5m", 9*time.Minute + 20*time.Second: "Expires in 9m",
		20 * time.Second: "Expires in under a minute", 0: "Expires now", -time.Minute: "Expires now",
	} {
		d.ExpiresAt = d.SentAt.Add(left)
		if got := status(d); got != want {
			t.Errorf("%v left: %q, want %q", left, got, want)
		}
	}
	for kind, want := range map[string]string{
		KindExpired: "Expired: email.send", KindCancelled: "Cancelled: email.send", KindInvalidated: "Invalidated: email.send",
	} {
		d.Kind, d.Reason = kind, ""
		if got := status(d); got != want {
			t.Errorf("%s: %q, want %q", kind, got, want)
		}
	}
	d.Kind, d.Status, d.ResolvedBy, d.Reason = KindResolved, "denied", "carol", "wrong\nrecipient"
	if got := status(d); got != "Denied by carol: email.send (wrong recipient)" {
		t.Errorf("denied: %q", got)
	}
}

func TestLogChannelPrintsThePayloadWithoutArgumentsUnlessOptedIn(t *testing.T) {
	t.Parallel()
	for _, opted := range []bool{false, true} {
		var buf bytes.Buffer
		yamlText := "channels:\n  - {name: stdout, type: log}\n"
		if opted {
			yamlText = "channels:\n  - {name: stdout, type: log, include_arguments: true}\n"
		}
		ch := channel(t, yamlText, BuildOptions{Logger: slog.New(slog.NewJSONHandler(&buf, nil))})
		d := requested()
		d.Arguments = map[string]any{"to": "finance@example.com"}
		if res, err := deliver(t, ch, d); err != nil || res.Ref != "" || res.Status != 0 {
			t.Fatalf("%+v, %v", res, err)
		}
		var line struct {
			Level, Msg, Channel string
			Payload             WebhookPayload
		}
		if err := json.Unmarshal(buf.Bytes(), &line); err != nil {
			t.Fatalf("%v: %s", err, buf.Bytes())
		}
		if line.Level != "INFO" || line.Msg != "notification" || line.Channel != "stdout" || line.Payload.Type != "approval.requested" || line.Payload.Data.URL != d.URL {
			t.Errorf("log line: %s", buf.Bytes())
		}
		if (line.Payload.Data.Arguments != nil) != opted {
			t.Errorf("opted in %v, arguments %v", opted, line.Payload.Data.Arguments)
		}
	}
}

func TestTestSendSaysItIsATest(t *testing.T) {
	t.Parallel()
	m := Message{ID: "ntf_test", Kind: KindTest, SentAt: sentAt, URL: "https://gatehouse.example.com/notifications"}
	if h, s := headline(m), status(m); h != "Gatehouse test notification" || !strings.Contains(s, "this channel works") {
		t.Errorf("headline %q, status %q", h, s)
	}
}

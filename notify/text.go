package notify

import (
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"
)

// Limits, in runes, on untrusted text in a rendered notification: a summary
// is a line on a lock screen or in a chat, not a document.
const (
	maxSummary = 300
	maxField   = 120
	maxPayload = 2000
)

// plain makes untrusted text safe to show as one line of plain text: control
// and invisible formatting characters (bidi overrides, zero-width joiners)
// become spaces, runs of white space collapse, and the result is cut to max
// runes. Markup is left as characters; each channel escapes what its own
// format would interpret.
func plain(s string, maxRunes int) string {
	var b strings.Builder
	space := false
	n := 0
	for _, r := range strings.ToValidUTF8(s, "\uFFFD") {
		if unicode.IsControl(r) || unicode.Is(unicode.Cf, r) || unicode.IsSpace(r) {
			space = b.Len() > 0
			continue
		}
		if n >= maxRunes {
			b.WriteString("…")
			return b.String()
		}
		if space {
			b.WriteByte(' ')
			n++
			space = false
		}
		b.WriteRune(r)
		n++
	}
	return b.String()
}

// truncate cuts s (already plain) to maxBytes bytes on a rune boundary.
func truncate(s string, maxBytes int) string {
	if len(s) <= maxBytes {
		return s
	}
	cut := maxBytes - len("…")
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}

// terminal reports whether the kind ends the approval's story: the channel
// then shows the outcome instead of asking for attention.
func terminal(kind string) bool {
	switch kind {
	case KindResolved, KindExpired, KindCancelled, KindInvalidated:
		return true
	}
	return false
}

// headline is the one-line title every channel leads with.
func headline(m Message) string {
	tool := plain(m.Tool, maxField)
	switch m.Kind {
	case KindRequested:
		return "Approval needed: " + tool
	case KindExpiring:
		return "Expiring soon: " + tool
	case KindResolved:
		verb := "Resolved"
		switch m.Status {
		case "approved":
			verb = "Approved"
		case "denied":
			verb = "Denied"
		}
		if by := plain(m.ResolvedBy, maxField); by != "" {
			return verb + " by " + by + ": " + tool
		}
		return verb + ": " + tool
	case KindExpired:
		return "Expired: " + tool
	case KindCancelled:
		return "Cancelled: " + tool
	case KindInvalidated:
		return "Invalidated: " + tool
	case KindTest:
		return "Gatehouse test notification"
	}
	return "Gatehouse: " + tool
}

// timeLeft is how long the approval stays open, from the caller's clock.
func timeLeft(m Message) time.Duration {
	if m.ExpiresAt.IsZero() || m.SentAt.IsZero() || !m.ExpiresAt.After(m.SentAt) {
		return 0
	}
	return m.ExpiresAt.Sub(m.SentAt)
}

// status is the one line under the summary: time left while pending, the
// outcome (and its reason) once over.
func status(m Message) string {
	if m.Kind == KindTest {
		return "A test from the Gatehouse console: this channel works"
	}
	if terminal(m.Kind) {
		if r := plain(m.Reason, maxField); r != "" {
			return headline(m) + " (" + r + ")"
		}
		return headline(m)
	}
	left := timeLeft(m)
	if left <= 0 {
		return "Expires now"
	}
	left = left.Round(time.Minute)
	if left < time.Minute {
		return "Expires in under a minute"
	}
	return "Expires in " + hoursMinutes(left)
}

// hoursMinutes writes a whole number of minutes as "2h", "1h5m" or "9m".
func hoursMinutes(d time.Duration) string {
	h, m := int(d/time.Hour), int(d%time.Hour/time.Minute)
	switch {
	case h == 0:
		return strconv.Itoa(m) + "m"
	case m == 0:
		return strconv.Itoa(h) + "h"
	}
	return strconv.Itoa(h) + "h" + strconv.Itoa(m) + "m"
}

// riskPriority orders risks for routing and for channels with priorities.
var riskPriority = map[string]int{"low": 1, "medium": 2, "high": 3, "critical": 4}

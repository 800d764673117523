package console

import (
	"encoding/json"
	"testing"
	"time"

	"gatehouse/engine"
	"gatehouse/web/templates"
)

func TestMoney(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		amount any
		code   string
		want   string
		ok     bool
	}{
		{json.Number("1250"), "EUR", "€12.50", true},
		{json.Number("5"), "USD", "$0.05", true},
		{json.Number("0"), "GBP", "£0.00", true},
		{json.Number("123456789"), "USD", "$1,234,567.89", true},
		{json.Number("-1250"), "EUR", "−€12.50", true},
		{json.Number("1250"), "JPY", "¥1,250", true},
		{json.Number("1250"), "KWD", "KWD 1.250", true},
		{json.Number("99999999999999999999999"), "EUR", "€999,999,999,999,999,999,999.99", true},
		{1250, "EUR", "€12.50", true},
		{1250.0, "EUR", "€12.50", true},
		{json.Number("1250"), "XTS", "1250 XTS minor units", true},
		{json.Number("12.5"), "EUR", "", false},
		{12.5, "EUR", "", false},
		{"1250", "EUR", "", false},
		{json.Number("1250"), "eur", "", false},
		{json.Number("1250"), "EURO", "", false},
		{json.Number("1250"), "E\u202eR", "", false},
	} {
		got, ok := money(c.amount, c.code)
		if got != c.want || ok != c.ok {
			t.Errorf("money(%v, %q) = %q, %v; want %q, %v", c.amount, c.code, got, ok, c.want, c.ok)
		}
	}
}

func TestURLParts(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		in   string
		want templates.URLParts
		flag bool
	}{
		{"https://api.example.com/v1/hook?x=1#f", templates.URLParts{Scheme: "https://", Host: "api.example.com", Rest: "/v1/hook?x=1#f"}, false},
		{"http://example.com", templates.URLParts{Scheme: "http://", Host: "example.com"}, false},
		{"https://example.com:8443?q", templates.URLParts{Scheme: "https://", Host: "example.com:8443", Rest: "?q"}, false},
		// The host is what follows the last @: the part a reviewer must see.
		{"https://bank.example.com@evil.example/login", templates.URLParts{Scheme: "https://", UserInfo: "bank.example.com@", Host: "evil.example", Rest: "/login"}, false},
		// Shown as sent, not re-encoded.
		{"https://files.example.com/invoice\u202efdp.exe", templates.URLParts{Scheme: "https://", Host: "files.example.com", Rest: "/invoice\u202efdp.exe"}, false},
		{"javascript:alert(1)", templates.URLParts{}, true},
		{"/relative/path", templates.URLParts{}, true},
		{"https://exa mple.com/", templates.URLParts{}, true},
		{"https:///nohost", templates.URLParts{}, true},
		{"http://[::1", templates.URLParts{}, true},
	} {
		got, flag := urlParts(c.in)
		if got != c.want || (flag != "") != c.flag {
			t.Errorf("urlParts(%q) = %+v, %q", c.in, got, flag)
		}
		if flag == "" && got.Scheme+got.UserInfo+got.Host+got.Rest != c.in {
			t.Errorf("urlParts(%q) does not add up to the value", c.in)
		}
	}
}

func TestRecipients(t *testing.T) {
	t.Parallel()
	list, flag, ok := recipients("to", `Ann Lee <ann@example.com>, bob@evil.example`)
	want := []templates.Recipient{{Name: "Ann Lee", Local: "ann", Domain: "example.com"}, {Local: "bob", Domain: "evil.example"}}
	if !ok || flag != "" || len(list) != 2 || list[0] != want[0] || list[1] != want[1] {
		t.Errorf("recipients = %+v, %q, %v", list, flag, ok)
	}
	if _, flag, ok := recipients("to", "ann@@example.com,,"); !ok || flag == "" {
		t.Errorf("a broken list is not flagged: %q %v", flag, ok)
	}
	// A phone number, and an @ in an argument that is not a recipient.
	if _, _, ok := recipients("to", "+15551234567"); ok {
		t.Error("a phone number read as an address list")
	}
	if _, _, ok := recipients("body", "mail me at a@example.com"); ok {
		t.Error("a body read as an address list")
	}
}

// TestDisplay: what format each argument gets, and that a truncated or
// redacted value is never formatted from what is left of it.
func TestDisplay(t *testing.T) {
	t.Parallel()
	args := map[string]any{
		"amount_cents": json.Number("1250"), "currency": "EUR", "customer": "cus_1",
		"url": "https://api.example.com/x", "to": "a@example.com", "file_id": "f-123",
		"note": "see https://example.com/page for details", "link": "https://example.com/a",
		"token_url": "[REDACTED: 40 characters]",
	}
	want := map[string]templates.ArgFormat{
		"amount_cents": templates.FormatMoney, "currency": templates.FormatPlain, "customer": templates.FormatPlain,
		"url": templates.FormatURL, "to": templates.FormatRecipients, "file_id": templates.FormatID,
		"note": templates.FormatPlain, "link": templates.FormatURL, "token_url": templates.FormatPlain,
	}
	for name, v := range args {
		d := display(name, v, templates.Arg{}, args, "")
		if d.Format != want[name] || d.Flag != "" {
			t.Errorf("%s: format %q flag %q, want %q", name, d.Format, d.Flag, want[name])
		}
	}
	if d := display("url", "https://api.example.com/x", templates.Arg{Hidden: 3}, args, ""); d.Format != templates.FormatPlain {
		t.Errorf("a truncated URL is formatted: %+v", d)
	}
	if d := display("url", "ftp://x", templates.Arg{}, args, ""); d.Flag == "" || d.Format != templates.FormatPlain {
		t.Errorf("an ftp URL is not flagged: %+v", d)
	}
}

// TestTrustMarks: memory, knowledge and external content are marked
// untrusted; a tool's output is labelled; the user's input is neither.
func TestTrustMarks(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		t         engine.TrustLevel
		label     bool
		untrusted bool
		banner    bool
	}{
		{engine.TrustUser, false, false, false},
		{engine.TrustPlatform, false, false, false},
		{engine.TrustTrustedConfiguration, false, false, false},
		{engine.TrustInternalTool, true, false, true},
		{engine.TrustMemory, true, true, true},
		{engine.TrustKnowledge, true, true, true},
		{engine.TrustExternalUntrusted, true, true, true},
	} {
		d := display("x", "v", templates.Arg{}, nil, c.t)
		if (d.Trust != "") != c.label || d.Untrusted != c.untrusted || (originBanner(c.t) != "") != c.banner {
			t.Errorf("%s: %+v, banner %q", c.t, d, originBanner(c.t))
		}
	}
}

func TestSpan(t *testing.T) {
	t.Parallel()
	for d, want := range map[string]string{"30s": "minute", "61s": "2 minutes", "59m": "59 minutes", "90m": "2 hours", "25h": "2 days"} {
		dur, _ := time.ParseDuration(d)
		if got := span(dur); got != want {
			t.Errorf("span(%s) = %q, want %q", d, got, want)
		}
	}
}

package console

import (
	"encoding/json"
	"math"
	"math/big"
	"net/mail"
	"net/url"
	"strings"

	"gatehouse/engine"
	"gatehouse/web/templates"
)

// Values formatted for a human (issue 10, part A). A formatter only ever
// adds a reading of a value: the value itself is still shown, through the
// template's visible() and escaping, and a value that does not parse as
// what its name promises is shown raw with a flag rather than guessed at.

// currency is a currency's symbol and its minor-unit exponent (ISO 4217).
type currency struct {
	symbol   string
	exponent int
}

// currencies are the common ones; another code is shown raw with the code.
var currencies = map[string]currency{
	"USD": {"$", 2}, "EUR": {"€", 2}, "GBP": {"£", 2}, "JPY": {"¥", 0}, "CHF": {"CHF ", 2},
	"CAD": {"CA$", 2}, "AUD": {"A$", 2}, "NZD": {"NZ$", 2}, "CNY": {"CN¥", 2}, "INR": {"₹", 2},
	"KRW": {"₩", 0}, "SEK": {"SEK ", 2}, "NOK": {"NOK ", 2}, "DKK": {"DKK ", 2}, "PLN": {"PLN ", 2},
	"CZK": {"CZK ", 2}, "BRL": {"R$", 2}, "MXN": {"MX$", 2}, "SGD": {"SGD ", 2}, "HKD": {"HK$", 2},
	"ZAR": {"ZAR ", 2}, "ILS": {"₪", 2}, "TRY": {"TRY ", 2}, "KWD": {"KWD ", 3}, "BHD": {"BHD ", 3},
	"JOD": {"JOD ", 3}, "TND": {"TND ", 3}, "CLP": {"CLP ", 0}, "ISK": {"ISK ", 0}, "VND": {"₫", 0},
}

// money formats an amount in minor units of a currency: "€12.50".
// ok is false for an amount that is not a whole number or a currency
// that is not three letters; an unknown currency is the raw amount and
// its code ("1250 XTS minor units").
func money(amount any, code string) (string, bool) {
	n, ok := wholeNumber(amount)
	if !ok || len(code) != 3 || strings.ToUpper(code) != code || strings.Trim(code, "ABCDEFGHIJKLMNOPQRSTUVWXYZ") != "" {
		return "", false
	}
	c, known := currencies[code]
	if !known {
		return n.String() + " " + code + " minor units", true
	}
	sign := ""
	if n.Sign() < 0 {
		sign = "−"
		n.Neg(n)
	}
	digits := n.String()
	if c.exponent > 0 {
		digits = strings.Repeat("0", max(0, c.exponent+1-len(digits))) + digits
		cut := len(digits) - c.exponent
		digits = groupThousands(digits[:cut]) + "." + digits[cut:]
	} else {
		digits = groupThousands(digits)
	}
	return sign + c.symbol + digits, true
}

// wholeNumber reads an integer JSON number of any size.
func wholeNumber(v any) (*big.Int, bool) {
	switch x := v.(type) {
	case json.Number: // as the service decodes arguments
		return new(big.Int).SetString(x.String(), 10)
	case float64:
		if x != math.Trunc(x) || math.IsInf(x, 0) {
			return nil, false
		}
		n, _ := big.NewFloat(x).Int(nil)
		return n, true
	case int:
		return big.NewInt(int64(x)), true
	}
	return nil, false
}

// groupThousands puts a comma between groups of three digits.
func groupThousands(d string) string {
	if len(d) <= 3 {
		return d
	}
	var b strings.Builder
	head := len(d) % 3
	if head > 0 {
		b.WriteString(d[:head])
	}
	for i := head; i < len(d); i += 3 {
		if b.Len() > 0 {
			b.WriteByte(',')
		}
		b.WriteString(d[i : i+3])
	}
	return b.String()
}

// urlParts splits an absolute http(s) URL for display; flag says why a
// value is not one (it is then shown raw).
func urlParts(s string) (p templates.URLParts, flag string) {
	u, err := url.Parse(s)
	switch {
	case err != nil:
		return p, "not a valid URL: shown exactly as sent"
	case u.Scheme != "http" && u.Scheme != "https":
		if u.Scheme == "" {
			return p, "not an absolute URL: shown exactly as sent"
		}
		return p, "not a web address (scheme " + u.Scheme + "): shown exactly as sent"
	case u.Host == "" || u.Opaque != "":
		return p, "a URL without a host: shown exactly as sent"
	}
	// Cut the original text rather than re-encoding it, so what is shown
	// is what was sent, character for character.
	rest := strings.TrimPrefix(s[len(u.Scheme):], ":")
	rest = strings.TrimPrefix(rest, "//")
	p.Scheme = s[:len(s)-len(rest)]
	authority, tail, _ := cutAny(rest, "/?#")
	if at := strings.LastIndexByte(authority, '@'); at >= 0 {
		p.UserInfo, authority = authority[:at+1], authority[at+1:]
	}
	p.Host, p.Rest = authority, tail
	return p, ""
}

// cutAny cuts s before the first of the bytes in seps.
func cutAny(s, seps string) (before, after string, found bool) {
	if i := strings.IndexAny(s, seps); i >= 0 {
		return s[:i], s[i:], true
	}
	return s, "", false
}

// looksLikeURL reports whether an argument should be read as a URL: its
// name says so, or its value starts with a scheme and "//".
func looksLikeURL(name, v string) bool {
	if name == "url" || strings.HasSuffix(name, "_url") || name == "href" {
		return true
	}
	scheme, rest, ok := strings.Cut(v, "://")
	return ok && scheme != "" && !strings.ContainsAny(scheme, " \t\n/") && rest != "" && !strings.ContainsAny(v, " \t\n")
}

// recipientNames are the arguments holding email addresses.
var recipientNames = map[string]bool{"to": true, "cc": true, "bcc": true, "recipient": true, "recipients": true, "reply_to": true}

// recipients parses an address list; flag says why it is not one. A
// phone number (no @) is neither: ok is false and it is shown as it is.
func recipients(name, v string) (list []templates.Recipient, flag string, ok bool) {
	if !recipientNames[name] || !strings.Contains(v, "@") {
		return nil, "", false
	}
	addrs, err := mail.ParseAddressList(v)
	if err != nil || len(addrs) == 0 {
		return nil, "not a valid address list: shown exactly as sent", true
	}
	for _, a := range addrs {
		local, domain, _ := strings.Cut(a.Address, "@")
		list = append(list, templates.Recipient{Name: a.Name, Local: local, Domain: domain})
	}
	return list, "", true
}

// redactedMark starts every redacted value (engine.Redacted and its
// "[REDACTED: N characters]" forms): nothing of it is formatted.
const redactedMark = "[REDACTED"

// isIDName reports whether an argument names an identifier: shown
// demoted, to compare rather than to read.
func isIDName(name string) bool { return name == "id" || strings.HasSuffix(name, "_id") }

// moneyAmount reports whether an argument is an amount in minor units,
// and the currency argument beside it.
func moneyAmount(name string, args map[string]any) (string, bool) {
	if !strings.HasSuffix(name, "_cents") && !strings.HasSuffix(name, "_minor") {
		return "", false
	}
	c, ok := args["currency"].(string)
	return c, ok
}

// display is how one argument is shown: its format and trust. v is the
// value as the view holds it; a truncated or redacted value is shown as
// it is, never formatted from the part that is left.
func display(name string, v any, a templates.Arg, args map[string]any, trust engine.TrustLevel) templates.ArgDisplay {
	d := templates.ArgDisplay{}
	if trust != "" && !trust.MayAuthorize() {
		d.Trust = string(trust)
		d.Untrusted = untrusted(trust)
	}
	if a.Hidden > 0 {
		return d
	}
	s, isString := v.(string)
	switch {
	case !isString:
		if c, ok := moneyAmount(name, args); ok {
			if m, ok := money(v, c); ok {
				d.Format, d.Money = templates.FormatMoney, m
			}
		}
	case strings.HasPrefix(s, redactedMark):
	case looksLikeURL(name, s):
		if p, flag := urlParts(s); flag != "" {
			d.Flag = flag
		} else {
			d.Format, d.URL = templates.FormatURL, p
		}
	default:
		if list, flag, ok := recipients(name, s); ok {
			if flag != "" {
				d.Flag = flag
			} else {
				d.Format, d.Recipients = templates.FormatRecipients, list
			}
		} else if isIDName(name) {
			d.Format = templates.FormatID
		}
	}
	return d
}

// untrusted labels are the ones the card marks: content the agent read,
// remembered or retrieved, which a third party may have written.
func untrusted(t engine.TrustLevel) bool {
	return t == engine.TrustExternalUntrusted || t == engine.TrustMemory || t == engine.TrustKnowledge
}

// originBanner says, by the origin's kind, that the action was shaped by
// content that cannot authorize it; "" for an origin that may.
func originBanner(t engine.TrustLevel) string {
	switch t {
	case engine.TrustExternalUntrusted:
		return "This action was shaped by content from outside: a web page, an email or a file the agent read. Such content cannot authorize anything; read every value as if a stranger wrote it."
	case engine.TrustMemory:
		return "This action was shaped by the agent's memory, which content read earlier may have written. Memory cannot authorize anything; check every value."
	case engine.TrustKnowledge:
		return "This action was shaped by retrieved knowledge (documents the agent looked up). Retrieved content cannot authorize anything; check every value."
	case engine.TrustInternalTool:
		return "This action was shaped by another tool's output, not by the user. Tool output cannot authorize anything; check every value."
	}
	return ""
}

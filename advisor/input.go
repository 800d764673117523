package advisor

import (
	"encoding/json"
	"net/url"
	"regexp"
	"slices"
	"strings"

	"gatehouse/engine"
)

// maxStateBytes caps what the model is sent about one action. A state
// that does not fit escalates, like a value cut for length: the part left
// out cannot be judged.
const maxStateBytes = 4 << 10

// htmlComment is an HTML comment, or an unterminated one to the end: text
// a page or a model can hide from a human reader but not from the model.
var htmlComment = regexp.MustCompile(`(?s)<!--.*?(?:-->|$)`)

var xmlEscaper = strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;", `"`, "&quot;", "'", "&apos;")

// state is the user message: the tool name and the outbound arguments as
// an approver sees them (engine.RedactedView: sensitive keys and
// credential-shaped values masked, long strings cut), each URL split in
// code into host, path and query (user info and fragment dropped), HTML
// comments stripped, and every string XML-escaped inside an untrusted_input
// element of a named field, so no content can close its own delimiter.
// Nothing else of the action is sent: no identifier, scope, hash, trust
// label, and nothing of the policy. truncated reports a value cut for
// length or a state over maxStateBytes (then state is empty).
func state(a engine.ProposedAction) (msg string, truncated bool) {
	view, _ := engine.RedactedView(a.Arguments)
	keys := make([]string, 0, len(view))
	for k := range view {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	var b strings.Builder
	b.WriteString("<outbound_request>\n")
	field(&b, "tool", a.Name)
	for _, k := range keys {
		s, isString := view[k].(string)
		if !isString {
			// Redacted already; JSON is how a non-string reads.
			j, _ := json.Marshal(view[k])
			s = string(j)
		}
		if _, _, cut := engine.SplitTruncated(s); cut {
			truncated = true
		}
		if isString && slices.Contains(a.Roles.URLs, k) && !engine.IsRedactedMarker(s) {
			if host, path, query, ok := splitURL(s); ok {
				field(&b, k+".host", host)
				field(&b, k+".path", path)
				field(&b, k+".query", query)
				continue
			}
		}
		field(&b, "argument."+k, s)
	}
	b.WriteString("</outbound_request>")
	if b.Len() > maxStateBytes {
		return "", true
	}
	return b.String(), truncated
}

// field writes one named field holding an untrusted value.
func field(b *strings.Builder, name, value string) {
	b.WriteString(`<field name="`)
	b.WriteString(xmlEscaper.Replace(name))
	b.WriteString(`"><untrusted_input>`)
	b.WriteString(xmlEscaper.Replace(htmlComment.ReplaceAllString(value, "")))
	b.WriteString("</untrusted_input></field>\n")
}

// splitURL is a URL's host, decoded path and decoded query; ok is false
// for a string that is not an absolute URL with a host.
func splitURL(s string) (host, path, query string, ok bool) {
	u, err := url.Parse(strings.TrimSpace(s))
	if err != nil || u.Host == "" {
		return "", "", "", false
	}
	query = u.RawQuery
	if q, err := url.QueryUnescape(query); err == nil {
		query = q
	}
	return u.Host, u.Path, query, true
}

package engine

import (
	"bytes"
	"regexp"
	"strings"
)

// credentialShapes are the values that look like a live credential. The
// hardline credential rules and the approval view's redaction both use
// them, so what the gate refuses to send and what the console refuses to
// show can never drift apart.
//
// The set is kept by hand, modelled on the rule families of gitleaks'
// default configuration (aws-access-token, private-key, jwt, github-*,
// gitlab-*, npm-access-token, slack-*, discord-webhook, stripe-access-token,
// openai/anthropic-api-key, gcp-api-key, sendgrid-api-token,
// twilio-api-key, ...). gitleaks' own Go packages would bring in some 150
// packages of configuration, logging and terminal code; the engine stays
// free of them and of any I/O.
//
// The patterns carry no trailing word boundary: a prefix of a longer token
// must still count, or truncating a value could turn a non-match into a
// leak. Each shape has hints, literals one of which every match contains,
// so most text never reaches a regexp. Shapes marked compact are also
// sought in the text with spaces, dashes and invisible characters removed
// (AKIA IOSF ODNN 7EXA MPLE): only shapes with no such separators of their
// own, whose matches removal cannot create from honest text.
var credentialShapes = []credentialShape{
	// AWS access key ids, as issued.
	{hints: []string{"AKIA", "ASIA", "ABIA", "ACCA"}, re: `(?:AKIA|ASIA|ABIA|ACCA)[A-Z2-7]{16}`},
	// The same lower-cased or spaced out: one case throughout and a digit,
	// so "asiapacificheadquarters" stays a word.
	{hints: []string{"akia", "asia", "abia", "acca"}, fold: true, compact: true, re: `(?i:AKIA|ASIA|ABIA|ACCA)[A-Za-z2-7]{16}`, verify: awsKeyIDVariant},
	// An AWS secret access key assigned next to its name.
	{hints: []string{"aws", "secret"}, fold: true, re: `(?i:aws|secret)[A-Za-z0-9_ .-]{0,30}["']?\s*[:=]\s*["']?[A-Za-z0-9/+]{40}`, verify: mixedTail40},
	// PEM and PGP private keys, header in any case.
	{hints: []string{"private key"}, fold: true, re: `(?i)-----\s*BEGIN[ A-Z0-9]*PRIVATE KEY`},
	// JWTs, unsigned ones (empty third part) included.
	{hints: []string{"eyJ"}, re: `eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}\.`},
	{hints: []string{"ghp_", "gho_", "ghs_", "ghu_", "ghr_"}, compact: true, re: `gh[pousr]_[A-Za-z0-9]{20,}`},
	{hints: []string{"github_pat_"}, compact: true, re: `github_pat_[A-Za-z0-9_]{20,}`},
	{hints: []string{"glpat-", "gldt-", "glrt-", "glptt-", "glcbt-", "glimt-", "glft-", "glsoat-", "glagent-", "gloas-", "glffct-", "GR1348941"}, re: `(?:gl(?:pat|dt|rt|ptt|cbt|imt|ft|soat|agent|oas|ffct)-|GR1348941)[A-Za-z0-9_-]{20,}`},
	{hints: []string{"npm_"}, compact: true, re: `npm_[A-Za-z0-9]{36}`},
	{hints: []string{"xox", "xapp-"}, re: `xox[abposre]-[A-Za-z0-9-]{10,}|xapp-[0-9]-[A-Za-z0-9-]{10,}`},
	{hints: []string{"hooks.slack.com"}, fold: true, re: `(?i)hooks\.slack\.com/(?:services|workflows|triggers)/[A-Za-z0-9_/+-]{20,}`},
	{hints: []string{"/api/webhooks/"}, fold: true, re: `(?i)discord(?:app)?\.com/api/webhooks/[0-9]{5,}/[A-Za-z0-9_-]{20,}`},
	{hints: []string{"_live_", "_test_", "_prod_"}, compact: true, re: `(?:sk|rk)_(?:live|test|prod)_[A-Za-z0-9]{10,}`},
	// OpenAI (sk-, sk-proj-) and Anthropic (sk-ant-) keys; \b keeps
	// "task-list-..." a word.
	{hints: []string{"sk-"}, re: `\bsk-[A-Za-z0-9_-]{20,}`},
	{hints: []string{"AIza"}, re: `AIza[0-9A-Za-z_-]{35}`},
	{hints: []string{"SG."}, re: `SG\.[A-Za-z0-9_-]{16,}\.[A-Za-z0-9_-]{16,}`},
	{hints: []string{"SK"}, re: `\bSK[0-9a-fA-F]{32}`}, // Twilio API key
	// HTTP Basic: base64 of user:password after "Basic".
	{hints: []string{"basic"}, fold: true, re: `(?i)\bbasic\s+[A-Za-z0-9+/]{6,}={0,2}`, verify: basicUserPass},
	{hints: []string{"bearer"}, fold: true, re: `(?i)bearer\s+[A-Za-z0-9._~+/=-]{20,}`},
	// A password in a URL: scheme://user:password@.
	{hints: []string{"@"}, re: `[A-Za-z][A-Za-z0-9+.-]*://[^/\s:@]*:[^/\s@]+@`},
	// Gatehouse's own tokens: gatehouse_ and 46 letters and digits.
	{hints: []string{"gatehouse_"}, compact: true, re: `gatehouse_[A-Za-z0-9]{20,}`},
}

type credentialShape struct {
	hints   []string
	fold    bool // hints compared ignoring ASCII case (hints in lower case)
	compact bool
	re      string
	verify  func(match string) bool // optional: a match counts only if verify holds
}

// compiledShape is a credentialShape ready to match.
type compiledShape struct {
	hints   [][]byte
	fold    bool
	compact bool
	re      *regexp.Regexp
	verify  func(string) bool
}

var compiledShapes = func() []compiledShape {
	out := make([]compiledShape, len(credentialShapes))
	for i, s := range credentialShapes {
		c := compiledShape{fold: s.fold, compact: s.compact, re: regexp.MustCompile(s.re), verify: s.verify}
		for _, h := range s.hints {
			c.hints = append(c.hints, []byte(h))
		}
		out[i] = c
	}
	return out
}()

// ContainsCredential reports whether s contains a credential-shaped value,
// in any of the readings credentialInStrings makes of one string.
func ContainsCredential(s string) bool {
	var stack [scanStack]byte
	return scanString(stack[:0], s)
}

// awsKeyIDVariant accepts a key id written in one case throughout and
// holding a digit, as issued ids almost always do.
func awsKeyIDVariant(m string) bool {
	return (m == strings.ToLower(m) || m == strings.ToUpper(m)) && strings.ContainsAny(m[4:], "234567")
}

// mixedTail40 accepts an assignment whose 40-character value mixes upper
// case, lower case and digits, as a random secret does and a path or a
// word does not.
func mixedTail40(m string) bool {
	v := m[len(m)-40:]
	return strings.ContainsAny(v, "ABCDEFGHIJKLMNOPQRSTUVWXYZ") && strings.ContainsAny(v, "abcdefghijklmnopqrstuvwxyz") && strings.ContainsAny(v, "0123456789")
}

// basicUserPass accepts "Basic <token>" when the token decodes to
// printable user:password.
func basicUserPass(m string) bool {
	tok := strings.TrimRight(m[strings.LastIndexAny(m, " \t\r\n")+1:], "=")
	var out [96]byte
	d := appendBase64Decoded(out[:0], []byte(tok))
	return len(d) >= 3 && printable(d) && bytes.IndexByte(d, ':') > 0
}

// hinted reports whether s contains one of hints (lower case, compared
// ignoring ASCII case, when fold).
func hinted(s string, hints []string, fold bool) bool {
	for _, h := range hints {
		if fold && containsFold(s, h) || !fold && strings.Contains(s, h) {
			return true
		}
	}
	return false
}

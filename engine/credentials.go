package engine

import (
	"regexp"
	"strings"
)

// credentialShapes are the values that look like a live credential. The
// hardline credential_egress rule and the approval view's redaction both use
// them, so what the gate refuses to send and what the console refuses to
// show can never drift apart. The patterns carry no trailing word boundary:
// a prefix of a longer token must still count, or truncating a value could
// turn a non-match into a leak. Each shape has hints, literals one of which
// every match contains, so most strings never reach a regexp.
var credentialShapes = []struct {
	hints []string
	fold  bool // hints compared ignoring ASCII case (hints in lower case)
	re    *regexp.Regexp
}{
	{[]string{"AKIA", "ASIA"}, false, regexp.MustCompile(`(?:AKIA|ASIA)[0-9A-Z]{16}`)},                          // AWS access key id
	{[]string{"PRIVATE KEY-----"}, false, regexp.MustCompile(`-----BEGIN[A-Z0-9 ]*PRIVATE KEY-----`)},           // PEM private key
	{[]string{"ghp_", "gho_", "ghs_", "ghu_", "ghr_"}, false, regexp.MustCompile(`gh[posur]_[A-Za-z0-9]{20,}`)}, // GitHub tokens
	{[]string{"github_pat_"}, false, regexp.MustCompile(`github_pat_[A-Za-z0-9_]{20,}`)},                        // GitHub fine-grained
	{[]string{"xox"}, false, regexp.MustCompile(`xox[abposr]-[A-Za-z0-9-]{10,}`)},                               // Slack
	{[]string{"_live_"}, false, regexp.MustCompile(`(?:sk|rk)_live_[A-Za-z0-9]{16,}`)},                          // Stripe
	{[]string{"sk-"}, false, regexp.MustCompile(`sk-[A-Za-z0-9_-]{20,}`)},                                       // OpenAI-like keys
	{[]string{"eyJ"}, false, regexp.MustCompile(`eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}`)},  // JWT
	{[]string{"bearer"}, true, regexp.MustCompile(`(?i:bearer)\s+[A-Za-z0-9._~+/=-]{20,}`)},                     // bearer value
	{[]string{"AIza"}, false, regexp.MustCompile(`AIza[0-9A-Za-z_-]{35}`)},                                      // Google API key
	{[]string{"@"}, false, regexp.MustCompile(`[A-Za-z][A-Za-z0-9+.-]*://[^/\s:@]*:[^/\s@]+@`)},                 // password in URL
}

// ContainsCredential reports whether s contains a credential-shaped value.
func ContainsCredential(s string) bool {
	// Every shape is at least 15 bytes.
	if len(s) < 15 {
		return false
	}
	for _, shape := range credentialShapes {
		if hinted(s, shape.hints, shape.fold) && shape.re.MatchString(s) {
			return true
		}
	}
	return false
}

func hinted(s string, hints []string, fold bool) bool {
	for _, h := range hints {
		if fold && containsFold(s, h) || !fold && strings.Contains(s, h) {
			return true
		}
	}
	return false
}

package engine

import (
	"fmt"
	"strings"
	"testing"
)

// metadataPattern is rules/hardline.yaml's metadata_egress pattern.
const metadataPattern = "169.254.0.0/16, fe80::/10, fd00:ec2::254, metadata.google.internal, metadata.goog, metadata"

func metadataRule(t testing.TB) *compiledHardline {
	t.Helper()
	h, err := compileHardline(HardlineRule{ID: "metadata_egress", Kind: HardlineEgressHost, Pattern: metadataPattern})
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// TestEgressReadsURLsAsABrowser: every string a browser, inet_aton or a
// resolver takes to the metadata service is blocked; strings that merely
// mention it are not.
func TestEgressReadsURLsAsABrowser(t *testing.T) {
	t.Parallel()
	h := metadataRule(t)
	blocked := map[string]string{
		"plain":                    "http://169.254.169.254/latest/meta-data/",
		"hex dotless":              "http://0x0000000000a9fea9fe/",
		"octal, long zero runs":    "0000000000251.0376.0251.0376",
		"octal URL":                "http://0251.0376.0251.0376/",
		"decimal dotless":          "http://2852039166/",
		"short form":               "http://169.254.43518/",
		"tab inside the host":      "http://169.254.\t169.254/",
		"newline inside the host":  "curl http://169.2\n54.169.254/x",
		"backslashes":              `http:\\169.254.169.254\`,
		"missing slashes":          "http:169.254.169.254/",
		"one slash":                "http:/169.254.169.254/",
		"three slashes":            "http:///169.254.169.254/",
		"userinfo":                 "http://user@169.254.169.254/",
		"userinfo with password":   "https://u:p@169.254.169.254:8080/",
		"fullwidth digits":         "http://１６９．２５４．１６９．２５４/",
		"fullwidth scheme too":     "ｈｔｔｐ：／／１６９．２５４．１６９．２５４／",
		"ideographic dots":         "http://169。254。169。254/",
		"soft hyphen":              "http://169.254.169\u00ad.254/",
		"zero-width space":         "http://169.254.\u200b169.254/",
		"trailing dot":             "http://169.254.169.254./",
		"percent-encoded host":     "http://%31%36%39.254.169.254/",
		"nested in a query":        "https://example.com/?u=http%3A%2F%2F169.254.169.254%2F",
		"doubly encoded":           "https://example.com/?u=http%253A%252F%252F169.254.169.254",
		"flag value":               "--url=http://169.254.169.254",
		"curl command":             "curl -s http://169.254.169.254/latest/meta-data/iam/",
		"bare host":                "169.254.169.254",
		"host:port":                "169.254.169.254:80",
		"scheme-relative":          "//169.254.169.254/",
		"IPv6 link-local":          "http://[fe80::1]/",
		"IPv6 link-local bare":     "fe80::a9fe:a9fe",
		"AWS IPv6 endpoint":        "http://[fd00:ec2::254]/latest",
		"IPv4-mapped":              "http://[::ffff:169.254.169.254]/",
		"IPv4-mapped hex":          "http://[::ffff:a9fe:a9fe]/",
		"IPv4-compatible":          "http://[::a9fe:a9fe]/",
		"SIIT":                     "http://[::ffff:0:a9fe:a9fe]/",
		"NAT64":                    "http://[64:ff9b::a9fe:a9fe]/",
		"NAT64 local use /96":      "http://[64:ff9b:1::a9fe:a9fe]/",
		"NAT64 local use /48":      "http://[64:ff9b:1:a9fe:a9:fe00::]/",
		"6to4":                     "http://[2002:a9fe:a9fe::1]/",
		"Teredo":                   "http://[2001:0:4136:e378:8000:63bf:5601:5601]/",
		"GCE name":                 "http://metadata.google.internal/computeMetadata/v1/",
		"GCE name any case":        "http://Metadata.Google.Internal./",
		"fullwidth GCE name":       "http://ｍｅｔａｄａｔａ．ｇｏｏｇｌｅ．ｉｎｔｅｒｎａｌ/",
		"GCE name, soft hyphen":    "http://meta\u00addata.google.internal/",
		"GCE name bare":            "metadata.google.internal",
		"metadata.goog":            "https://metadata.goog/",
		"single label as URL host": "http://metadata/computeMetadata/v1/",
		"single label host:port":   "metadata:80",
		"single label, backslash":  `http:\\metadata\x`,
		"ws scheme":                "ws://169.254.169.254/",
		"unknown scheme":           "gopher://169.254.169.254:70/",
		"in a JSON-ish body":       `{"u":"http://169.254.169.254"}`,
	}
	for name, s := range blocked {
		if !h.matchEgress(s) {
			t.Errorf("%s: %q is not blocked", name, s)
		}
	}
	allowed := map[string]string{
		"address in the path":           "https://example.com/docs/169.254.169.254",
		"address in the query":          "https://example.com/search?q=169.254.169.254x",
		"name in the path":              "https://example.com/metadata.google.internal.html",
		"single label as a word":        "send the metadata to the team",
		"single label in a path":        "see docs/metadata for details",
		"ordinary URL":                  "https://api.example.com:8443/v1/items?id=7",
		"other link-local neighbour":    "http://169.255.0.1/",
		"a public address":              "http://8.8.8.8/",
		"phone number":                  "+15551234567",
		"time of day":                   "meet at 10:30, ok?",
		"a version":                     "upgrade to v1.2.3",
		"too many IPv4 parts":           "http://169.254.169.254.1/",
		"IPv6 outside the ranges":       "http://[2001:db8::1]/",
		"metadata as a subdomain label": "http://metadata.example.com/",
	}
	for name, s := range allowed {
		if h.matchEgress(s) {
			t.Errorf("%s: %q is blocked", name, s)
		}
	}
}

// TestPlainEgressAgreesWithWHATWG holds the allocation-free reader to the
// parser: on every token it accepts, its decision is the parser's.
func TestPlainEgressAgreesWithWHATWG(t *testing.T) {
	t.Parallel()
	h := metadataRule(t)
	for _, tok := range plainSeeds {
		checkPlainAgrees(t, h, tok)
	}
}

var plainSeeds = []string{
	"https://example.com/x", "example.com", "http://metadata", "metadata", "Note:", "http://METADATA.goog.",
	"//metadata.goog", "there!", "a..b", "x.y.", "http://a_b*c~d$e!f/", "ftp://host:21", "metadata.goog:443",
	"hello", "v1.2", "0x", "http://xn--nxasmq6b/", "https://example.com#frag", "a.0x.b", "http://host:/",
	"+15551234567", "+2852039166", "http://0x0000000000a9fea9fe/", "0000000000251.0376.0251.0376", "169.254.43518",
	"1.2.3.4.5", "0x.0x.0x.0x", "09.1", "1.2.", "http://169.254.169.254:80/", "3pm", "web-01", "99999999999999999999999",
}

func checkPlainAgrees(t *testing.T, h *compiledHardline, tok string) {
	t.Helper()
	fast, decided := h.plainEgress(tok)
	if !decided {
		return
	}
	if full := h.matchURLToken(tok); fast != full {
		t.Fatalf("%q: plain reader says %v, WHATWG reading says %v", tok, fast, full)
	}
}

// FuzzEgressHost: the reader never panics, stays linear on large input, and
// its allocation-free path agrees with the WHATWG parser.
func FuzzEgressHost(f *testing.F) {
	for _, s := range plainSeeds {
		f.Add(s)
	}
	for _, s := range []string{"http://0x0000000000a9fea9fe/", "http:\\\\169.254.169.254\\", "http://[::ffff:a9fe:a9fe]/", "http://[2001:db8::a9fe:a9fe]:80/x", "https://[64:ff9b::169.254.169.254]", "http://[fe80::1]?q", "http://[::a9fe:a9fe]#f", "ｈｔｔｐ：／／１６９．２５４．１６９．２５４／", "https://example.com/?u=http%253A%252F%252F169.254.169.254"} {
		f.Add(s)
	}
	h := metadataRule(f)
	f.Fuzz(func(t *testing.T, s string) {
		h.matchEgress(s)
		start := 0
		for i := 0; i <= len(s); i++ {
			if i == len(s) || tokenBreak[s[i]] {
				if i > start {
					checkPlainAgrees(t, h, s[start:i])
				}
				start = i + 1
			}
		}
	})
}

// BenchmarkEgressLargeInput reads a megabyte of tokens that all need the
// full parser (one op per shape; run with -benchtime 1x): the cost of a
// hostile body, measured rather than bounded by a wall-clock test.
func BenchmarkEgressLargeInput(b *testing.B) {
	h := metadataRule(b)
	for _, unit := range []string{"1:2 ", "http:\\\\x%41\t", "１．", strings.Repeat("0", 64) + "."} {
		s := strings.Repeat(unit, (1<<20)/len(unit))
		b.Run(fmt.Sprintf("%.8q", unit), func(b *testing.B) {
			for b.Loop() {
				h.matchEgress(s)
			}
		})
	}
}

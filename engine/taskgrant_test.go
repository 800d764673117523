package engine

import "testing"

func TestRequiresApprovalByClassOnlyForTheClassLayers(t *testing.T) {
	t.Parallel()
	class := PolicyDecision{Decision: DecisionRequireApproval, Layer: LayerMatrix, ReasonCode: MatrixReason(SideEffectExternalWrite)}
	advisory := ApplyAdvice(PolicyDecision{Decision: DecisionAllow, Layer: LayerMatrix}, AdvisoryVerdict{Verdict: AdvisoryRequireApproval})
	cases := []struct {
		name string
		d    PolicyDecision
		want bool
	}{
		{"matrix row", class, true},
		{"tool rule", PolicyDecision{Decision: DecisionRequireApproval, Layer: LayerToolRule}, true},
		{"advisory escalation", advisory, false},
		{"trust escalation", PolicyDecision{Decision: DecisionRequireApproval, Layer: LayerTrust, ReasonCode: ReasonTrustEscalated}, false},
		{"revalidation", PolicyDecision{Decision: DecisionRequireApproval, Layer: LayerRevalidate}, false},
		{"hardline", PolicyDecision{Decision: DecisionDeny, Layer: LayerHardline}, false},
		{"matrix deny", PolicyDecision{Decision: DecisionDeny, Layer: LayerMatrix}, false},
		{"allow", PolicyDecision{Decision: DecisionAllow, Layer: LayerMatrix}, false},
	}
	for _, tc := range cases {
		if got := RequiresApprovalByClass(tc.d); got != tc.want {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestPathInPrefixStopsAtASegment(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		path, prefix string
		want         bool
	}{
		{"/cart", "/cart", true}, {"/cart/2", "/cart", true}, {"/cartel", "/cart", false},
		{"/cart/2", "/cart/", true}, {"/cart", "/cart/", false}, {"/x", "/", true}, {"/Cart/2", "/cart", false},
	} {
		if got := PathInPrefix(tc.path, tc.prefix); got != tc.want {
			t.Errorf("PathInPrefix(%q, %q) = %v", tc.path, tc.prefix, got)
		}
	}
}

func TestGrantSitesRefuseWhatIsNotASerializedOrigin(t *testing.T) {
	t.Parallel()
	for _, sc := range []SiteScope{
		{Origin: "https://Shop.example", PathPrefix: "/"},
		{Origin: "https://shop.example/", PathPrefix: "/"},
		{Origin: "https://shop.example:443", PathPrefix: "/"},
		{Origin: "https://shop.example/cart", PathPrefix: "/"},
		{Origin: "ftp://shop.example", PathPrefix: "/"},
		{Origin: "https://u@shop.example", PathPrefix: "/"},
		{Origin: "https://shop.example", PathPrefix: "cart"},
		{Origin: "https://shop.example", PathPrefix: "/a/../b"},
		{Origin: "https://shop.example", PathPrefix: "/a?b"},
		{Origin: "https://shop.example", PathPrefix: ""},
	} {
		if _, err := NewGrantSites(map[string][]SiteScope{"t": {sc}}); err == nil {
			t.Errorf("%+v accepted", sc)
		}
	}
	if _, err := NewGrantSites(map[string][]SiteScope{"t": {{Origin: "https://shop.example", PathPrefix: "/"}, {Origin: "https://shop.example", PathPrefix: "/"}}}); err == nil {
		t.Error("a repeated scope accepted")
	}
	g, err := NewGrantSites(map[string][]SiteScope{"t": {{Origin: "http://127.0.0.1:8081", PathPrefix: "/shop/"}}})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := g.Offer("t", "http://127.0.0.1:8081/shop/a"); !ok {
		t.Error("no offer for a covered URL")
	}
}

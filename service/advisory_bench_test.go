package service

import (
	"testing"
	"time"

	"gatehouse/advisor"
	"gatehouse/advisor/advisortest"
	"gatehouse/engine"
)

// BenchmarkProposeAdvisory: one allowed proposal at a time, with the
// advisory layer off, observing and enforcing a judgment advisor whose
// chat-completions server answers after 50 ms (nothing fires, so every
// proposal stays allowed). action=write is a workspace write the layer
// never consults: its cost must not move with the layer; action=web_read
// is a search it consults, which pays the model's latency and the
// rolled-back lookup before it.
//
//	go test -run '^$' -bench ProposeAdvisory -count 6 ./service/ | benchstat -col /layer -
func BenchmarkProposeAdvisory(b *testing.B) {
	model := advisortest.New(advisortest.Reply{Delay: 50 * time.Millisecond, Content: advisortest.Probabilities(0, 0, 0).Content})
	defer model.Close()
	for _, act := range []struct {
		name string
		req  func() engine.ActionRequest
	}{
		{"write", func() engine.ActionRequest {
			return action("workspace.write_text", map[string]any{"path": "a.txt", "text": "x"})
		}},
		{"web_read", func() engine.ActionRequest { return search("weather in Lisbon") }},
	} {
		for _, layer := range []struct {
			name             string
			enforce, observe bool
			advisor          bool
		}{{"off", false, false, false}, {"observing", false, true, true}, {"enforcing", true, false, true}} {
			b.Run("action="+act.name+"/layer="+layer.name, func(b *testing.B) {
				bb := setup(b)
				cfg := Config{Pool: bb.pool, Policy: testSet(b, map[string]*engine.LoadedRuleset{"default": advisoryRuleset(b, layer.enforce, nil)}, testCatalog(b)),
					Principals: bb.dir, Now: bb.clock.Now, ReplicaID: "bench", SkipProfileAudit: true, AdvisoryObserve: layer.observe}
				if layer.advisor {
					j, err := advisor.New(advisor.Config{BaseURL: model.BaseURL(), Model: "bench", Timeout: 2 * time.Second})
					if err != nil {
						b.Fatal(err)
					}
					cfg.Advisor = j
				}
				svc, err := New(bb.ctx, cfg)
				if err != nil {
					b.Fatal(err)
				}
				bb.svc = svc
				c := bb.started()
				b.ReportAllocs()
				for b.Loop() {
					res, err := svc.Propose(bb.ctx, bb.owner, c.run.ID, c.lease, act.req())
					if err != nil || res.Decision != engine.DecisionAllow {
						b.Fatalf("propose: %v %v", res.Decision, err)
					}
				}
			})
		}
	}
}

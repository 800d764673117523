package notify

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"
)

// ntfyServer is an ntfy-shaped server: JSON publishing at the root, an
// access token, and the published message's id in the answer.
func ntfyServer(t *testing.T) (*httptest.Server, chan ntfyMessage) {
	t.Helper()
	got := make(chan ntfyMessage, 4)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer tk_testtoken" {
			http.Error(w, `{"code":40101,"http":401,"error":"unauthorized"}`, http.StatusUnauthorized)
			return
		}
		if r.Method != http.MethodPost || r.URL.Path != "/" || r.Header.Get("Content-Type") != "application/json" {
			http.Error(w, `{"code":40001,"http":400,"error":"invalid request"}`, http.StatusBadRequest)
			return
		}
		var m ntfyMessage
		dec := json.NewDecoder(r.Body)
		dec.DisallowUnknownFields()
		if err := dec.Decode(&m); err != nil {
			http.Error(w, `{"error":"invalid JSON"}`, http.StatusBadRequest)
			return
		}
		got <- m
		_ = json.NewEncoder(w).Encode(map[string]any{"id": "hwQ2YpKdmg", "event": "message", "topic": m.Topic})
	}))
	t.Cleanup(srv.Close)
	return srv, got
}

func ntfyChannel(t *testing.T, url, tokenEnv string) Channel {
	return channel(t, `
channels:
  - name: phones
    type: ntfy
    url: `+url+`
    topic: gatehouse-approvals
    token_env: `+tokenEnv+"\n", BuildOptions{})
}

func TestNtfyPublishesTitlePriorityByRiskAndTheClickLink(t *testing.T) {
	t.Parallel()
	srv, got := ntfyServer(t)
	ch := ntfyChannel(t, srv.URL, "NTFY_TOKEN")
	for risk, prio := range map[string]int{"critical": 5, "high": 4, "medium": 3, "low": 2} {
		d := requested()
		d.Risk = risk
		res, err := deliver(t, ch, d)
		if err != nil || res.Ref != "hwQ2YpKdmg" || res.Status != http.StatusOK {
			t.Fatalf("%s: %v, %+v", risk, err, res)
		}
		m := <-got
		if m.Topic != "gatehouse-approvals" || m.Title != "Approval needed: email.send" || m.Priority != prio || m.Click != d.URL {
			t.Errorf("%s: %+v", risk, m)
		}
		mustContain(t, "message", m.Message, "Send the Q3 report", "Expires in 1h", "risk "+risk)
	}
}

func TestNtfyFollowUpSaysTheOutcomeQuietly(t *testing.T) {
	t.Parallel()
	srv, got := ntfyServer(t)
	if _, err := deliver(t, ntfyChannel(t, srv.URL, "NTFY_TOKEN"), resolved("hwQ2YpKdmg")); err != nil {
		t.Fatal(err)
	}
	m := <-got
	if m.Title != "Approved by bob: email.send" || m.Priority != 2 || m.Click == "" || m.Tags[0] != "white_check_mark" {
		t.Errorf("follow-up: %+v", m)
	}
	mustNotContain(t, "follow-up", m.Message, "Expires in")
}

func TestNtfyWithAWrongTokenGivesUp(t *testing.T) {
	t.Parallel()
	srv, _ := ntfyServer(t)
	_, err := deliver(t, ntfyChannel(t, srv.URL, "SLACK_BOT_TOKEN"), requested())
	if !IsPermanent(err) {
		t.Fatalf("want a permanent 401, got %v", err)
	}
	mustContain(t, "error", err.Error(), "401", "unauthorized")
}

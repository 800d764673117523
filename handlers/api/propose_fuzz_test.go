package api

import (
	"strings"
	"testing"

	"gatehouse/engine"
)

// FuzzReadableProposal: whatever the body, reading a refused proposal
// never panics, and what it returns can always be keyed (a uuid action_id)
// and holds no NUL, so the record never stores what the decoder refuses.
func FuzzReadableProposal(f *testing.F) {
	lease := `"worker_id":"w","fencing_token":1`
	for _, seed := range []string{
		`{` + lease + `,"action":{"action_id":"00000000-0000-4000-8000-000000000001","kind":"tool_call","name":"workspace.read_text","summary":"s","step_number":3000000000,"arguments":{"path":"a"},"argument_trust":{},"origin_trust":"user"}}`,
		`{` + lease + `,"action":{"action_id":"00000000-0000-4000-8000-000000000001","kind":7,"target":"sandbox","side_effect":"none","arguments":"rm -rf"}}`,
		`{` + lease + `,"action":{"action_id":"x","step_number":1.5}}`,
		`{` + lease + `,"action":{"action_id":"00000000-0000-4000-8000-000000000001","step_number":1,"step_number":2}}`,
		`{` + lease + `,"action":{"action_id":"00000000-0000-4000-8000-000000000001","summary":"a\u0000b","step_number":-1.5}}`,
		`{` + lease + `,"action":null}`,
		`{"worker_id":7,"action":{}}`,
		`{`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		in, ok := readableProposal(body)
		if !ok {
			return
		}
		if !engine.ValidUUID(in.Action.ActionID) {
			t.Fatalf("keyed on %q", in.Action.ActionID)
		}
		if strings.ContainsRune(in.Action.Summary, 0) || strings.ContainsRune(in.Action.Name, 0) || strings.ContainsRune(in.WorkerID, 0) {
			t.Fatalf("NUL got through: %+v", in)
		}
	})
}

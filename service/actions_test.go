package service

import (
	"testing"

	"gatehouse/engine"
)

// TestActionsThatAreNotToolCallsStayOutOfToolInvocations: a memory write
// and an artifact export are actions with their own state and approvals,
// and no row of tool_invocations, which lists only what a tool executes
// (seed: "ActionKind, and actions that are not tool calls").
func TestActionsThatAreNotToolCallsStayOutOfToolInvocations(t *testing.T) {
	t.Parallel()
	b := setup(t)
	c := b.started()
	call := b.propose(c, action("workspace.write_text", map[string]any{"path": "a.txt", "text": "x"}))
	export := action("artifact.export", map[string]any{"artifact_id": "a1", "destination": "drive://x"})
	export.Kind = engine.ActionArtifactExport
	parked := b.parked(c, export)

	count := func(sql string, args ...any) int {
		t.Helper()
		var n int
		if err := b.pool.QueryRow(b.ctx, sql, args...).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	mustEqual(t, "actions of the run", count(`SELECT count(*) FROM actions WHERE run_id = $1`, c.run.ID), 2)
	mustEqual(t, "tool invocations of the run", count(`SELECT count(*) FROM tool_invocations WHERE run_id = $1`, c.run.ID), 1)
	mustEqual(t, "the tool call is the tool invocation", count(`SELECT count(*) FROM tool_invocations WHERE id = $1`, call.InvocationID), 1)
	// The export's approval hangs off its action, with no tool invocation.
	mustEqual(t, "approval on the action", count(`SELECT count(*) FROM approvals ap JOIN actions a ON (a.run_id, a.action_id) = (ap.run_id, ap.action_id)
		WHERE ap.id = $1 AND a.id = $2 AND ap.tool_invocation_id IS NULL`, parked.ApprovalID, parked.InvocationID), 1)
}

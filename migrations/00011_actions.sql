-- Actions, not tool invocations, are the general case (seed: "ActionKind,
-- and actions that are not tool calls"). Every proposal of a run (a tool
-- call, a memory write, a skill edit, an artifact export) is a row of
-- actions, with its state machine; tool_invocations becomes the view of the
-- actions a tool executes, so a metric computed over it counts tool calls
-- and nothing no tool ran. Approvals hang off the action they gate by
-- (run_id, action_id); tool_invocation_id is set exactly for tool calls.
-- Existing rows move with the table.

-- +goose Up
ALTER TABLE tool_invocations RENAME TO actions;
ALTER TABLE actions RENAME CONSTRAINT tool_invocations_pkey TO actions_pkey;
ALTER TABLE actions RENAME CONSTRAINT tool_invocations_run_id_action_id_key TO actions_run_id_action_id_key;
ALTER TABLE actions RENAME CONSTRAINT tool_invocations_status_check TO actions_status_check;
ALTER TABLE actions RENAME CONSTRAINT tool_invocations_run_id_fkey TO actions_run_id_fkey;
ALTER INDEX tool_invocations_breaker_idx RENAME TO actions_breaker_idx;
ALTER TRIGGER tool_invocations_authorize_guard ON actions RENAME TO actions_authorize_guard;
ALTER FUNCTION tool_invocations_authorize_guard() RENAME TO actions_authorize_guard;

ALTER TABLE approvals
    ADD CONSTRAINT approvals_action_fkey FOREIGN KEY (run_id, action_id) REFERENCES actions (run_id, action_id),
    ADD CONSTRAINT approvals_tool_invocation_only_for_tool_calls
        CHECK ((action_kind = 'tool_call') = (tool_invocation_id IS NOT NULL));

CREATE VIEW tool_invocations AS
    SELECT * FROM actions WHERE kind = 'tool_call';

-- +goose Down
DROP VIEW tool_invocations;
ALTER TABLE approvals
    DROP CONSTRAINT approvals_tool_invocation_only_for_tool_calls,
    DROP CONSTRAINT approvals_action_fkey;
ALTER FUNCTION actions_authorize_guard() RENAME TO tool_invocations_authorize_guard;
ALTER TRIGGER actions_authorize_guard ON actions RENAME TO tool_invocations_authorize_guard;
ALTER INDEX actions_breaker_idx RENAME TO tool_invocations_breaker_idx;
ALTER TABLE actions RENAME CONSTRAINT actions_run_id_fkey TO tool_invocations_run_id_fkey;
ALTER TABLE actions RENAME CONSTRAINT actions_status_check TO tool_invocations_status_check;
ALTER TABLE actions RENAME CONSTRAINT actions_run_id_action_id_key TO tool_invocations_run_id_action_id_key;
ALTER TABLE actions RENAME CONSTRAINT actions_pkey TO tool_invocations_pkey;
ALTER TABLE actions RENAME TO tool_invocations;

-- What a reviewer decides from (issue 10): the approval carries the trust
-- labels the proposal came with and the engine's explanation, so every
-- card (queue, history, detail) shows which arguments came from content
-- that cannot authorize anything without reading the action row. The
-- labels were already stored in actions.action (the classified proposal);
-- existing approvals take them from there.
--
-- Two indexes serve the detail page's context: the identical requests
-- pending in the tenant (same tool and normalized arguments hash), and a
-- run's steps in proposal order, which the run page reads too.

-- +goose Up
ALTER TABLE approvals
    ADD COLUMN origin_trust       text  NOT NULL DEFAULT '',
    ADD COLUMN argument_trust     jsonb NOT NULL DEFAULT '{}',
    ADD COLUMN policy_explanation text  NOT NULL DEFAULT '';

UPDATE approvals ap
   SET origin_trust = x.origin_trust,
       argument_trust = COALESCE(x.action -> 'argument_trust', '{}'),
       policy_explanation = COALESCE(x.decision ->> 'explanation', '')
  FROM actions x
 WHERE (x.run_id, x.action_id) = (ap.run_id, ap.action_id);

-- jsonb null (a proposal without labels) reads as no labels.
UPDATE approvals SET argument_trust = '{}' WHERE jsonb_typeof(argument_trust) <> 'object';

CREATE INDEX approvals_pending_identical_idx
    ON approvals (tenant_id, tool_name, normalized_arguments_hash, created_at)
    WHERE status = 'pending';

CREATE INDEX actions_run_created_idx ON actions (run_id, created_at, id);

-- +goose Down
DROP INDEX actions_run_created_idx;
DROP INDEX approvals_pending_identical_idx;
ALTER TABLE approvals
    DROP COLUMN policy_explanation,
    DROP COLUMN argument_trust,
    DROP COLUMN origin_trust;

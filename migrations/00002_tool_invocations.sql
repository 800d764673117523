-- Tool invocations: one row per proposed action of a run, with the
-- classification and decision denormalized as they were at decision time
-- (seed "Schema additions": an audit needs what was true then, and crash
-- recovery dispatches on idempotency_class without the catalog).

-- +goose Up
CREATE TABLE tool_invocations (
    id                        uuid PRIMARY KEY,
    run_id                    uuid NOT NULL REFERENCES runs (id),
    tenant_id                 text NOT NULL,
    action_id                 uuid NOT NULL,
    kind                      text NOT NULL,
    tool_name                 text NOT NULL,
    tool_version              text NOT NULL DEFAULT '',
    summary                   text NOT NULL DEFAULT '',
    step_number               integer NOT NULL DEFAULT 0,
    status                    text NOT NULL CHECK (status IN
                                  ('PROPOSED', 'WAITING_FOR_APPROVAL', 'AUTHORIZED', 'DENIED',
                                   'SUCCEEDED', 'FAILED', 'UNCERTAIN', 'CANCELLED')),
    -- The normalized arguments; dispatch uses these, never a redacted view.
    arguments                 jsonb NOT NULL,
    normalized_arguments_hash text NOT NULL,
    effective_arguments       jsonb,
    effective_arguments_hash  text,
    -- The classified action as the engine saw it (trust labels, target,
    -- required scopes), without its arguments: revalidation re-evaluates it.
    action                    jsonb NOT NULL,
    decision                  jsonb NOT NULL,
    policy_version            text NOT NULL DEFAULT '',
    side_effect               text NOT NULL,
    risk                      text NOT NULL,
    idempotency_class         text NOT NULL,
    origin_trust              text NOT NULL,
    -- The reason code of the decision, or of the denial that ended it; the
    -- circuit breaker keys on (tool_name, normalized_arguments_hash, reason_code).
    reason_code               text NOT NULL DEFAULT '',
    approval_id               uuid,
    created_at                timestamptz NOT NULL,
    updated_at                timestamptz NOT NULL,
    -- Proposals are idempotent on (run_id, action_id).
    UNIQUE (run_id, action_id)
);

CREATE INDEX tool_invocations_breaker_idx
    ON tool_invocations (run_id, tool_name, normalized_arguments_hash, reason_code)
    WHERE status = 'DENIED';

-- +goose Down
DROP TABLE tool_invocations;

-- Approval requests (seed "Schema additions"). Statuses are the engine's
-- lower-case strings. Every transition out of 'pending' (resolve, reap,
-- cancel) is one UPDATE guarded by status = 'pending', so the loser of a race
-- changes nothing.

-- +goose Up
CREATE TABLE approvals (
    id                         uuid PRIMARY KEY,
    tenant_id                  text NOT NULL,
    principal_id               text NOT NULL,
    session_id                 uuid NOT NULL,
    run_id                     uuid NOT NULL REFERENCES runs (id),
    action_kind                text NOT NULL,
    action_id                  uuid NOT NULL,
    -- NULL for action kinds without a tool invocation behind them.
    tool_invocation_id         uuid REFERENCES tool_invocations (id),
    status                     text NOT NULL CHECK (status IN
                                   ('pending', 'approved', 'denied', 'expired', 'cancelled')),
    resolution                 text CHECK (resolution IN ('approve_once', 'approve_for_task', 'deny')),
    resolved_by                text,
    resolved_at                timestamptz,
    resolution_reason          text NOT NULL DEFAULT '',
    expires_at                 timestamptz NOT NULL,
    created_at                 timestamptz NOT NULL,
    action_summary             text NOT NULL DEFAULT '',
    tool_name                  text NOT NULL,
    side_effect                text NOT NULL,
    risk                       text NOT NULL,
    -- critical 3 .. low 0, so the queue is an index scan, not a sort.
    risk_rank                  smallint NOT NULL,
    arguments_view             jsonb NOT NULL,   -- redacted, truncated
    argument_digests           jsonb NOT NULL,   -- sha256 of truncated values
    policy_reason              text NOT NULL,
    policy_version             text NOT NULL,
    revalidated_policy_version text,
    normalized_arguments_hash  text NOT NULL,
    -- The run principal's scopes when the approval was requested; resume
    -- compares the current principal against these (scopes narrowed).
    requested_scopes           jsonb NOT NULL,
    agent_version              text NOT NULL,
    -- A final status always has a time; only a human decision has a resolution.
    CHECK ((status = 'pending') = (resolved_at IS NULL)),
    CHECK ((status IN ('approved', 'denied')) = (resolution IS NOT NULL))
);

-- One open approval per action.
CREATE UNIQUE INDEX approvals_action_id_key ON approvals (action_id);
-- Agent and history lists.
CREATE INDEX approvals_tenant_status_created_idx ON approvals (tenant_id, status, created_at);
CREATE INDEX approvals_tenant_resolved_idx ON approvals (tenant_id, resolved_at DESC, id DESC)
    WHERE status <> 'pending';
-- Resume and the cancellation reap.
CREATE INDEX approvals_run_idx ON approvals (run_id);
-- The reaper's only scan.
CREATE INDEX approvals_pending_expiry_idx ON approvals (status, expires_at)
    WHERE status = 'pending';
-- The queue: critical first, then oldest first, keyset-paginated.
CREATE INDEX approvals_queue_idx ON approvals (tenant_id, risk_rank DESC, created_at, id)
    WHERE status = 'pending';

-- +goose Down
DROP TABLE approvals;

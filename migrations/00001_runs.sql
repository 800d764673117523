-- Runs: the unit a worker claims. The lease (worker_id, lease_expires_at,
-- fencing_token) lives on the row so a claim is one guarded UPDATE, and the
-- fencing token only ever grows, so a worker that lost its lease cannot
-- write after the next claim.

-- +goose Up
CREATE TABLE runs (
    id               uuid PRIMARY KEY,
    tenant_id        text NOT NULL,
    principal_id     text NOT NULL,
    session_id       uuid NOT NULL,
    agent_id         text NOT NULL,
    agent_version    text NOT NULL,
    policy_profile   text NOT NULL,
    -- The submitting principal's scopes, stamped at submission and never
    -- re-derived (seed "Where a worker gets the scope set"). No default:
    -- a run without a stamp is a bug, not an unprivileged run.
    principal_scopes jsonb NOT NULL CHECK (jsonb_typeof(principal_scopes) = 'array'),
    status           text NOT NULL CHECK (status IN
                         ('QUEUED', 'RUNNING', 'WAITING_FOR_APPROVAL', 'COMPLETED', 'FAILED', 'CANCELLED')),
    failure_reason   text NOT NULL DEFAULT '',
    checkpoint       jsonb NOT NULL DEFAULT '{"pending_approval_ids": [], "step_number": 0}',
    deadline         timestamptz,
    worker_id        text NOT NULL DEFAULT '',
    lease_expires_at timestamptz,
    fencing_token    bigint NOT NULL DEFAULT 0,
    created_at       timestamptz NOT NULL,
    updated_at       timestamptz NOT NULL
);

-- The claim scans claimable runs of one tenant, oldest first.
CREATE INDEX runs_claimable_idx ON runs (tenant_id, created_at)
    WHERE status IN ('QUEUED', 'RUNNING');
CREATE INDEX runs_tenant_created_idx ON runs (tenant_id, created_at DESC);

-- +goose Down
DROP TABLE runs;

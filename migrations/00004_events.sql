-- The event log. id is the watermark clients poll from; every state change
-- writes its row in the same transaction as the change. NOTIFY on
-- gatehouse_events is only a latency hint.

-- +goose Up
CREATE TABLE events (
    id         bigserial PRIMARY KEY,
    -- '' is the system tenant (policy.profile.loaded).
    tenant_id  text NOT NULL,
    run_id     uuid,
    type       text NOT NULL,
    payload    jsonb NOT NULL DEFAULT '{}',
    created_at timestamptz NOT NULL,
    -- The writing transaction. Readers only return events whose transaction
    -- is older than every transaction still running, so a slow commit with
    -- a lower id is never skipped by a client that already saw a higher one.
    tx_id      xid8 NOT NULL DEFAULT pg_current_xact_id()
);

CREATE INDEX events_tenant_id_idx ON events (tenant_id, id);
CREATE INDEX events_run_id_idx ON events (run_id, id) WHERE run_id IS NOT NULL;
CREATE INDEX events_tenant_type_created_idx ON events (tenant_id, type, created_at);

-- +goose Down
DROP TABLE events;

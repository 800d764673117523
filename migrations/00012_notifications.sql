-- The notification outbox. A notifications row is written in the
-- transaction of the approval change that causes it (requested, resolved,
-- expired, cancelled, invalidated), or by the notifier's "expiring soon"
-- scan; one notification_deliveries row per routed channel carries the
-- delivery state, and every try is kept in notification_attempts. Delivery
-- happens after commit, outside the gate: the gate only inserts.

-- +goose Up
CREATE TABLE notifications (
    -- The idempotency id every channel's payload carries: stable across
    -- retries and replicas, so a receiver can drop a repeat.
    id          uuid PRIMARY KEY,
    tenant_id   text NOT NULL,
    -- NULL only for a console test-send.
    approval_id uuid REFERENCES approvals (id),
    kind        text NOT NULL CHECK (kind IN
                    ('requested', 'expiring', 'resolved', 'expired', 'cancelled', 'invalidated', 'test')),
    created_at  timestamptz NOT NULL,
    CHECK ((approval_id IS NULL) = (kind = 'test'))
);
-- One notification of a kind per approval: the expiring scan of two
-- replicas, or a retried transaction, cannot notify twice.
CREATE UNIQUE INDEX notifications_approval_kind_key ON notifications (approval_id, kind)
    WHERE approval_id IS NOT NULL;
CREATE INDEX notifications_tenant_created_idx ON notifications (tenant_id, created_at DESC, id);

CREATE TABLE notification_deliveries (
    id              bigserial PRIMARY KEY,
    notification_id uuid NOT NULL REFERENCES notifications (id),
    tenant_id       text NOT NULL,
    approval_id     uuid,
    channel         text NOT NULL,
    status          text NOT NULL DEFAULT 'pending' CHECK (status IN
                        ('pending', 'delivered', 'skipped', 'failed')),
    attempts        integer NOT NULL DEFAULT 0,
    next_attempt_at timestamptz NOT NULL,
    -- A claim is a lease: a replica that dies mid-delivery leaves a row
    -- another replica takes once claimed_until passes.
    claimed_by      text,
    claimed_until   timestamptz,
    -- The channel's handle on what it sent (a Slack message's channel:ts),
    -- so a later notification of the same approval updates it in place.
    ref             text NOT NULL DEFAULT '',
    last_error      text NOT NULL DEFAULT '',
    created_at      timestamptz NOT NULL,
    finished_at     timestamptz,
    UNIQUE (notification_id, channel)
);
CREATE INDEX notification_deliveries_due_idx ON notification_deliveries (next_attempt_at, id)
    WHERE status = 'pending';
-- Deliveries of one approval to one channel go out in order.
CREATE INDEX notification_deliveries_approval_idx ON notification_deliveries (approval_id, channel, id);

CREATE TABLE notification_attempts (
    delivery_id bigint NOT NULL REFERENCES notification_deliveries (id),
    attempt     integer NOT NULL,
    replica     text NOT NULL,
    started_at  timestamptz NOT NULL,
    latency_ms  double precision NOT NULL,
    http_status integer NOT NULL DEFAULT 0,
    outcome     text NOT NULL CHECK (outcome IN ('delivered', 'skipped', 'retry', 'failed')),
    error       text NOT NULL DEFAULT '',
    PRIMARY KEY (delivery_id, attempt)
);

-- +goose Down
DROP TABLE notification_attempts;
DROP TABLE notification_deliveries;
DROP TABLE notifications;

-- Web Push for the console. A push_subscriptions row is one browser's
-- subscription (its push-service endpoint and the keys the payload is
-- encrypted to) held by the approver who enabled notifications in it.
-- push_vapid_keys holds the one VAPID key pair the server signs pushes
-- with, so every replica signs with the same pair and a subscription made
-- through one replica is served by all.

-- +goose Up
CREATE TABLE push_subscriptions (
    id              uuid PRIMARY KEY,
    tenant_id       text NOT NULL,
    principal_id    text NOT NULL,
    -- The push service's URL for this browser: a capability, unique to the
    -- browser. Unique per tenant, not globally, so nothing one tenant sends
    -- can move or remove another tenant's row; within a tenant the browser
    -- belongs to whoever subscribed in it last.
    endpoint        text NOT NULL CHECK (length(endpoint) <= 2048),
    p256dh          text NOT NULL, -- base64url, 65-byte uncompressed P-256 point
    auth            text NOT NULL, -- base64url, 16-byte secret
    user_agent      text NOT NULL DEFAULT '' CHECK (length(user_agent) <= 200),
    created_at      timestamptz NOT NULL,
    last_success_at timestamptz,
    UNIQUE (tenant_id, endpoint)
);
CREATE INDEX push_subscriptions_principal_idx ON push_subscriptions (tenant_id, principal_id, created_at DESC);

CREATE TABLE push_vapid_keys (
    -- Always true: the table holds at most one row, and the replica that
    -- inserts first wins (INSERT ... ON CONFLICT DO NOTHING).
    singleton   boolean PRIMARY KEY DEFAULT true CHECK (singleton),
    public_key  text NOT NULL,
    private_key text NOT NULL,
    created_at  timestamptz NOT NULL
);

-- +goose Down
DROP TABLE push_vapid_keys;
DROP TABLE push_subscriptions;

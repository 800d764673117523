-- Console sign-in state. The cookie carries only a random session id; the
-- row behind it is what makes logout and "sign out everywhere" real. Rows
-- are keyed by the SHA-256 of the id so a read of this table yields no
-- usable cookie.

-- +goose Up
CREATE TABLE console_sessions (
    id_hash      text PRIMARY KEY,
    tenant_id    text NOT NULL,
    principal_id text NOT NULL,
    -- The form token of this session's POSTs (with Go's cross-origin check).
    csrf_token   text NOT NULL,
    created_at   timestamptz NOT NULL, -- 12 h absolute lifetime
    last_seen    timestamptz NOT NULL  -- 30 min idle lifetime
);

-- "Sign out everywhere" deletes by principal.
CREATE INDEX console_sessions_principal_idx ON console_sessions (tenant_id, principal_id);
CREATE INDEX console_sessions_last_seen_idx ON console_sessions (last_seen);

-- Failed sign-ins per account, counted over a sliding window to throttle
-- password guessing. The account is the id as typed (lower-cased), known or
-- not, so throttling does not reveal which ids exist.
CREATE TABLE console_login_failures (
    account   text NOT NULL,
    failed_at timestamptz NOT NULL
);

CREATE INDEX console_login_failures_account_idx ON console_login_failures (account, failed_at);
CREATE INDEX console_login_failures_failed_at_idx ON console_login_failures (failed_at);

-- +goose Down
DROP TABLE console_login_failures;
DROP TABLE console_sessions;

-- Step-up and single sign-on for the console (issue 13, items 1 and 2).
--
-- auth_time is when the human behind a session last proved who they are
-- (a password typed, or the identity provider's auth_time): approving a
-- critical action needs it within the step-up window, so a session left
-- open on a desk does not approve a payment. Existing sessions count from
-- their creation, which is when their password was typed.
--
-- console_oidc_logins holds each OpenID Connect sign-in between the
-- redirect to the identity provider and its return: the PKCE verifier and
-- the nonce never leave the server, and the row is deleted when the
-- callback uses it, so a state replayed is a state unknown. Keyed by the
-- state's SHA-256 like sessions by their id's.

-- +goose Up
ALTER TABLE console_sessions ADD COLUMN auth_time timestamptz;
UPDATE console_sessions SET auth_time = created_at;
ALTER TABLE console_sessions ALTER COLUMN auth_time SET NOT NULL;

CREATE TABLE console_oidc_logins (
    state_hash text PRIMARY KEY,
    nonce      text NOT NULL,
    verifier   text NOT NULL,
    next_path  text NOT NULL,
    -- step_up: the login re-authenticates (prompt=login, max_age), so the
    -- identity provider's auth_time must fall inside the window.
    step_up    boolean NOT NULL,
    created_at timestamptz NOT NULL
);

CREATE INDEX console_oidc_logins_created_at_idx ON console_oidc_logins (created_at);

-- +goose Down
DROP TABLE console_oidc_logins;
ALTER TABLE console_sessions DROP COLUMN auth_time;

-- Loaded rulesets, for audit only: the rules themselves are files, frozen at
-- load and hashed into policy_version (seed "Schema additions").

-- +goose Up
CREATE TABLE policy_profiles (
    policy_version  text PRIMARY KEY,  -- name@sha+hsha
    profile_name    text NOT NULL,
    profile_sha256  text NOT NULL,
    hardline_sha256 text NOT NULL,
    rule_count      integer NOT NULL,
    loaded_at       timestamptz NOT NULL,
    loaded_by       text NOT NULL      -- replica id
);

-- +goose Down
DROP TABLE policy_profiles;

-- Exact single-action owner consent (ADR-0095, ADR-0172 in a general form,
-- issue 12). An authenticated human records, ahead of time, consent to one
-- exact action of one session: the tool and the normalized arguments hash,
-- for at most thirty minutes. When that session's agent proposes exactly
-- that action and policy asks for approval, one guarded update consumes the
-- consent (consumed_at was null, not expired) and the approval it would
-- have waited for is resolved approve_once by the consenting human in the
-- proposing transaction: no card, and the invocation still resumes through
-- revalidation. via_console records that a signed-in human recorded it,
-- so it may consent to a session its own token works.

-- +goose Up
CREATE TABLE owner_consents (
    id                        uuid PRIMARY KEY,
    tenant_id                 text NOT NULL,
    session_id                uuid NOT NULL,
    tool_name                 text NOT NULL,
    normalized_arguments_hash text NOT NULL CHECK (normalized_arguments_hash ~ '^[0-9a-f]{64}$'),
    created_by                text NOT NULL,
    via_console               boolean NOT NULL,
    created_at                timestamptz NOT NULL,
    expires_at                timestamptz NOT NULL,
    consumed_at               timestamptz,
    approval_id               uuid REFERENCES approvals (id),
    CONSTRAINT owner_consents_window CHECK (expires_at > created_at AND expires_at <= created_at + interval '30 minutes'),
    CONSTRAINT owner_consents_consumed CHECK ((consumed_at IS NULL) = (approval_id IS NULL))
);

CREATE INDEX owner_consents_match_idx ON owner_consents (tenant_id, session_id, tool_name, normalized_arguments_hash)
    WHERE consumed_at IS NULL;

-- +goose Down
DROP TABLE owner_consents;

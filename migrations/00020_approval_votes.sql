-- Reviewer quorum (issue 13): a profile may require several distinct
-- principals to approve an action of a risk (approvals.quorum). The
-- approval records the quorum of the profile that requested it, so a card
-- and the API say "1 of 2" without the profile, and every vote is a row:
-- one per principal and approval, so a repeated vote by the same principal
-- is found by the primary key (counted once, or a conflict when it
-- differs). The approval stays pending until the approve votes reach its
-- quorum; then the usual guarded update approves it, once. A deny needs
-- no quorum and is recorded here too.

-- +goose Up
ALTER TABLE approvals
    ADD COLUMN quorum smallint NOT NULL DEFAULT 1 CHECK (quorum BETWEEN 1 AND 10);

CREATE TABLE approval_votes (
    approval_id  uuid NOT NULL REFERENCES approvals (id) ON DELETE CASCADE,
    principal_id text NOT NULL,
    resolution   text NOT NULL CHECK (resolution IN ('approve_once', 'approve_for_task', 'deny')),
    reason       text NOT NULL DEFAULT '',
    voted_at     timestamptz NOT NULL,
    PRIMARY KEY (approval_id, principal_id)
);

-- +goose Down
DROP TABLE approval_votes;
ALTER TABLE approvals DROP COLUMN quorum;

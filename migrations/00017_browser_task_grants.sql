-- Browser task grants (ADR-0129, issue 12). A browser.act approval whose
-- target falls in an operator-configured site scope carries a
-- server-authored offer (origin, path prefix); resolving it with
-- approve_for_task creates, in the resolving transaction, one grant bound to
-- the run's session: thirty minutes, two hundred actions. A later browser.act
-- of the session that needs approval only because of its class, on that
-- origin and under that prefix, is authorized by the grant, each use counted
-- against the budget by one guarded update (uses < budget, not expired, not
-- revoked), so concurrent uses never overspend it.
--
-- The approval keeps the offer it was shown with (task_grant_offer, null for
-- none) and, when a grant did not cover it, why (task_grant_not_covered:
-- origin, prefix, expired, exhausted). An invocation a grant authorized
-- names it (actions.task_grant_id).

-- +goose Up
CREATE TABLE browser_task_grants (
    id          uuid PRIMARY KEY,
    tenant_id   text NOT NULL,
    session_id  uuid NOT NULL,
    run_id      uuid NOT NULL REFERENCES runs (id),
    approval_id uuid NOT NULL UNIQUE REFERENCES approvals (id),
    origin      text NOT NULL,
    path_prefix text NOT NULL CHECK (path_prefix LIKE '/%'),
    budget      int  NOT NULL CHECK (budget > 0),
    uses        int  NOT NULL DEFAULT 0,
    created_by  text NOT NULL,
    created_at  timestamptz NOT NULL,
    expires_at  timestamptz NOT NULL CHECK (expires_at > created_at),
    revoked_at  timestamptz,
    revoked_by  text,
    CONSTRAINT browser_task_grants_budget CHECK (uses BETWEEN 0 AND budget),
    CONSTRAINT browser_task_grants_revoked CHECK ((revoked_at IS NULL) = (revoked_by IS NULL))
);

CREATE INDEX browser_task_grants_session_idx ON browser_task_grants (tenant_id, session_id, created_at);

-- A session's grants are listed only when the session is the tenant's:
-- another tenant's session is not found, whether or not it has grants.
CREATE INDEX runs_tenant_session_idx ON runs (tenant_id, session_id);

ALTER TABLE approvals
    ADD COLUMN task_grant_offer       jsonb,
    ADD COLUMN task_grant_not_covered text NOT NULL DEFAULT '';

ALTER TABLE actions ADD COLUMN task_grant_id uuid REFERENCES browser_task_grants (id);

-- +goose Down
ALTER TABLE actions DROP COLUMN task_grant_id;
ALTER TABLE approvals
    DROP COLUMN task_grant_not_covered,
    DROP COLUMN task_grant_offer;
DROP INDEX runs_tenant_session_idx;
DROP TABLE browser_task_grants;

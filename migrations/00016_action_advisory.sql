-- The advisory layer (issue 11, seed §3): what the advisor said about an
-- action it was consulted on — verdict, signal identifiers, advisor
-- version, abstention cause, whether it was enforced — in one column of the
-- row the proposal writes anyway, so observing costs no extra statement.
-- NULL for every action the layer did not consult on. No content.
--
-- The console's overview reads the escalation rate from it, and the
-- disagreement rate from approvals escalated by the advisor; two partial
-- indexes keep both off the full tables.

-- +goose Up
ALTER TABLE actions ADD COLUMN advisory jsonb;

CREATE INDEX actions_advisory_idx ON actions (tenant_id, created_at) WHERE advisory IS NOT NULL;

CREATE INDEX approvals_advisory_resolved_idx ON approvals (tenant_id, resolved_at)
    WHERE policy_reason = 'policy.advisory.escalated';

-- +goose Down
DROP INDEX approvals_advisory_resolved_idx;
DROP INDEX actions_advisory_idx;
ALTER TABLE actions DROP COLUMN advisory;

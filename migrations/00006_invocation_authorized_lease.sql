-- The lease (worker and fencing token) under which an invocation was
-- authorized. An approval authorizes exactly one execution: a repeated
-- resume or proposal answers "authorized" again only to that same lease,
-- an idempotent replay of the same call; a reclaimed run's new worker is
-- told the invocation's status and idempotency class instead, and applies
-- the seed's crash-recovery rule.

-- +goose Up
ALTER TABLE tool_invocations
    ADD COLUMN authorized_worker_id      text,
    ADD COLUMN authorized_fencing_token  bigint;

-- +goose Down
ALTER TABLE tool_invocations
    DROP COLUMN authorized_worker_id,
    DROP COLUMN authorized_fencing_token;

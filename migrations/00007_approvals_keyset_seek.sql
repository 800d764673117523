-- The queue orders by risk rank descending, then oldest first. A keyset
-- position over mixed directions cannot be one row comparison, so the
-- cursor condition was a filter and page N read the N-1 pages before it.
-- Indexing the negated rank makes the whole order ascending: the cursor
-- becomes (-risk_rank, created_at, id) > (...), an index condition, and
-- every page costs the same however deep the queue is.

-- +goose Up
CREATE INDEX approvals_queue_seek_idx ON approvals (tenant_id, (-risk_rank), created_at, id)
    WHERE status = 'pending';
DROP INDEX approvals_queue_idx;

-- +goose Down
CREATE INDEX approvals_queue_idx ON approvals (tenant_id, risk_rank DESC, created_at, id)
    WHERE status = 'pending';
DROP INDEX approvals_queue_seek_idx;

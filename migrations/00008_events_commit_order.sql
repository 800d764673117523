-- Events are read in commit-safe order, (tx_id, id), not by id alone: ids
-- are drawn when a row is inserted, not when its transaction commits, so a
-- reader paging by id past a visible id could skip a lower id whose
-- transaction committed later. Ordered by the writing transaction first,
-- every event not yet visible (its transaction is at or above the snapshot's
-- xmin) sorts after every event a reader has seen. The indexes follow the
-- new order; the id-ordered ones served only the old cursor.

-- +goose Up
CREATE INDEX events_tenant_tx_idx ON events (tenant_id, tx_id, id);
CREATE INDEX events_run_tx_idx ON events (run_id, tx_id, id) WHERE run_id IS NOT NULL;
DROP INDEX events_tenant_id_idx;
DROP INDEX events_run_id_idx;

-- +goose Down
CREATE INDEX events_tenant_id_idx ON events (tenant_id, id);
CREATE INDEX events_run_id_idx ON events (run_id, id) WHERE run_id IS NOT NULL;
DROP INDEX events_tenant_tx_idx;
DROP INDEX events_run_tx_idx;

package service

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"gatehouse/engine"
)

// notifyChannel carries a tenant id whenever events are written: a latency
// hint for long-pollers, never the source of truth.
const notifyChannel = "gatehouse_events"

const eventInsert = `
INSERT INTO events (tenant_id, run_id, type, payload, created_at)
VALUES ($1, $2, $3, $4, $5)`

const eventNotify = `SELECT pg_notify($1, $2)`

// eventListAfter returns a tenant's events after a watermark. It stops at
// the oldest transaction still running, so an event committed late with a
// lower id is never skipped by a reader that already moved past it.
const eventListAfter = `
SELECT id, tenant_id, COALESCE(run_id::text, ''), type, payload, created_at
  FROM events
 WHERE tenant_id = $1
   AND id > $2
   AND ($3::uuid IS NULL OR run_id = $3)
   AND tx_id < pg_snapshot_xmin(pg_current_snapshot())
 ORDER BY id
 LIMIT $4`

// insertEvent writes one events row; runID "" is no run.
func insertEvent(ctx context.Context, db DBTX, tenantID, runID, typ string, now time.Time, payload any) error {
	b, err := json.Marshal(payload)
	if err != nil {
		return fmt.Errorf("event %s: encode payload: %w", typ, err)
	}
	if _, err := db.Exec(ctx, eventInsert, tenantID, nullUUID(runID), typ, b, now); err != nil {
		return fmt.Errorf("event %s: %w", typ, err)
	}
	return nil
}

func notify(ctx context.Context, db DBTX, tenantID string) error {
	if _, err := db.Exec(ctx, eventNotify, notifyChannel, tenantID); err != nil {
		return fmt.Errorf("notify: %w", err)
	}
	return nil
}

const (
	eventsDefaultLimit = 100
	eventsMaxLimit     = 500
	eventsMaxWait      = 30 * time.Second
	eventsPollInterval = 250 * time.Millisecond
)

// ListEvents returns the principal's tenant's events after f.After. When
// there are none and f.Wait > 0 it polls until one arrives, Wait passes or
// ctx ends; an empty list is not an error.
func (s *Service) ListEvents(ctx context.Context, p engine.Principal, f EventFilter) ([]Event, error) {
	limit := clampLimit(f.Limit, eventsDefaultLimit, eventsMaxLimit)
	if f.After < 0 {
		return nil, &InvalidError{Msg: "after must not be negative"}
	}
	var runID any
	if f.RunID != "" {
		if !validUUID(f.RunID) {
			return []Event{}, nil
		}
		runID = f.RunID
	}
	wait := min(f.Wait, eventsMaxWait)
	var deadline <-chan time.Time
	if wait > 0 {
		timer := time.NewTimer(wait)
		defer timer.Stop()
		deadline = timer.C
	}
	for {
		evs, err := s.listEventsOnce(ctx, p.TenantID, f.After, runID, limit)
		if err != nil || len(evs) > 0 || wait <= 0 {
			return evs, err
		}
		select {
		case <-ctx.Done():
			return evs, nil
		case <-deadline:
			return evs, nil
		case <-time.After(eventsPollInterval):
		}
	}
}

func (s *Service) listEventsOnce(ctx context.Context, tenantID string, after int64, runID any, limit int) ([]Event, error) {
	rows, err := s.pool.Query(ctx, eventListAfter, tenantID, after, runID, limit)
	if err != nil {
		return nil, fmt.Errorf("service: list events: %w", err)
	}
	evs, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (Event, error) {
		var e Event
		err := r.Scan(&e.ID, &e.TenantID, &e.RunID, &e.Type, &e.Payload, &e.CreatedAt)
		return e, err
	})
	if err != nil {
		return nil, fmt.Errorf("service: list events: %w", err)
	}
	return evs, nil
}

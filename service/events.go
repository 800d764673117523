package service

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"gatehouse/api"
	"gatehouse/engine"
)

// notifyChannel carries a tenant id whenever events are written: a latency
// hint for long-pollers, never the source of truth.
const notifyChannel = "gatehouse_events"

const eventInsert = `
INSERT INTO events (tenant_id, run_id, type, payload, created_at)
VALUES ($1, $2, $3, $4, $5)`

const eventNotify = `SELECT pg_notify($1, $2)`

// eventsAfter pages a tenant's events in commit-safe order: by the writing
// transaction, then id. Ids are drawn at insert, not at commit, so paging
// by id alone skips a lower id whose transaction commits after a higher one
// was read. Only transactions older than the snapshot's xmin are returned:
// all of them have ended, and every transaction that has not yet (or has
// not yet begun) has an xid at or above xmin, so its events sort after
// every (tx, id) a reader was ever given.
const eventsAfterTenant = `
SELECT id, tenant_id, COALESCE(run_id::text, ''), type, payload, created_at, tx_id::text::bigint AS tx
  FROM events
 WHERE tenant_id = $1
   AND (tx_id, id) > ($2::bigint::text::xid8, $3::bigint)
   AND tx_id < pg_snapshot_xmin(pg_current_snapshot())
 ORDER BY tx_id, id
 LIMIT $4`

// The xid8 is returned as tx: named tx_id, the ORDER BY would sort by
// that output column, not the indexed one, and read the whole tenant.

// eventsAfterRun is eventsAfterTenant for one run, on the run's index, so a
// run's reader never walks the rest of its tenant's events.
const eventsAfterRun = `
SELECT id, tenant_id, COALESCE(run_id::text, ''), type, payload, created_at, tx_id::text::bigint AS tx
  FROM events
 WHERE run_id = $5::uuid
   AND tenant_id = $1
   AND (tx_id, id) > ($2::bigint::text::xid8, $3::bigint)
   AND tx_id < pg_snapshot_xmin(pg_current_snapshot())
 ORDER BY tx_id, id
 LIMIT $4`

// overviewDenialsByHour buckets policy and human denials (action.denied
// events) the same way.
const overviewDenialsByHour = `
SELECT 23 - floor(extract(epoch FROM $2::timestamptz - created_at) / 3600)::int AS bucket, count(*)
  FROM events
 WHERE tenant_id = $1 AND type = 'action.denied'
   AND created_at > $2::timestamptz - interval '24 hours' AND created_at <= $2
 GROUP BY 1`

// eventWatermarkNow is the oldest transaction still running.
const eventWatermarkNow = `SELECT pg_snapshot_xmin(pg_current_snapshot())::text::bigint`

// insertEvent writes one events row of the payload's type; runID "" is no
// run.
func insertEvent(ctx context.Context, db DBTX, tenantID, runID string, now time.Time, payload api.EventPayload) error {
	typ := payload.EventType()
	b, err := eventPayload(payload)
	if err != nil {
		return err
	}
	if _, err := db.Exec(ctx, eventInsert, tenantID, nullUUID(runID), typ, b, now); err != nil {
		return fmt.Errorf("event %s: %w", typ, err)
	}
	return nil
}

// queueEvent is insertEvent queued on a batch, sent in its caller's round
// trip.
func queueEvent(b *pgx.Batch, tenantID, runID string, now time.Time, payload api.EventPayload) error {
	p, err := eventPayload(payload)
	if err != nil {
		return err
	}
	b.Queue(eventInsert, tenantID, nullUUID(runID), payload.EventType(), p, now)
	return nil
}

func eventPayload(payload api.EventPayload) ([]byte, error) {
	b, err := json.Marshal(payload)
	if err != nil {
		return nil, fmt.Errorf("event %s: encode payload: %w", payload.EventType(), err)
	}
	return b, nil
}

func signalEvents(ctx context.Context, db DBTX, tenantID string) error {
	if _, err := db.Exec(ctx, eventNotify, notifyChannel, tenantID); err != nil {
		return fmt.Errorf("notify: %w", err)
	}
	return nil
}

// queueNotify is notify queued on a batch.
func queueNotify(b *pgx.Batch, tenantID string) {
	b.Queue(eventNotify, notifyChannel, tenantID)
}

const (
	eventsDefaultLimit = 100
	eventsMaxLimit     = 500
	eventsMaxWait      = 30 * time.Second
	// eventsFallbackPoll is how often a long-poll queries without a
	// wakeup: what a lost notification, an event the service does not
	// notify, or a listener that is down (or not run) costs in latency.
	eventsFallbackPoll = 2 * time.Second
	// After a wakeup that found nothing, the event is usually committed
	// but not visible yet (an older transaction is still open), so the
	// long-poll re-checks from eventsRecheckMin, doubling up to
	// eventsRecheckMax, for one fallback period.
	eventsRecheckMin = 10 * time.Millisecond
	eventsRecheckMax = 250 * time.Millisecond
)

// ListEvents returns the principal's tenant's events after the cursor
// f.After ("" or "0": from the start), each with its own cursor. When there
// are none and f.Wait > 0 it waits until one arrives, Wait passes or ctx
// ends; an empty list is not an error. Waiting, it re-queries when
// RunListener hears the tenant, and at the latest every eventsFallbackPoll,
// so notifications are a latency hint, never the source of truth.
func (s *Service) ListEvents(ctx context.Context, p engine.Principal, f EventFilter) ([]api.Event, error) {
	limit := clampLimit(f.Limit, eventsDefaultLimit, eventsMaxLimit)
	after, err := decodeEventCursor(f.After)
	if err != nil {
		return nil, err
	}
	if f.RunID != "" && !engine.ValidUUID(f.RunID) {
		return []api.Event{}, nil
	}
	wait := min(f.Wait, eventsMaxWait)
	if wait <= 0 {
		return s.listEventsOnce(ctx, p.TenantID, f.RunID, after, limit)
	}
	deadline := time.NewTimer(wait)
	defer deadline.Stop()
	pause, recheck := s.eventsFallback, time.Duration(0)
	for {
		// Subscribe before querying: a notification that lands between
		// the query and the wait still wakes this long-poll.
		woken, leave := s.wakeups.subscribe(p.TenantID)
		evs, err := s.listEventsOnce(ctx, p.TenantID, f.RunID, after, limit)
		if err != nil || len(evs) > 0 {
			leave()
			return evs, err
		}
		wake, done := sleepOrWake(ctx, deadline.C, woken, pause)
		leave()
		if done {
			return evs, nil
		}
		switch {
		case wake:
			pause, recheck = eventsRecheckMin, s.eventsFallback
		case recheck > pause:
			recheck -= pause
			pause = min(2*pause, eventsRecheckMax)
		default:
			pause, recheck = s.eventsFallback, 0
		}
	}
}

// sleepOrWake waits for a wakeup or pause; done when the deadline passed
// or ctx ended first.
func sleepOrWake(ctx context.Context, deadline <-chan time.Time, woken <-chan struct{}, pause time.Duration) (wake, done bool) {
	t := time.NewTimer(pause)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false, true
	case <-deadline:
		return false, true
	case <-woken:
		return true, false
	case <-t.C:
		return false, false
	}
}

func (s *Service) listEventsOnce(ctx context.Context, tenantID, runID string, after eventPos, limit int) ([]api.Event, error) {
	evs, err := eventsListAfter(ctx, s.pool, tenantID, runID, after, limit)
	if err != nil {
		return nil, fmt.Errorf("service: list events: %w", err)
	}
	return evs, nil
}

// eventsListAfter reads up to limit events of the tenant (of one run
// unless runID is "") after the position, in commit-safe order, each with
// its cursor.
func eventsListAfter(ctx context.Context, db DBTX, tenantID, runID string, after eventPos, limit int) ([]api.Event, error) {
	query, args := eventsAfterTenant, []any{tenantID, after.tx, after.id, limit}
	if runID != "" {
		query, args = eventsAfterRun, append(args, runID)
	}
	rows, err := db.Query(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (api.Event, error) {
		var e api.Event
		var tx int64
		err := r.Scan(&e.ID, &e.TenantID, &e.RunID, &e.Type, &e.Payload, &e.CreatedAt, &tx)
		e.Cursor = eventPos{tx: tx, id: e.ID}.String()
		return e, err
	})
}

// eventsDeniedByHour buckets the tenant's action.denied events of the 24
// hours before now; an hour with none is absent.
func eventsDeniedByHour(ctx context.Context, db DBTX, tenantID string, now time.Time) ([]eventsHour, error) {
	rows, err := db.Query(ctx, overviewDenialsByHour, tenantID, now)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, pgx.RowToStructByPos[eventsHour])
}

// eventsHour is a count of one of the 24 hours before now: bucket 23 is
// the hour ending at now.
type eventsHour struct {
	Bucket, Count int
}

// eventsWatermark is the event position of the oldest transaction still
// running.
func eventsWatermark(ctx context.Context, db DBTX) (eventPos, error) {
	var xmin int64
	err := db.QueryRow(ctx, eventWatermarkNow).Scan(&xmin)
	return eventPos{tx: xmin}, err
}

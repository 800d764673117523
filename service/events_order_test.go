package service

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"gatehouse/api"
)

// heldWriter is a transaction that has its xid before it writes, as a
// service transaction has once it locked or updated a row.
func heldWriter(t *testing.T, b *bundle) (pgx.Tx, int64) {
	t.Helper()
	tx, err := b.pool.Begin(b.ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = tx.Rollback(context.Background()) })
	var xid int64
	if err := tx.QueryRow(b.ctx, `SELECT pg_current_xact_id()::text::bigint`).Scan(&xid); err != nil {
		t.Fatal(err)
	}
	return tx, xid
}

// testEvent is an event of any type with an empty payload, for tests of
// the log's order.
type testEvent struct{ typ string }

func (e testEvent) EventType() string { return e.typ }

func writeEvent(t *testing.T, b *bundle, db DBTX, typ string) int64 {
	t.Helper()
	if err := insertEvent(b.ctx, db, b.tenant, "", b.clock.Now(), testEvent{typ}); err != nil {
		t.Fatal(err)
	}
	var id int64
	if err := db.QueryRow(b.ctx, `SELECT currval('events_id_seq')`).Scan(&id); err != nil {
		t.Fatal(err)
	}
	return id
}

// nextPage long-polls until a page after cursor is not empty: another
// test's open transaction only delays visibility. A page that never comes
// is a skipped event.
func nextPage(t *testing.T, b *bundle, after string) []api.Event {
	t.Helper()
	evs, err := b.svc.ListEvents(b.ctx, b.owner, EventFilter{After: after, Wait: eventsMaxWait})
	if err != nil {
		t.Fatal(err)
	}
	if len(evs) == 0 {
		t.Fatalf("no event after %s within %s", after, eventsMaxWait)
	}
	return evs
}

// The race, made deterministic: an older transaction writes the
// higher id and commits while a younger one, holding the lower id, is still
// open. A reader paging by id took the higher id and then skipped the lower
// one for good; in commit-safe order the held event arrives after it.
func TestListEventsDeliversEventHeldOpenBehindALaterCommit(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.svc.eventsFallback = 10 * time.Millisecond
	start, err := b.svc.EventWatermark(b.ctx, b.owner)
	if err != nil {
		t.Fatal(err)
	}
	older, _ := heldWriter(t, b)
	younger, _ := heldWriter(t, b)
	heldID := writeEvent(t, b, younger, "test.held")
	committedID := writeEvent(t, b, older, "test.committed")
	if heldID >= committedID {
		t.Fatalf("setup: held id %d is not below committed id %d", heldID, committedID)
	}
	if err := older.Commit(b.ctx); err != nil {
		t.Fatal(err)
	}

	first := nextPage(t, b, start)
	if len(first) != 1 || first[0].ID != committedID {
		t.Fatalf("while the younger transaction is open: %+v; want only event %d", first, committedID)
	}
	if err := younger.Commit(b.ctx); err != nil {
		t.Fatal(err)
	}
	second := nextPage(t, b, first[0].Cursor)
	if len(second) != 1 || second[0].ID != heldID {
		t.Fatalf("after the held commit: %+v; want event %d", second, heldID)
	}
}

// Many writers whose ids and xids interleave, and many readers paging with
// small pages while they write: every reader gets every event exactly once.
func TestListEventsConcurrentReadersSeeEveryEventOnce(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.svc.eventsFallback = 10 * time.Millisecond
	const writers, perWriter, readers = 8, 25, 4

	var wg sync.WaitGroup
	errs := make(chan error, writers+readers)
	for w := range writers {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(w), 17))
			for i := range perWriter {
				if err := pgx.BeginFunc(b.ctx, b.pool, func(tx pgx.Tx) error {
					// Take the xid first, as a run's lock does, then let
					// others draw ids before this one does.
					if _, err := tx.Exec(b.ctx, `SELECT pg_current_xact_id()`); err != nil {
						return err
					}
					time.Sleep(time.Duration(rng.IntN(3)) * time.Millisecond)
					for range 1 + rng.IntN(3) {
						if err := insertEvent(b.ctx, tx, b.tenant, "", b.clock.Now(), testEvent{fmt.Sprintf("test.w%d.%d", w, i)}); err != nil {
							return err
						}
					}
					return nil
				}); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	allWritten := make(chan struct{})
	seen := make([][]int64, readers)
	var rg sync.WaitGroup
	ctx, cancel := context.WithTimeout(b.ctx, 2*time.Minute)
	defer cancel()
	for r := range readers {
		rg.Go(func() {
			after, total := StartCursor, -1
			for total < 0 || len(seen[r]) < total {
				evs, err := b.svc.ListEvents(ctx, b.owner, EventFilter{After: after, Limit: 3 + r, Wait: time.Second})
				if err != nil {
					errs <- fmt.Errorf("reader %d after %d events: %w", r, len(seen[r]), err)
					return
				}
				for _, e := range evs {
					seen[r] = append(seen[r], e.ID)
				}
				if len(evs) > 0 {
					after = evs[len(evs)-1].Cursor
				}
				select {
				case <-allWritten:
					if total < 0 {
						if err := b.pool.QueryRow(b.ctx, `SELECT count(*) FROM events WHERE tenant_id = $1`, b.tenant).Scan(&total); err != nil {
							errs <- err
							return
						}
					}
				default:
				}
			}
		})
	}
	wg.Wait()
	close(allWritten)
	rg.Wait()
	close(errs)
	for err := range errs {
		if errors.Is(err, context.DeadlineExceeded) {
			t.Error("a reader never received every event")
		}
		t.Error(err)
	}

	var want []int64
	rows, err := b.pool.Query(b.ctx, `SELECT id FROM events WHERE tenant_id = $1`, b.tenant)
	if err != nil {
		t.Fatal(err)
	}
	want, err = pgx.CollectRows(rows, pgx.RowTo[int64])
	if err != nil {
		t.Fatal(err)
	}
	for r, ids := range seen {
		got := map[int64]int{}
		for _, id := range ids {
			got[id]++
		}
		for _, id := range want {
			if got[id] != 1 {
				t.Errorf("reader %d received event %d %d times", r, id, got[id])
			}
		}
		if len(ids) != len(want) {
			t.Errorf("reader %d received %d events; %d were written", r, len(ids), len(want))
		}
	}
}

// Cursors are client input: a numeric watermark of the id-ordered stream
// is refused with a message saying what to do, as is anything else that is
// not a cursor this server made; 0 and "" are the start.
func TestEventCursorDecoding(t *testing.T) {
	t.Parallel()
	for _, s := range []string{"", "0"} {
		if p, err := decodeEventCursor(s); err != nil || p != (eventPos{}) {
			t.Errorf("%q: %+v %v, want the start", s, p, err)
		}
	}
	for _, s := range []string{"17", "9223372036854775808", "-1", "e", "eAAAA", "x" + eventPos{tx: 1, id: 2}.String()[1:], eventPos{tx: 1, id: 2}.String() + "A"} {
		_, err := decodeEventCursor(s)
		var ie *InvalidError
		if !errors.As(err, &ie) {
			t.Errorf("%q: %v, want InvalidError", s, err)
		}
	}
	_, err := decodeEventCursor("42")
	var ie *InvalidError
	if !errors.As(err, &ie) || !strings.Contains(ie.Msg, "numeric watermark") || !strings.Contains(ie.Msg, "pass 0") {
		t.Errorf("old cursor: %v", err)
	}
	p := eventPos{tx: 1 << 40, id: 99}
	if got, err := decodeEventCursor(p.String()); err != nil || got != p {
		t.Errorf("round trip %+v: %+v %v", p, got, err)
	}
}

package service

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"gatehouse/api"
)

// runListener runs the bundle's listener until the test ends and returns
// the pid of each backend it LISTENs on.
func (b *bundle) runListener() <-chan uint32 {
	b.t.Helper()
	pids := make(chan uint32, 8)
	b.svc.onListening = func(pid uint32) {
		select {
		case pids <- pid:
		default:
		}
	}
	ctx, cancel := context.WithCancel(b.ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		b.svc.RunListener(ctx)
	}()
	b.t.Cleanup(func() {
		cancel()
		<-done
	})
	return pids
}

func receive[T any](t testing.TB, what string, ch <-chan T) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(20 * time.Second):
		t.Fatalf("no %s within 20 s", what)
		var zero T
		return zero
	}
}

// waitUntil polls cond until it holds.
func waitUntil(t testing.TB, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(20 * time.Second); !cond(); {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within 20 s", what)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// awaitEvent long-polls from after until an event of type typ arrives; a
// long-poll that ends empty (its Wait passed) is an error.
func (b *bundle) awaitEvent(after, typ string) error {
	for {
		evs, err := b.svc.ListEvents(b.ctx, b.owner, EventFilter{After: after, Wait: 25 * time.Second})
		if err != nil {
			return err
		}
		if len(evs) == 0 {
			return errors.New("long-poll ended empty: " + typ + " never arrived")
		}
		for _, e := range evs {
			if e.Type == typ {
				return nil
			}
		}
		after = evs[len(evs)-1].Cursor
	}
}

// parkWhileWaiting parks a fresh run once a long-poll waits on the tenant
// and returns what the long-poll saw.
func (b *bundle) parkWhileWaiting() error {
	b.t.Helper()
	c := b.started()
	after, err := b.svc.EventWatermark(b.ctx, b.owner)
	if err != nil {
		b.t.Fatal(err)
	}
	got := make(chan error, 1)
	go func() { got <- b.awaitEvent(after, api.EventApprovalRequested) }()
	waitUntil(b.t, "long-poll waiting", func() bool { return b.svc.wakeups.waiting(b.tenant) > 0 })
	b.parked(c, action("email.send", map[string]any{"to": "x"}))
	return receive(b.t, "long-poll result", got)
}

// With the fallback out of reach, only the listener's wakeup can end the
// long-poll before its Wait.
func TestListEventsWokenByListener(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.svc.eventsFallback = time.Hour
	receive(t, "LISTEN", b.runListener())
	if err := b.parkWhileWaiting(); err != nil {
		t.Fatal(err)
	}
}

func TestListEventsFallbackWithoutListener(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.svc.eventsFallback = 100 * time.Millisecond
	if err := b.parkWhileWaiting(); err != nil {
		t.Fatal(err)
	}
}

// A long-poll that gives up, by its ctx or its Wait, leaves nothing behind.
func TestListEventsWaiterLeaves(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.svc.eventsFallback = time.Hour
	receive(t, "LISTEN", b.runListener())
	never := eventPos{tx: 1 << 62}.String()
	for _, waiters := range []int{1, 3} {
		ctx, cancel := context.WithCancel(b.ctx)
		done := make(chan error, waiters)
		for range waiters {
			go func() {
				evs, err := b.svc.ListEvents(ctx, b.owner, EventFilter{After: never, Wait: 25 * time.Second})
				switch {
				case errors.Is(err, context.Canceled):
					// Cancelled mid-query rather than mid-wait.
					err = nil
				case err == nil && len(evs) > 0:
					err = errors.New("events after the end")
				}
				done <- err
			}()
		}
		waitUntil(t, "long-polls waiting", func() bool { return b.svc.wakeups.waiting(b.tenant) == waiters })
		cancel()
		for range waiters {
			if err := receive(t, "cancelled long-poll", done); err != nil {
				t.Fatal(err)
			}
		}
		mustEqual(t, "waiters after cancel", b.svc.wakeups.waiting(b.tenant), 0)
	}
	evs, err := b.svc.ListEvents(b.ctx, b.owner, EventFilter{After: never, Wait: 50 * time.Millisecond})
	if err != nil || len(evs) != 0 {
		t.Fatalf("timed-out long-poll: %d events, %v", len(evs), err)
	}
	mustEqual(t, "waiters after Wait", b.svc.wakeups.waiting(b.tenant), 0)
	b.svc.wakeups.mu.Lock()
	_, held := b.svc.wakeups.m[b.tenant]
	b.svc.wakeups.mu.Unlock()
	mustEqual(t, "tenant channel kept", held, false)
}

func TestWakeupsBroadcast(t *testing.T) {
	t.Parallel()
	var w wakeups
	a, leaveA := w.subscribe("t1")
	b, leaveB := w.subscribe("t1")
	other, leaveOther := w.subscribe("t2")
	defer leaveOther()
	w.wake("t1")
	for name, ch := range map[string]<-chan struct{}{"first": a, "second": b} {
		select {
		case <-ch:
		default:
			t.Fatalf("%s waiter not woken", name)
		}
	}
	select {
	case <-other:
		t.Fatal("another tenant's waiter woken")
	default:
	}
	// A waiter leaving after the wakeup must not drop a newer waiter's
	// channel.
	c, leaveC := w.subscribe("t1")
	leaveA()
	leaveB()
	mustEqual(t, "newer waiter kept", w.waiting("t1"), 1)
	w.wakeAll()
	select {
	case <-c:
	default:
		t.Fatal("wakeAll missed a waiter")
	}
	leaveC()
	mustEqual(t, "tenants left", len(w.m), 0)
}

// syncBuffer is a log sink the listener goroutine and the test share.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func TestListenerReconnects(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.svc.eventsFallback = time.Hour
	var logs syncBuffer
	b.svc.log = slog.New(slog.NewTextHandler(&logs, nil))
	pids := b.runListener()
	first := receive(t, "LISTEN", pids)
	var app string
	if err := b.pool.QueryRow(b.ctx, `SELECT application_name FROM pg_stat_activity WHERE pid = $1`, int32(first)).Scan(&app); err != nil {
		t.Fatal(err)
	}
	mustEqual(t, "listener application_name", app, listenerAppName)
	// A notification and a wait across the outage: the reconnect wakes
	// every waiter, which then finds what was sent while nobody listened.
	var killed bool
	if err := b.pool.QueryRow(b.ctx, `SELECT pg_terminate_backend($1)`, int32(first)).Scan(&killed); err != nil || !killed {
		t.Fatalf("terminate listener: %v %v", killed, err)
	}
	second := receive(t, "LISTEN after terminate", pids)
	if second == first {
		t.Fatalf("listener kept backend %d", first)
	}
	if err := b.parkWhileWaiting(); err != nil {
		t.Fatal(err)
	}
	out := logs.String()
	if !strings.Contains(out, "event listener disconnected") {
		t.Fatalf("no disconnect logged: %s", out)
	}
	if strings.Contains(out, b.tenant) {
		t.Fatalf("log carries a notification payload: %s", out)
	}
}

// Idle waits end by their deadline and a ping, on the same connection: a
// quiet tenant costs no reconnects, and the listener still hears the next
// notification.
func TestListenerSurvivesIdleWaits(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.svc.eventsFallback = time.Hour
	b.svc.listenerIdle = 50 * time.Millisecond
	var logs syncBuffer
	b.svc.log = slog.New(slog.NewTextHandler(&logs, nil))
	pids := b.runListener()
	first := receive(t, "LISTEN", pids)
	// Long enough for several idle waits and pings; nothing is asserted
	// about time, only about what the idle waits did.
	time.Sleep(20 * b.svc.listenerIdle)
	select {
	case again := <-pids:
		t.Fatalf("the listener listened again (backend %d after %d) while idle: %s", again, first, logs.String())
	default:
	}
	if err := b.parkWhileWaiting(); err != nil {
		t.Fatal(err)
	}
	if out := logs.String(); strings.Contains(out, "disconnected") {
		t.Fatalf("idle waits were logged as disconnects: %s", out)
	}
}

// The listener retries a lost database soon and, however long the outage,
// never waits longer than a long-poll's fallback between attempts.
func TestListenerBackoffIsShortAndGrows(t *testing.T) {
	t.Parallel()
	var got []time.Duration
	for d := listenerMinBackoff; len(got) < 8; d = nextListenerBackoff(d) {
		got = append(got, d)
	}
	want := []time.Duration{50 * time.Millisecond, 100 * time.Millisecond, 200 * time.Millisecond, 400 * time.Millisecond,
		800 * time.Millisecond, 1600 * time.Millisecond, 2 * time.Second, 2 * time.Second}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("backoff sequence %v, want %v", got, want)
		}
	}
}

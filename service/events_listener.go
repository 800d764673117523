package service

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgconn/ctxwatch"
)

// listenerAppName names the listening connection in pg_stat_activity, so
// an operator can tell it from pool connections.
const listenerAppName = "gatehouse-listener"

const (
	listenerConnectTimeout = 10 * time.Second
	// listenerPingEvery bounds how long a silently dead connection (a
	// dropped route, no RST) can leave the listener deaf: TCP keepalive
	// alone takes the better part of an hour to notice.
	listenerPingEvery = 30 * time.Second
	listenerPingWait  = 5 * time.Second
	// A database restart or failover is over within seconds, and until the
	// listener is back every long-poll waits out its fallback poll: retry
	// soon, and never wait more than a fallback period between attempts.
	listenerMinBackoff = 50 * time.Millisecond
	listenerMaxBackoff = eventsFallbackPoll
)

// wakeups fans notifications out to the long-polls waiting on a tenant. A
// tenant with waiters has one channel; a notification closes it, waking
// every waiter at once, and forgets it, so the next wait gets a fresh one.
// Waiters hold a count, and the last to leave forgets the channel too, so
// nothing outlives the long-polls that wanted it.
type wakeups struct {
	mu sync.Mutex
	m  map[string]*wakeup
}

type wakeup struct {
	ch      chan struct{}
	waiters int
}

// subscribe returns a channel closed at tenant's next notification, and
// the func that gives it up; call it once the wait is over.
func (w *wakeups) subscribe(tenant string) (<-chan struct{}, func()) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.m == nil {
		w.m = map[string]*wakeup{}
	}
	wk := w.m[tenant]
	if wk == nil {
		wk = &wakeup{ch: make(chan struct{})}
		w.m[tenant] = wk
	}
	wk.waiters++
	return wk.ch, func() {
		w.mu.Lock()
		defer w.mu.Unlock()
		wk.waiters--
		if wk.waiters == 0 && w.m[tenant] == wk {
			delete(w.m, tenant)
		}
	}
}

// wake wakes tenant's waiters.
func (w *wakeups) wake(tenant string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if wk := w.m[tenant]; wk != nil {
		close(wk.ch)
		delete(w.m, tenant)
	}
}

// wakeAll wakes every waiter: notifications sent while nobody listened
// are lost, so after (re)connecting each long-poll looks again.
func (w *wakeups) wakeAll() {
	w.mu.Lock()
	defer w.mu.Unlock()
	for tenant, wk := range w.m {
		close(wk.ch)
		delete(w.m, tenant)
	}
}

// waiting is how many long-polls wait on tenant (tests).
func (w *wakeups) waiting(tenant string) int {
	w.mu.Lock()
	defer w.mu.Unlock()
	if wk := w.m[tenant]; wk != nil {
		return wk.waiters
	}
	return 0
}

// RunListener LISTENs on the events channel on a dedicated connection
// until ctx ends, waking the long-polls (ListEvents with Wait) of each
// notified tenant. When the connection fails it reconnects with backoff;
// meanwhile long-polls fall back to polling, so a listener that is down
// costs latency, never events.
func (s *Service) RunListener(ctx context.Context) {
	backoff := listenerMinBackoff
	for {
		listened, err := s.listen(ctx)
		if ctx.Err() != nil {
			return
		}
		if listened {
			backoff = listenerMinBackoff
		}
		// err names the failure (connect, LISTEN, read); notification
		// payloads never reach it.
		s.log.Warn("event listener disconnected; reconnecting", "err", err, "retry_in", backoff.String())
		t := time.NewTimer(backoff)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
		backoff = nextListenerBackoff(backoff)
	}
}

// nextListenerBackoff doubles the wait before the next reconnect, up to
// listenerMaxBackoff.
func nextListenerBackoff(d time.Duration) time.Duration {
	return min(2*d, listenerMaxBackoff)
}

// listen connects, LISTENs and dispatches notifications until the
// connection fails or ctx ends; listened reports whether LISTEN took.
func (s *Service) listen(ctx context.Context) (listened bool, err error) {
	cc := s.pool.Config().ConnConfig.Copy()
	if cc.RuntimeParams == nil {
		cc.RuntimeParams = map[string]string{}
	}
	cc.RuntimeParams["application_name"] = listenerAppName
	// The wait for a notification ends by its deadline every
	// listenerIdle; the default handler would also open a connection
	// to send the server a cancel request each time, for a backend that is
	// running nothing. A read deadline alone ends the wait.
	cc.BuildContextWatcherHandler = func(pc *pgconn.PgConn) ctxwatch.Handler {
		return &pgconn.DeadlineContextWatcherHandler{Conn: pc.Conn()}
	}
	connectCtx, cancel := context.WithTimeout(ctx, listenerConnectTimeout)
	conn, err := pgx.ConnectConfig(connectCtx, cc)
	if err != nil {
		cancel()
		return false, fmt.Errorf("event listener: connect: %w", err)
	}
	defer func() {
		closeCtx, cancel := context.WithTimeout(context.Background(), listenerPingWait)
		defer cancel()
		_ = conn.Close(closeCtx)
	}()
	_, err = conn.Exec(connectCtx, "LISTEN "+pgx.Identifier{notifyChannel}.Sanitize())
	cancel()
	if err != nil {
		return false, fmt.Errorf("event listener: listen: %w", err)
	}
	s.log.Info("event listener listening", "channel", notifyChannel)
	s.wakeups.wakeAll()
	if s.onListening != nil {
		s.onListening(conn.PgConn().PID())
	}
	for {
		if err := s.nextNotification(ctx, conn); err != nil {
			return true, err
		}
	}
}

// nextNotification waits up to listenerIdle for one notification and
// wakes its tenant; when none came it pings, so a dead connection is found.
func (s *Service) nextNotification(ctx context.Context, conn *pgx.Conn) error {
	waitCtx, cancel := context.WithTimeout(ctx, s.listenerIdle)
	n, err := conn.WaitForNotification(waitCtx)
	cancel()
	switch {
	case err == nil:
		s.wakeups.wake(n.Payload)
		return nil
	case ctx.Err() != nil:
		return ctx.Err()
	case !errors.Is(err, context.DeadlineExceeded):
		return fmt.Errorf("event listener: wait: %w", err)
	}
	// A read deadline leaves the connection usable: only ping it.
	pingCtx, cancel := context.WithTimeout(ctx, listenerPingWait)
	defer cancel()
	if err := conn.Ping(pingCtx); err != nil {
		return fmt.Errorf("event listener: ping: %w", err)
	}
	return nil
}

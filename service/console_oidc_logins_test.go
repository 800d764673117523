package service

import (
	"context"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"gatehouse/internal/testdb"
)

// A sign-in's state is used once: of many callbacks racing with it,
// exactly one gets the login; a later one, or one past the lifetime,
// gets none.
func TestOIDCLoginTakenOnce(t *testing.T) {
	t.Parallel()
	st, err := NewConsoleSessions(testdb.New(t), LoginThrottle{})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	now := time.Now()
	const racers = 16
	for i := range 20 {
		state := "state-" + strconv.Itoa(i)
		in := OIDCLogin{Nonce: "n", Verifier: "v", Next: "/approvals/x", StepUp: true}
		if err := st.OIDCLoginStart(ctx, state, in, now); err != nil {
			t.Fatal(err)
		}
		var won atomic.Int32
		var wg sync.WaitGroup
		for range racers {
			wg.Go(func() {
				got, ok, err := st.OIDCLoginTake(ctx, state, now.Add(time.Second))
				if err != nil {
					t.Error(err)
				}
				if ok {
					won.Add(1)
					if got != in {
						t.Errorf("taken %+v, want %+v", got, in)
					}
				}
			})
		}
		wg.Wait()
		if n := won.Load(); n != 1 {
			t.Fatalf("iteration %d: %d callbacks took the sign-in, want exactly 1", i, n)
		}
	}
	if err := st.OIDCLoginStart(ctx, "late", OIDCLogin{Nonce: "n", Verifier: "v", Next: "/"}, now); err != nil {
		t.Fatal(err)
	}
	if _, ok, err := st.OIDCLoginTake(ctx, "late", now.Add(OIDCLoginLifetime)); ok || err != nil {
		t.Fatalf("a sign-in past its lifetime: ok %v, err %v; want none", ok, err)
	}
}

package httpx

import (
	"testing"
	"time"
)

func TestLimiterRefills(t *testing.T) {
	t.Parallel()
	now := time.Unix(0, 0)
	l := NewLimiter(RateLimit{PerSecond: 2, Burst: 2}, func() time.Time { return now })
	for i := range 2 {
		if _, ok := l.Allow("a"); !ok {
			t.Fatalf("request %d refused within the burst", i)
		}
	}
	wait, ok := l.Allow("a")
	if ok || wait <= 0 || wait > time.Second {
		t.Fatalf("third request: ok=%v wait=%v", ok, wait)
	}
	if _, ok := l.Allow("b"); !ok {
		t.Fatal("another key shares the bucket")
	}
	now = now.Add(500 * time.Millisecond)
	if _, ok := l.Allow("a"); !ok {
		t.Fatal("no token after the refill time")
	}
}

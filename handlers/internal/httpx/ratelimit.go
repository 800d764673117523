package httpx

import (
	"sync"
	"time"
)

// RateLimit is a token bucket's refill rate and size.
type RateLimit struct {
	PerSecond float64
	Burst     int
}

// Limiter is a token bucket per key. Buckets idle long enough to be full
// again are dropped, so the map stays as small as the set of active callers.
type Limiter struct {
	rate  float64 // tokens per second
	burst float64
	now   func() time.Time

	mu      sync.Mutex
	buckets map[string]*bucket
	swept   time.Time
}

type bucket struct {
	tokens float64
	last   time.Time
}

// NewLimiter makes a Limiter reading the clock now.
func NewLimiter(rl RateLimit, now func() time.Time) *Limiter {
	return &Limiter{rate: rl.PerSecond, burst: float64(rl.Burst), now: now, buckets: map[string]*bucket{}}
}

// Allow takes a token from key's bucket; when none is left it says how long
// until one is.
func (l *Limiter) Allow(key string) (time.Duration, bool) {
	now := l.now()
	l.mu.Lock()
	defer l.mu.Unlock()
	l.sweep(now)
	b, ok := l.buckets[key]
	if !ok {
		b = &bucket{tokens: l.burst, last: now}
		l.buckets[key] = b
	}
	b.tokens = min(l.burst, b.tokens+now.Sub(b.last).Seconds()*l.rate)
	b.last = now
	if b.tokens < 1 {
		return time.Duration((1 - b.tokens) / l.rate * float64(time.Second)), false
	}
	b.tokens--
	return 0, true
}

// sweep drops full buckets at most once a minute.
func (l *Limiter) sweep(now time.Time) {
	if now.Sub(l.swept) < time.Minute {
		return
	}
	l.swept = now
	refill := time.Duration(l.burst / l.rate * float64(time.Second))
	for k, b := range l.buckets {
		if now.Sub(b.last) >= refill {
			delete(l.buckets, k)
		}
	}
}

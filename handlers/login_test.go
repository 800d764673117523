package handlers

import (
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"
)

func smallThrottle(perAccount, perAddress int) func(*Config) {
	return func(c *Config) {
		c.LoginThrottle = LoginThrottle{PerAccount: perAccount, PerAddress: perAddress, Window: 15 * time.Minute}
	}
}

// statusCounts counts statuses.
func statusCounts(statuses []int) map[int]int {
	n := map[int]int{}
	for _, s := range statuses {
		n[s]++
	}
	return n
}

// The throttle tests are not parallel: recording a failure prunes every
// failure older than the window, and their clocks differ.

// Parallel wrong guesses at one account: at most the budget reach the
// password check (401), every other one is refused before it (429, or 503
// when no verification slot came free).
func TestLoginThrottleHoldsUnderParallelGuesses(t *testing.T) {
	const budget, guesses = 3, 10
	b := setup(t, smallThrottle(budget, 100))
	hc := b.browser()
	tok := b.loginToken(hc)
	guess := func(i int) int {
		form := url.Values{"_csrf": {tok}, "id": {b.id("full")}, "password": {"guess-" + string(rune('a'+i))}}
		return b.postForm(hc, "/login", form).Status
	}
	statuses := make([]int, guesses)
	var wg sync.WaitGroup
	for i := range guesses {
		wg.Go(func() { statuses[i] = guess(i) })
	}
	wg.Wait()
	n := statusCounts(statuses)
	if n[http.StatusUnauthorized] > budget || n[http.StatusUnauthorized]+n[http.StatusTooManyRequests]+n[http.StatusServiceUnavailable] != guesses {
		t.Fatalf("statuses %v: want at most %d checked (401) and the rest 429 or 503", n, budget)
	}
	// Guesses turned away as busy gave their place back: one at a time,
	// exactly the rest of the budget is checked.
	for checked := n[http.StatusUnauthorized]; checked < budget; checked++ {
		if st := guess(checked); st != http.StatusUnauthorized {
			t.Fatalf("guess %d of the budget: %d, want 401", checked+1, st)
		}
	}
	if st := guess(budget); st != http.StatusTooManyRequests {
		t.Fatalf("guess over the budget: %d, want 429", st)
	}
	// The right password is refused too while the budget is spent...
	if r := b.login(b.browser(), "full", testPassword); r.Status != http.StatusTooManyRequests {
		t.Fatalf("right password within the window: %d, want 429", r.Status)
	}
	// ...and accepted once the failures leave the window.
	b.clock.Advance(16 * time.Minute)
	if r := b.login(b.browser(), "full", testPassword); r.Status != http.StatusSeeOther {
		t.Fatalf("right password after the window: %d, want 303", r.Status)
	}
}

// One address guessing across many accounts runs out of its own budget;
// another address does not.
func TestLoginThrottlePerAddress(t *testing.T) {
	const perAddress = 4
	b := setup(t, smallThrottle(5, perAddress))
	hc := b.browser()
	tok := b.loginToken(hc)
	guess := func(account string, header ...string) reply {
		return b.postForm(hc, "/login", url.Values{"_csrf": {tok}, "id": {account}, "password": {"nope"}}, header...)
	}
	for i := range perAddress {
		if r := guess(b.id("ghost" + string(rune('a'+i)))); r.Status != http.StatusUnauthorized {
			t.Fatalf("guess %d: %d, want 401", i, r.Status)
		}
	}
	r := guess(b.id("ghostz"))
	if r.Status != http.StatusTooManyRequests || !strings.Contains(r.Body, "from your network") {
		t.Fatalf("guess over the address budget: %d %.200s, want 429 naming the network", r.Status, r.Body)
	}
	if r := guess(b.id("ghostz"), testPeerHeader, "10.255.0.1"); r.Status != http.StatusUnauthorized {
		t.Fatalf("the same guess from another address: %d, want 401", r.Status)
	}
}

package handlers

import (
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"gatehouse/service"
)

// smallThrottle is the default throttle with smaller budgets.
func smallThrottle(perPair, perAddress, accountCeiling int) func(*service.LoginThrottle) {
	return func(th *service.LoginThrottle) {
		*th = service.DefaultLoginThrottle
		th.PerPair, th.PerAddress, th.AccountCeiling = perPair, perAddress, accountCeiling
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

// Parallel wrong guesses at one account from one address: at most the
// budget reach the password check (401), every other one is refused before
// it (429, or 503 when no verification slot came free).
func TestLoginThrottleHoldsUnderParallelGuesses(t *testing.T) {
	const budget, guesses = 3, 10
	b := setup(t, smallThrottle(budget, 100, 100))
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
	// each past its backoff, exactly the rest of the budget is checked.
	for checked := n[http.StatusUnauthorized]; checked < budget; checked++ {
		b.clock.Advance(time.Minute)
		if st := guess(checked); st != http.StatusUnauthorized {
			t.Fatalf("guess %d of the budget: %d, want 401", checked+1, st)
		}
	}
	b.clock.Advance(time.Minute)
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
	b := setup(t, smallThrottle(5, perAddress, 100))
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

// A hostile address that spends an approver's budget locks only itself
// out: the approver signs in from their own address at once.
func TestLoginThrottleDoesNotLockTheApproverOut(t *testing.T) {
	const budget = 3
	b := setup(t, smallThrottle(budget, 100, 100))
	attacker := func() int {
		return b.login(b.browser(), "full", "guess", testPeerHeader, "203.0.113.9").Status
	}
	for i := range budget {
		if st := attacker(); st != http.StatusUnauthorized {
			t.Fatalf("guess %d: %d, want 401", i, st)
		}
		b.clock.Advance(time.Minute)
	}
	if st := attacker(); st != http.StatusTooManyRequests {
		t.Fatalf("guess over the pair budget: %d, want 429", st)
	}
	if r := b.login(b.browser(), "full", testPassword, testPeerHeader, "198.51.100.7"); r.Status != http.StatusSeeOther {
		t.Fatalf("the approver from their own address: %d %.200s, want 303", r.Status, r.Body)
	}
	if st := attacker(); st != http.StatusTooManyRequests {
		t.Fatalf("the approver's sign-in cleared the attacker's failures: %d, want 429", st)
	}
}

// One typo costs nothing; from the second failure a pair waits
// Backoff·2^(n-2) (429 with Retry-After), and a success clears the pair:
// its typos are forgotten.
func TestLoginBackoffDoublesAndSuccessClearsThePair(t *testing.T) {
	b := setup(t, smallThrottle(5, 100, 100))
	wrong := func() reply { return b.login(b.browser(), "full", "typo") }
	for i := range 2 {
		if r := wrong(); r.Status != http.StatusUnauthorized {
			t.Fatalf("typo %d at once: %d, want 401", i+1, r.Status)
		}
	}
	r := wrong()
	if r.Status != http.StatusTooManyRequests || r.Header.Get("Retry-After") != "1" {
		t.Fatalf("at once after a failure: %d Retry-After %q, want 429 and 1", r.Status, r.Header.Get("Retry-After"))
	}
	b.clock.Advance(time.Second)
	if r := wrong(); r.Status != http.StatusUnauthorized {
		t.Fatalf("after the backoff: %d, want 401", r.Status)
	}
	b.clock.Advance(time.Second)
	if r := wrong(); r.Status != http.StatusTooManyRequests || r.Header.Get("Retry-After") != "1" {
		t.Fatalf("1 s after the second failure: %d Retry-After %q, want 429 (2 s backoff, 1 s left)", r.Status, r.Header.Get("Retry-After"))
	}
	b.clock.Advance(time.Second)
	if r := b.login(b.browser(), "full", testPassword); r.Status != http.StatusSeeOther {
		t.Fatalf("right password after the backoff: %d, want 303", r.Status)
	}
	// Cleared: a typo right after is checked, not held back.
	for i := range 2 {
		if r := wrong(); r.Status != http.StatusUnauthorized {
			t.Fatalf("typo %d after the success: %d, want 401", i, r.Status)
		}
		b.clock.Advance(time.Minute)
	}
}

// Many addresses guessing one account push it past the ceiling: then each
// guessing address waits the long backoff, but an address that has not
// failed signs in at once.
func TestLoginAccountCeilingOnlySlows(t *testing.T) {
	const ceiling = 4
	b := setup(t, smallThrottle(5, 100, ceiling))
	from := func(i int, password string) reply {
		return b.login(b.browser(), "full", password, testPeerHeader, "203.0.113."+strconv.Itoa(i))
	}
	for i := range ceiling {
		if r := from(i, "guess"); r.Status != http.StatusUnauthorized {
			t.Fatalf("guess from address %d: %d, want 401", i, r.Status)
		}
	}
	b.clock.Advance(2 * time.Second) // past the ordinary 1 s backoff
	r := from(0, "guess")
	if r.Status != http.StatusTooManyRequests || r.Header.Get("Retry-After") != "28" {
		t.Fatalf("a guessing address over the ceiling: %d Retry-After %q, want 429 and 28", r.Status, r.Header.Get("Retry-After"))
	}
	if r := from(99, testPassword); r.Status != http.StatusSeeOther {
		t.Fatalf("an address without failures over the ceiling: %d, want 303", r.Status)
	}
	b.clock.Advance(28 * time.Second)
	if r := from(0, "guess"); r.Status != http.StatusUnauthorized {
		t.Fatalf("a guessing address after the long backoff: %d, want 401", r.Status)
	}
}

package service

import (
	"testing"
	"time"
)

func TestLoginThrottleDecide(t *testing.T) {
	t.Parallel()
	th := DefaultLoginThrottle
	th.PerPair = 1000 // for the cap case
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	cases := map[string]struct {
		c    loginCounts
		want LoginVerdict
		wait time.Duration
	}{
		"fresh":                      {loginCounts{}, LoginAllowed, 0},
		"fresh pair over ceiling":    {loginCounts{account: 1000}, LoginAllowed, 0},
		"pair budget spent":          {loginCounts{pair: 1000, pairLast: now.Add(-time.Hour)}, LoginPairThrottled, 0},
		"address budget spent":       {loginCounts{address: 30}, LoginAddressThrottled, 0},
		"one typo, just now":         {loginCounts{pair: 1, pairLast: now}, LoginAllowed, 0},
		"third failure, just now":    {loginCounts{pair: 3, pairLast: now}, LoginBackoff, 2 * time.Second},
		"third failure, 2 s ago":     {loginCounts{pair: 3, pairLast: now.Add(-2 * time.Second)}, LoginAllowed, 0},
		"fourth failure, 1 s ago":    {loginCounts{pair: 4, pairLast: now.Add(-time.Second)}, LoginBackoff, 3 * time.Second},
		"over ceiling, first fail":   {loginCounts{pair: 1, pairLast: now, account: 100}, LoginBackoff, 30 * time.Second},
		"over ceiling, second fail":  {loginCounts{pair: 2, pairLast: now.Add(-time.Second), account: 100}, LoginBackoff, 59 * time.Second},
		"under ceiling, second fail": {loginCounts{pair: 2, pairLast: now.Add(-time.Second), account: 99}, LoginAllowed, 0},
		"huge budget, capped":        {loginCounts{pair: 200, pairLast: now}, LoginBackoff, 15 * time.Minute},
	}
	for name, c := range cases {
		v, wait := th.decide(c.c, now)
		if v != c.want || wait != c.wait {
			t.Errorf("%s: %v %v, want %v %v", name, v, wait, c.want, c.wait)
		}
	}
}

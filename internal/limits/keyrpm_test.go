package limits

import (
	"testing"
	"time"

	"switchyard/internal/clock"
)

func TestKeyLimiterAllow(t *testing.T) {
	fc := clock.NewFake(t0) // 10.4 s into the minute
	k := NewKeyLimiter(fc)
	steps := []struct {
		at        time.Duration // after t0
		key       string
		rpm       int
		wantOK    bool
		wantRetry time.Duration
	}{
		{0, "a", 3, true, 0},
		{10 * time.Second, "a", 3, true, 0},
		{20 * time.Second, "a", 3, true, 0},
		// Full: the first request (bucket [10 s, 11 s)) leaves at 70 s.
		{30 * time.Second, "a", 3, false, minute0.Add(70 * time.Second).Sub(t0.Add(30 * time.Second))},
		{30 * time.Second, "b", 3, true, 0},  // keys are separate
		{30 * time.Second, "a", 0, true, 0},  // rpm 0: no limit
		{30 * time.Second, "a", -1, true, 0}, // nor below
		{59 * time.Second, "a", 3, false, 600 * time.Millisecond},
		{59*time.Second + 600*time.Millisecond, "a", 3, true, 0},
		{59*time.Second + 600*time.Millisecond, "a", 3, false, 10 * time.Second}, // refusals do not count
		{69*time.Second + 600*time.Millisecond, "a", 3, true, 0},
		{69*time.Second + 600*time.Millisecond, "a", 5, true, 0}, // a raised limit applies at once
	}
	for i, s := range steps {
		advanceTo(fc, t0.Add(s.at))
		ok, retry := k.Allow(s.key, s.rpm)
		if ok != s.wantOK || retry != s.wantRetry {
			t.Fatalf("step %d (t0+%v, %s, rpm %d): Allow = %v, %v; want %v, %v", i, s.at, s.key, s.rpm, ok, retry, s.wantOK, s.wantRetry)
		}
	}
}

func TestKeyLimiterAllowN(t *testing.T) {
	fc := clock.NewFake(t0) // 10.4 s into the minute
	k := NewKeyLimiter(fc)
	tpm := CounterName("", "a", "tpm")
	steps := []struct {
		at        time.Duration // after t0
		name      string
		limit     int
		n         int64
		wantOK    bool
		wantRetry time.Duration
	}{
		{0, tpm, 100, 60, true, 0},
		{10 * time.Second, tpm, 100, 50, false, minute0.Add(70 * time.Second).Sub(t0.Add(10 * time.Second))}, // 110 > 100
		{10 * time.Second, tpm, 100, 40, true, 0},                                                            // 100 fits exactly
		{10 * time.Second, CounterName("research", "", "tpm"), 100, 500, true, 0},                            // larger than the limit, on an empty window
		{10 * time.Second, CounterName("research", "", "tpm"), 100, 1, false, minute0.Add(80 * time.Second).Sub(t0.Add(10 * time.Second))},
		{60 * time.Second, tpm, 100, 60, true, 0}, // the first 60 have left the window
	}
	for i, s := range steps {
		advanceTo(fc, t0.Add(s.at))
		ok, retry := k.AllowN(s.name, s.limit, s.n)
		if ok != s.wantOK || retry != s.wantRetry {
			t.Fatalf("step %d (t0+%v, %s, limit %d, n %d): AllowN = %v, %v; want %v, %v", i, s.at, s.name, s.limit, s.n, ok, retry, s.wantOK, s.wantRetry)
		}
	}
	if a, b := CounterName("research", "", "rpm"), CounterName("", "research", "rpm"); a == b {
		t.Fatalf("a team's and a key's windows share the name %q", a)
	}
}

package health

import (
	"testing"
	"time"

	"switchyard/internal/clock"
	"switchyard/internal/config"
)

func TestBreaker(t *testing.T) {
	cfg := config.Circuit{FailureThreshold: 3, Window: 30 * time.Second, OpenDuration: time.Minute, ProbeInterval: 10 * time.Second, SuccessThreshold: 1}
	type step struct {
		outcome  Outcome
		advance  time.Duration
		wantOpen bool
	}
	tests := []struct {
		name  string
		steps []step
	}{
		{"opens after threshold consecutive server errors", []step{
			{ServerError, 0, false}, {ServerError, 0, false}, {ServerError, 0, true},
		}},
		{"a success resets the count", []step{
			{ServerError, 0, false}, {ServerError, 0, false}, {Success, 0, false}, {ServerError, 0, false}, {ServerError, 0, false},
		}},
		{"auth error opens at once", []step{{AuthError, 0, true}}},
		{"client errors and 429s do not count", []step{
			{ClientError, 0, false}, {RateLimited, 0, false}, {Canceled, 0, false}, {ClientError, 0, false},
		}},
		{"lets traffic through after open_duration; a failure re-opens", []step{
			{AuthError, 0, true}, {Success, 0, false}, {AuthError, 59 * time.Second, true},
			{ServerError, time.Minute, true},
		}},
		{"half-open success closes", []step{
			{AuthError, 0, true}, {Success, time.Minute, false}, {ServerError, 0, false}, {ServerError, 0, false},
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			fc := clock.NewFake(time.Unix(0, 0))
			b := NewBreakers(cfg, fc)
			for i, s := range tc.steps {
				fc.Advance(s.advance)
				b.Record("u", s.outcome, "detail")
				if got := b.View("u").Open; got != s.wantOpen {
					t.Fatalf("step %d (%v): open = %v, want %v", i, s.outcome, got, s.wantOpen)
				}
			}
		})
	}
}

func TestBreakerViewTimesOut(t *testing.T) {
	fc := clock.NewFake(time.Unix(0, 0))
	b := NewBreakers(config.Circuit{FailureThreshold: 1, OpenDuration: time.Minute}, fc)
	b.Record("u", AuthError, "status 401")
	v := b.View("u")
	if !v.Open || v.Reason != "auth error: status 401" || !v.Until.Equal(time.Unix(60, 0)) {
		t.Fatalf("view %+v", v)
	}
	fc.Advance(time.Minute)
	if b.View("u").Open {
		t.Fatal("still open after open_duration")
	}
	if b.View("other").Open {
		t.Fatal("unknown upstream reported open")
	}
}

func TestOutcomeFailover(t *testing.T) {
	want := map[Outcome]bool{Success: false, ClientError: false, AuthError: true, RateLimited: true, ServerError: true, Canceled: false}
	for o, w := range want {
		if o.Failover() != w {
			t.Errorf("%v.Failover() = %v", o, !w)
		}
	}
}

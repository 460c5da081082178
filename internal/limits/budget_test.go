package limits

import (
	"math"
	"testing"
	"time"

	"switchyard/internal/clock"
)

func TestRetryBudget(t *testing.T) {
	tests := []struct {
		name     string
		ratio    float64
		requests int
		want     int // retries allowed within the window
	}{
		{"floor with no traffic", 0.2, 0, 30},
		{"floor above ratio", 0.2, 100, 30},
		{"ratio above floor", 0.2, 1000, 200},
		{"ratio 1", 1, 500, 500},
		{"zero ratio keeps the floor", 0, 1000, 30},
		{"negative ratio keeps the floor", -1, 1000, 30},
		{"NaN ratio keeps the floor", math.NaN(), 1000, 30},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b := NewRetryBudget(clock.NewFake(t0), tc.ratio)
			for range tc.requests {
				b.Request()
			}
			got := 0
			for b.TryRetry() {
				got++
				if got > 10000 {
					t.Fatal("budget never ran out")
				}
			}
			if got != tc.want {
				t.Fatalf("%d retries allowed, want %d", got, tc.want)
			}
		})
	}
}

func TestRetryBudgetSlides(t *testing.T) {
	fc := clock.NewFake(t0.Truncate(time.Second))
	b := NewRetryBudget(fc, 0.5)
	for range 100 {
		b.Request()
	}
	for range 50 {
		if !b.TryRetry() {
			t.Fatal("retry refused within budget")
		}
	}
	if b.TryRetry() {
		t.Fatal("51st retry allowed with ratio 0.5 of 100 requests")
	}
	fc.Advance(RetryBudgetWindow - time.Nanosecond)
	if b.TryRetry() {
		t.Fatal("retry allowed before the window moved on")
	}
	fc.Advance(time.Nanosecond)
	// The requests and retries have left the window: only the floor is left.
	for i := range 30 {
		if !b.TryRetry() {
			t.Fatalf("retry %d refused after the window moved on", i)
		}
	}
	if b.TryRetry() {
		t.Fatal("retry beyond the floor allowed")
	}
}

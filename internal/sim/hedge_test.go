package sim

import (
	"testing"
	"time"
)

// A hedged request has attempts on two upstreams in flight at once; each
// is counted in the time bucket it was sent in.
func TestRequestSentPerUpstream(t *testing.T) {
	q := &request{start: time.Second}
	q.dispatched(0, 2*time.Second)
	q.dispatched(1, 3*time.Second) // a hedge
	q.dispatched(0, 4*time.Second) // a retry on the first
	tests := []struct {
		up   int
		want time.Duration
	}{{0, 4 * time.Second}, {1, 3 * time.Second}, {2, time.Second}}
	for _, tc := range tests {
		if got := q.sentTo(tc.up); got != tc.want {
			t.Errorf("sentTo(%d) = %v, want %v", tc.up, got, tc.want)
		}
	}
}

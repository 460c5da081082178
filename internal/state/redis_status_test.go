package state

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"
)

// The reachability of Redis as /readyz and the log report it: an outage's
// start, end, length and reason, a primary that changed across it
// (Sentinel), and never the password.
func TestReachabilityReportsOutages(t *testing.T) {
	var logs bytes.Buffer
	log := slog.New(slog.NewTextHandler(&logs, nil))
	// The sentinels' answers at start, after a restart, and after a
	// failover that only the sentinel which ran it knows of yet.
	primaries := [][]string{{"10.0.0.1:6379", "10.0.0.1:6379"}, {"10.0.0.1:6379", "10.0.0.1:6379"}, {"10.0.0.1:6379", "10.0.0.2:6379"}}
	asked := 0
	lookup := func(context.Context) ([]string, error) {
		asked++
		return primaries[asked-1], nil
	}
	r := newReachability("sentinel", "hunter2", lookup)
	ctx := context.Background()
	if s := r.status(); !s.Shared || s.Since != nil || s.LastOutage != nil || s.Mode != "sentinel" {
		t.Fatalf("initial status %+v, want shared with no change", s)
	}
	r.notePrimary(ctx, log) // the primary at the start
	r.notePrimary(ctx, log) // not asked again until an outage ends
	if asked != 1 {
		t.Fatalf("Sentinel asked %d times before any outage, want 1", asked)
	}

	steps := []struct {
		name        string
		err         error
		downFor     time.Duration
		wantReason  string
		wantChanged bool
	}{
		{"a restart, same primary", errors.New("dial tcp 10.0.0.1:6379: connect: connection refused"), 1500 * time.Millisecond, "connection refused", false},
		{"a failover", fmt.Errorf("auth hunter2: %w", context.DeadlineExceeded), 3 * time.Second, "timeout", true},
	}
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	for _, st := range steps {
		t.Run(st.name, func(t *testing.T) {
			r.change(log, false, st.err, now, "p:")
			if s := r.status(); s.Shared || s.Reason != st.wantReason || s.Since == nil || !s.Since.Equal(now) {
				t.Fatalf("status while down %+v, want not shared since %v for %q", s, now, st.wantReason)
			}
			up := now.Add(st.downFor)
			r.change(log, true, nil, up, "p:")
			r.notePrimary(ctx, log)
			s := r.status()
			o := s.LastOutage
			if !s.Shared || s.Reason != "" || o == nil || !o.From.Equal(now) || !o.To.Equal(up) ||
				o.Seconds != st.downFor.Seconds() || o.Reason != st.wantReason || o.PrimaryChanged != st.wantChanged {
				t.Fatalf("status after %+v, last outage %+v; want shared, outage %v from %v for %q, primary changed %v",
					s, o, st.downFor, now, st.wantReason, st.wantChanged)
			}
			now = up.Add(time.Minute)
		})
	}
	out := logs.String()
	for _, want := range []string{"redis sentinel primary", "redis primary unchanged after the outage",
		"redis primary changed: Sentinel failed over", "down_for=1.5s", "down_for=3s", "reason=\"connection refused\""} {
		if !strings.Contains(out, want) {
			t.Errorf("the log lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "hunter2") {
		t.Errorf("the log shows the password:\n%s", out)
	}
}

// redisReason words the errors of an outage without addresses.
func TestRedisReason(t *testing.T) {
	tests := []struct {
		err  error
		want string
	}{
		{nil, ""},
		{context.DeadlineExceeded, "timeout"},
		{errors.New("dial tcp 127.0.0.1:7111: connect: connection refused"), "connection refused"},
		{errors.New("READONLY You can't write against a read only replica."), "read-only replica (a failover in progress)"},
		{errors.New("CLUSTERDOWN The cluster is down"), "cluster down"},
		{errors.New("TRYAGAIN Multiple keys request during rehashing of slot"), "cluster resharding"},
		{errors.New("LOADING Redis is loading the dataset in memory"), "loading its dataset"},
		{errors.New("WRONGPASS invalid username-password pair or user is disabled."), "authentication failed"},
		{errors.New("NOPERM this user has no permissions to run the 'evalsha' command"), "ACL permission denied"},
		{errors.New("redis: all sentinels specified in configuration are unreachable"), "sentinels unreachable or without a primary"},
		{errors.New("read tcp 127.0.0.1:1->127.0.0.1:2: read: connection reset by peer"), "connection lost"},
		{errors.New("ERR something else"), "error"},
	}
	for _, tt := range tests {
		if got := redisReason(tt.err); got != tt.want {
			t.Errorf("redisReason(%v) = %q, want %q", tt.err, got, tt.want)
		}
	}
}

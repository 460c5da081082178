package storetest

import (
	"context"
	"fmt"
	"reflect"
	"sort"
	"testing"
	"time"

	"switchyard/internal/store"
)

// usageLogs returns n request logs spread over three upstreams (one of
// them "", no upstream served), three keys (one ""), two models, a few
// error classes
// and, one log every 17 minutes with a nanosecond part, over the days
// before UsageEpoch.
func usageLogs(n int) []store.RequestLog {
	upstreams := []string{"alpha", "bravo", ""}
	keys := []string{"kone", "ktwo", ""}
	models := []string{"gpt-4o", "claude-x"}
	out := make([]store.RequestLog, n)
	for i := range out {
		l := Log(i)
		l.ID = fmt.Sprintf("usage-%04d", i)
		l.Time = UsageEpoch.Add(-time.Duration(i)*17*time.Minute - time.Duration(i%1000))
		l.Upstream = upstreams[i%len(upstreams)]
		l.Key = keys[(i/2)%len(keys)]
		l.Model = models[i%len(models)]
		l.InputTokens, l.OutputTokens = int64(i*31%997), int64(i*7%113)
		l.CacheReadTokens, l.CacheWriteTokens = l.InputTokens/2, int64(i%3)
		// Multiples of 1/64: sums in any order are exact.
		l.CostUSD, l.Unpriced = float64(i%9)/64, i%7 == 0
		l.ErrorClass = ""
		if i%5 == 0 {
			l.ErrorClass = "server_error"
		}
		out[i] = l
	}
	return out
}

// UsageEpoch is the time the logs of the usage test lead up to.
var UsageEpoch = time.Date(2025, 3, 10, 12, 0, 0, 0, time.UTC)

// sumUsage is the reference UsageTotals: a loop over every log.
func sumUsage(logs []store.RequestLog, since time.Time) []store.UsageTotal {
	byGroup := map[[4]string]*store.UsageTotal{}
	for _, l := range logs {
		if l.Time.IsZero() || l.Time.Before(since) {
			continue
		}
		day := l.Time.UTC().Truncate(24 * time.Hour)
		k := [4]string{l.Upstream, l.Key, l.Model, day.Format(time.DateOnly)}
		u := byGroup[k]
		if u == nil {
			u = &store.UsageTotal{Day: day, Upstream: l.Upstream, Key: l.Key, Model: l.Model}
			byGroup[k] = u
		}
		u.Requests++
		u.InputTokens += l.InputTokens
		u.OutputTokens += l.OutputTokens
		u.CacheReadTokens += l.CacheReadTokens
		u.CacheWriteTokens += l.CacheWriteTokens
		u.CostUSD += l.CostUSD
		if l.Unpriced {
			u.Unpriced++
		}
		if l.ErrorClass != "" {
			u.Errors++
		}
	}
	out := []store.UsageTotal{}
	for _, u := range byGroup {
		out = append(out, *u)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Upstream != out[j].Upstream {
			return out[i].Upstream < out[j].Upstream
		}
		if out[i].Key != out[j].Key {
			return out[i].Key < out[j].Key
		}
		if out[i].Model != out[j].Model {
			return out[i].Model < out[j].Model
		}
		return out[i].Day.Before(out[j].Day)
	})
	return out
}

// testUsageTotals checks the database's sums against a loop over the same
// logs for several period starts, a hand-counted case and the edges: a log
// exactly at since is counted, one a nanosecond before is not, and a log
// with the zero Time never is.
func testUsageTotals(t *testing.T, open Opener) {
	ctx := context.Background()
	s := open(t)
	logs := usageLogs(600)
	for b := 0; b < len(logs); b += 128 {
		if err := s.InsertRequestLogs(ctx, logs[b:min(b+128, len(logs))]); err != nil {
			t.Fatalf("InsertRequestLogs: %v", err)
		}
	}
	zero := Log(0)
	zero.Time, zero.Upstream, zero.Key = time.Time{}, "alpha", "kone"
	if err := s.InsertRequestLogs(ctx, []store.RequestLog{zero}); err != nil {
		t.Fatalf("InsertRequestLogs: %v", err)
	}
	at := func(i int) time.Time { return logs[i].Time }
	tests := []struct {
		name  string
		since time.Time
		want  []store.UsageTotal // nil: sumUsage's answer
	}{
		{"everything but the zero time", time.Time{}, nil},
		{"the last day", UsageEpoch.Add(-24 * time.Hour), nil},
		{"the last week", UsageEpoch.Add(-7 * 24 * time.Hour), nil},
		{"exactly at a log", at(300), nil},
		{"a nanosecond after a log", at(300).Add(time.Nanosecond), nil},
		{"in another zone", at(123).In(time.FixedZone("UTC-5", -5*3600)), nil},
		{"the future", UsageEpoch.Add(time.Nanosecond), []store.UsageTotal{}},
		{"the newest four logs, counted by hand", at(3), []store.UsageTotal{
			{Day: Day(3, 10), Upstream: "", Key: "ktwo", Model: "gpt-4o", Requests: 1, Errors: 0, InputTokens: 62, OutputTokens: 14, CacheReadTokens: 31, CacheWriteTokens: 2, CostUSD: 2.0 / 64},
			{Day: Day(3, 10), Upstream: "alpha", Key: "kone", Model: "gpt-4o", Requests: 1, Errors: 1, InputTokens: 0, OutputTokens: 0, Unpriced: 1},
			{Day: Day(3, 10), Upstream: "alpha", Key: "ktwo", Model: "claude-x", Requests: 1, Errors: 0, InputTokens: 93, OutputTokens: 21, CacheReadTokens: 46, CacheWriteTokens: 0, CostUSD: 3.0 / 64},
			{Day: Day(3, 10), Upstream: "bravo", Key: "kone", Model: "claude-x", Requests: 1, Errors: 0, InputTokens: 31, OutputTokens: 7, CacheReadTokens: 15, CacheWriteTokens: 1, CostUSD: 1.0 / 64},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			want := tt.want
			if want == nil {
				want = sumUsage(logs, tt.since)
			}
			got, err := s.UsageTotals(ctx, tt.since)
			if err != nil {
				t.Fatalf("UsageTotals: %v", err)
			}
			if got == nil || !reflect.DeepEqual(got, want) {
				t.Errorf("UsageTotals(%v) =\n%+v\nwant\n%+v", tt.since, got, want)
			}
		})
	}
	t.Run("the reference counts every log", func(t *testing.T) {
		var n int64
		for _, u := range sumUsage(logs, time.Time{}) {
			n += u.Requests
		}
		if n != int64(len(logs)) {
			t.Fatalf("sumUsage counts %d logs, want %d", n, len(logs))
		}
	})
}

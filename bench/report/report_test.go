package main

import (
	"bytes"
	"strings"
	"testing"

	"switchyard/bench/internal/record"
)

// rec is a JSON run with the given p50, p99 and req/s.
func rec(target, mode string, rate int, p50, p99, rps, rss float64) record.Record {
	return record.Record{Target: target, Mode: mode, Rate: rate, Concurrency: 64, Requests: 1000,
		P50Ms: p50, P99Ms: p99, RPS: rps, PeakRSSMB: rss}
}

// passing is a full matrix that meets every target.
func passing() []record.Record {
	stream := func(target string, ttft float64) record.Record {
		r := rec(target, record.ModeStream, 0, 90, 100, 300, 30)
		r.Concurrency, r.TTFTP50Ms = 32, ttft
		return r
	}
	return []record.Record{
		rec(direct, record.ModeRate, 1000, 0.20, 0.5, 1000, 20),
		rec(barehop, record.ModeRate, 1000, 0.40, 0.9, 1000, 20),
		rec(switchyard, record.ModeRate, 1000, 0.45, 1.0, 1000, 40), // 0.25 ÷ 0.20 = 1.25
		rec(direct, record.ModeRate, 3000, 0.30, 0.8, 3000, 20),
		rec(barehop, record.ModeRate, 3000, 0.50, 1.2, 3000, 20),
		rec(switchyard, record.ModeRate, 3000, 0.55, 1.9, 3000, 50),
		rec(direct, record.ModeMax, 0, 2, 9, 20000, 20),
		rec(barehop, record.ModeMax, 0, 6, 20, 10000, 20),
		rec(switchyard, record.ModeMax, 0, 7, 25, 8000, 59.9),
		stream(direct, 20.5), stream(barehop, 20.7), stream(switchyard, 21.5),
	}
}

func TestEvaluate(t *testing.T) {
	tests := []struct {
		name     string
		edit     func([]record.Record) []record.Record
		wantFail []string // names of the failing targets, by prefix
	}{
		{name: "all pass at the limits", edit: func(r []record.Record) []record.Record { return r }},
		{
			name:     "added p50 over 1.25× at 1000",
			edit:     func(r []record.Record) []record.Record { r[2].P50Ms = 0.46; return r },
			wantFail: []string{"added p50 at 1000"},
		},
		{
			name:     "p99 at 3000 of 2 ms",
			edit:     func(r []record.Record) []record.Record { r[5].P99Ms = 2; return r },
			wantFail: []string{"p99 at 3000"},
		},
		{
			name:     "max below 80%",
			edit:     func(r []record.Record) []record.Record { r[8].RPS = 7999; return r },
			wantFail: []string{"max req/s"},
		},
		{
			name:     "TTFT over 1 ms",
			edit:     func(r []record.Record) []record.Record { r[11].TTFTP50Ms = 21.6; return r },
			wantFail: []string{"added TTFT"},
		},
		{
			name:     "RSS of 60 MB",
			edit:     func(r []record.Record) []record.Record { r[8].PeakRSSMB = 60; return r },
			wantFail: []string{"peak RSS"},
		},
		{
			name:     "errors fail the check they feed",
			edit:     func(r []record.Record) []record.Record { r[4].Errors, r[4].FirstError = 3, "EOF"; return r },
			wantFail: []string{"added p50 at 3000"},
		},
		{
			name:     "missing runs fail",
			edit:     func(r []record.Record) []record.Record { return r[:6] },
			wantFail: []string{"max req/s", "added TTFT"},
		},
		{
			name:     "a bare hop faster than direct leaves no floor",
			edit:     func(r []record.Record) []record.Record { r[1].P50Ms = 0.19; return r },
			wantFail: []string{"added p50 at 1000"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			checks := evaluate(newSet(tt.edit(passing())), defaultLimits)
			if len(checks) != 6 {
				t.Fatalf("%d checks, want 6", len(checks))
			}
			var failed []string
			for _, c := range checks {
				if !c.pass {
					failed = append(failed, c.name)
				}
			}
			if len(failed) != len(tt.wantFail) {
				t.Fatalf("failed %q, want %q", failed, tt.wantFail)
			}
			for i, f := range failed {
				if !strings.HasPrefix(f, tt.wantFail[i]) {
					t.Errorf("failed %q, want %q", failed, tt.wantFail)
				}
			}
		})
	}
}

func TestMedian(t *testing.T) {
	runs := []record.Record{
		rec(switchyard, record.ModeMax, 0, 3, 30, 900, 40),
		rec(switchyard, record.ModeMax, 0, 1, 10, 1100, 55),
		rec(switchyard, record.ModeMax, 0, 2, 20, 1000, 45),
	}
	runs[1].Errors = 2
	s := newSet(runs)
	got, ok := s.get("max @64", switchyard)
	if !ok {
		t.Fatal("no record")
	}
	if got.P50Ms != 2 || got.P99Ms != 20 || got.RPS != 1000 || got.PeakRSSMB != 55 || got.Requests != 3000 || got.Errors != 2 {
		t.Errorf("median = %+v", got)
	}
	if s.rounds != 3 {
		t.Errorf("rounds = %d, want 3", s.rounds)
	}
}

func TestLoadAndWrite(t *testing.T) {
	in := `{"target":"direct","mode":"serial","requests":10,"rps":100,"p50_ms":0.1,"p99_ms":0.2}

{"target":"switchyard","mode":"serial","requests":10,"rps":90,"p50_ms":0.3,"p99_ms":0.4}
`
	recs, err := load(strings.NewReader(in))
	if err != nil || len(recs) != 2 {
		t.Fatalf("load = %d records, %v", len(recs), err)
	}
	var out bytes.Buffer
	newSet(recs).write(&out)
	if !strings.Contains(out.String(), "| serial | switchyard | 0.300 | 0.400 | 90 | 0 | 0.0 | 0 | 0 | +0.200 | — |") {
		t.Errorf("table:\n%s", out.String())
	}
	if _, err := load(strings.NewReader("{not json")); err == nil {
		t.Error("load accepted a broken line")
	}
}

package main

import (
	"bytes"
	"strings"
	"testing"

	"switchyard/bench/internal/record"
)

// longRec is a streams-mode run of n streams.
func longRec(target string, n int, cpuPerEvent, rssPerStream float64) record.Record {
	return record.Record{Target: target, Mode: record.ModeStreams, Concurrency: n, Requests: 3 * n, Events: 150 * int64(n),
		EventsPerSec: 10 * float64(n), TTFTP50Ms: 101, TTFTP99Ms: 130, CPUUsPerEvent: cpuPerEvent, RSSPerStreamKB: rssPerStream,
		CPUCores: cpuPerEvent * 10 * float64(n) / 1e6, PeakRSSMB: 30 + rssPerStream*float64(n)/1e3}
}

// TestEvaluateStreams judges each streams case against the bare hop's,
// with the limit inclusive, and only streams cases.
func TestEvaluateStreams(t *testing.T) {
	tests := []struct {
		name string
		recs []record.Record
		want []bool // pass of: CPU per event, RSS per stream, for each case
	}{
		{"at the limits", []record.Record{longRec(barehop, 1000, 10, 50), longRec(switchyard, 1000, 10, 50)}, []bool{true, true}},
		{"over in CPU", []record.Record{longRec(barehop, 1000, 10, 50), longRec(switchyard, 1000, 10.1, 40)}, []bool{false, true}},
		{"over in RSS, two cases", []record.Record{
			longRec(barehop, 1000, 10, 50), longRec(switchyard, 1000, 9, 51),
			longRec(barehop, 3000, 10, 50), longRec(switchyard, 3000, 9, 49),
		}, []bool{true, false, true, true}},
		{"errors fail", []record.Record{longRec(barehop, 1000, 10, 50), func() record.Record {
			r := longRec(switchyard, 1000, 5, 5)
			r.Errors, r.FirstError = 1, "status 502"
			return r
		}()}, []bool{false, false}},
		{"no streams case", passing(), nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := evaluateStreams(newSet(tt.recs), defaultStreamLimits)
			if len(got) != len(tt.want) {
				t.Fatalf("%d checks, want %d: %+v", len(got), len(tt.want), got)
			}
			for i, c := range got {
				if c.pass != tt.want[i] {
					t.Errorf("%s: pass %v, want %v (%s)", c.name, c.pass, tt.want[i], c.measured)
				}
			}
		})
	}
}

// TestWriteStreams: a streams-only results file prints only the streams
// table, with the ratios against the bare hop.
func TestWriteStreams(t *testing.T) {
	var out bytes.Buffer
	newSet([]record.Record{longRec(barehop, 1000, 10, 50), longRec(switchyard, 1000, 8, 40)}).write(&out)
	s := out.String()
	for _, want := range []string{
		"| 1000 streams | barehop | 101.000 | 130.000 | 10000 | 0 | 0.10 | 10.00 | 80.0 | 50.0 | — | — |",
		"| 1000 streams | switchyard | 101.000 | 130.000 | 10000 | 0 | 0.08 | 8.00 | 70.0 | 40.0 | 0.80× | 0.80× |",
	} {
		if !strings.Contains(s, want) {
			t.Errorf("missing %q in\n%s", want, s)
		}
	}
	if strings.Contains(s, "| req/s |") || strings.Contains(s, "| streams/s |") {
		t.Errorf("JSON or stream table printed for streams-only results:\n%s", s)
	}
}

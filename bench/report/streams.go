package main

import (
	"fmt"

	"switchyard/bench/internal/record"
)

// streamLimits are the targets of issue 26 for Switchyard holding many
// long streams: its cost per stream against the bare hop's in the same
// run.
type streamLimits struct {
	cpuPerEvent  float64 // CPU per event ÷ the bare hop's
	rssPerStream float64 // RSS per stream ÷ the bare hop's
}

var defaultStreamLimits = streamLimits{cpuPerEvent: 1.0, rssPerStream: 1.0}

// evaluateStreams judges every long-streams case: Switchyard's CPU per
// event and RSS per stream against the bare hop's.
func evaluateStreams(s *set, l streamLimits) []check {
	var out []check
	for _, c := range s.cases {
		b, bok := s.get(c, barehop)
		y, yok := s.get(c, switchyard)
		if (!bok || b.Mode != record.ModeStreams) && (!yok || y.Mode != record.ModeStreams) {
			continue
		}
		_, whyB := one(s, c, barehop)
		_, whyY := one(s, c, switchyard)
		why := whyB
		if why == "" {
			why = whyY
		}
		judge := func(name string, yv, bv, limit float64, unit string) check {
			ck := check{name: c + ": " + name + " ÷ bare hop's", limit: fmt.Sprintf("≤ %.2f×", limit)}
			switch {
			case why != "":
				ck.measured = why
			case bv <= 0:
				ck.measured = "bare hop: not measured"
			default:
				ck.measured = fmt.Sprintf("%.2f ÷ %.2f %s = %.2f×", yv, bv, unit, yv/bv)
				ck.pass = yv/bv <= limit+eps
			}
			return ck
		}
		out = append(out,
			judge("CPU per event", y.CPUUsPerEvent, b.CPUUsPerEvent, l.cpuPerEvent, "µs"),
			judge("RSS per stream", y.RSSPerStreamKB, b.RSSPerStreamKB, l.rssPerStream, "kB"))
	}
	return out
}

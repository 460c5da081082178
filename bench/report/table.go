package main

import (
	"fmt"
	"io"
	"slices"

	"switchyard/bench/internal/record"
)

// Targets, in the order of the tables.
const (
	direct     = "direct"
	barehop    = "barehop"
	switchyard = "switchyard"
	// switchyardTranslated is Switchyard serving an Anthropic client from
	// the OpenAI mock, through translation (stream case only).
	switchyardTranslated = "switchyard-translated"
)

// set is the records by case and target, with the cases in the order they
// first appeared. When a case ran more than once against a target (REPEAT
// in run.sh), its record is the median of the runs (see median).
type set struct {
	cases  []string
	by     map[[2]string]record.Record
	rounds int // the most runs of any one case and target
}

func newSet(recs []record.Record) *set {
	s := &set{by: make(map[[2]string]record.Record)}
	runs := make(map[[2]string][]record.Record)
	for _, r := range recs {
		c := r.Case()
		if !slices.Contains(s.cases, c) {
			s.cases = append(s.cases, c)
		}
		k := [2]string{c, r.Target}
		runs[k] = append(runs[k], r)
	}
	for k, rs := range runs {
		s.by[k] = median(rs)
		s.rounds = max(s.rounds, len(rs))
	}
	return s
}

// median combines runs of one case against one target: the median of each
// latency, rate and CPU figure (the lower middle one for an even count),
// the sum of requests and errors, and the highest peak RSS.
func median(rs []record.Record) record.Record {
	out := rs[0]
	if len(rs) == 1 {
		return out
	}
	mid := func(get func(record.Record) float64) float64 {
		v := make([]float64, len(rs))
		for i, r := range rs {
			v[i] = get(r)
		}
		slices.Sort(v)
		return v[(len(v)-1)/2]
	}
	out.Seconds = mid(func(r record.Record) float64 { return r.Seconds })
	out.RPS = mid(func(r record.Record) float64 { return r.RPS })
	out.P50Ms = mid(func(r record.Record) float64 { return r.P50Ms })
	out.P99Ms = mid(func(r record.Record) float64 { return r.P99Ms })
	out.TTFTP50Ms = mid(func(r record.Record) float64 { return r.TTFTP50Ms })
	out.TTFTP99Ms = mid(func(r record.Record) float64 { return r.TTFTP99Ms })
	out.CPUUsPerReq = mid(func(r record.Record) float64 { return r.CPUUsPerReq })
	out.LoadCPUUsPerReq = mid(func(r record.Record) float64 { return r.LoadCPUUsPerReq })
	out.EventsPerSec = mid(func(r record.Record) float64 { return r.EventsPerSec })
	out.CPUCores = mid(func(r record.Record) float64 { return r.CPUCores })
	out.CPUUsPerEvent = mid(func(r record.Record) float64 { return r.CPUUsPerEvent })
	out.RSSPerStreamKB = mid(func(r record.Record) float64 { return r.RSSPerStreamKB })
	out.Events = 0
	out.Requests, out.Errors = 0, 0
	for _, r := range rs {
		out.Requests += r.Requests
		out.Errors += r.Errors
		out.Events += r.Events
		out.PeakRSSMB = max(out.PeakRSSMB, r.PeakRSSMB)
		out.PeakRSSReset = out.PeakRSSReset && r.PeakRSSReset
		if out.FirstError == "" {
			out.FirstError = r.FirstError
		}
	}
	return out
}

// get returns the record of a case and target, and whether there is one.
func (s *set) get(c, target string) (record.Record, bool) {
	r, ok := s.by[[2]string{c, target}]
	return r, ok
}

// targets returns the targets that ran case c: direct, barehop, switchyard
// first, then any other in name order.
func (s *set) targets(c string) []string {
	var known, other []string
	for k := range s.by {
		if k[0] != c {
			continue
		}
		switch k[1] {
		case direct, barehop, switchyard:
		default:
			other = append(other, k[1])
		}
	}
	for _, t := range []string{direct, barehop, switchyard} {
		if _, ok := s.get(c, t); ok {
			known = append(known, t)
		}
	}
	slices.Sort(other)
	return append(known, other...)
}

// delta formats a − b in ms with a sign, or "—" when b is missing.
func delta(a float64, b float64, ok bool) string {
	if !ok {
		return "—"
	}
	return fmt.Sprintf("%+.3f", a-b)
}

// write prints the JSON table, the streaming table and the long-streams
// table, each only when it has rows.
func (s *set) write(w io.Writer) {
	if s.rounds > 1 {
		fmt.Fprintf(w, "Each figure is the median of %d rounds; errors are summed, peak RSS is the highest.\n\n", s.rounds)
	}
	if s.has(func(m string) bool { return m != record.ModeStream && m != record.ModeStreams }) {
		s.writeJSON(w)
	}
	if s.has(func(m string) bool { return m == record.ModeStream }) {
		s.writeStream(w)
	}
	if s.has(func(m string) bool { return m == record.ModeStreams }) {
		s.writeStreams(w)
	}
}

// has reports whether some record's mode satisfies ok.
func (s *set) has(ok func(mode string) bool) bool {
	for _, r := range s.by {
		if ok(r.Mode) {
			return true
		}
	}
	return false
}

// rows calls row for each case and target whose record is of a mode
// keep accepts, in the table's order.
func (s *set) rows(keep func(mode string) bool, row func(c, t string, r record.Record)) {
	for _, c := range s.cases {
		for _, t := range s.targets(c) {
			if r, _ := s.get(c, t); keep(r.Mode) {
				row(c, t, r)
			}
		}
	}
}

// writeJSON prints the table of the JSON runs.
func (s *set) writeJSON(w io.Writer) {
	fmt.Fprintln(w, "| case | target | p50 ms | p99 ms | req/s | errors | peak RSS MB | CPU µs/req | load CPU µs/req | Δp50 vs direct | Δp50 vs bare hop |")
	fmt.Fprintln(w, "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
	s.rows(func(m string) bool { return m != record.ModeStream && m != record.ModeStreams }, func(c, t string, r record.Record) {
		d, dok := s.get(c, direct)
		b, bok := s.get(c, barehop)
		fmt.Fprintf(w, "| %s | %s | %.3f | %.3f | %.0f | %d | %.1f | %.0f | %.0f | %s | %s |\n",
			c, t, r.P50Ms, r.P99Ms, r.RPS, r.Errors, r.PeakRSSMB, r.CPUUsPerReq, r.LoadCPUUsPerReq,
			delta(r.P50Ms, d.P50Ms, dok && t != direct), delta(r.P50Ms, b.P50Ms, bok && t != direct && t != barehop))
	})
	fmt.Fprintln(w)
}

// writeStream prints the table of the short streaming runs.
func (s *set) writeStream(w io.Writer) {
	fmt.Fprintln(w, "| case | target | TTFT p50 ms | TTFT p99 ms | total p50 ms | total p99 ms | streams/s | errors | peak RSS MB | CPU µs/stream | ΔTTFT p50 vs direct | ΔTTFT p50 vs bare hop |")
	fmt.Fprintln(w, "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
	s.rows(func(m string) bool { return m == record.ModeStream }, func(c, t string, r record.Record) {
		d, dok := s.get(c, direct)
		b, bok := s.get(c, barehop)
		fmt.Fprintf(w, "| %s | %s | %.3f | %.3f | %.3f | %.3f | %.0f | %d | %.1f | %.0f | %s | %s |\n",
			c, t, r.TTFTP50Ms, r.TTFTP99Ms, r.P50Ms, r.P99Ms, r.RPS, r.Errors, r.PeakRSSMB, r.CPUUsPerReq,
			delta(r.TTFTP50Ms, d.TTFTP50Ms, dok && t != direct), delta(r.TTFTP50Ms, b.TTFTP50Ms, bok && t != direct && t != barehop))
	})
	fmt.Fprintln(w)
}

// writeStreams prints the table of the long-streams runs: per event and
// per stream, against the bare hop.
func (s *set) writeStreams(w io.Writer) {
	fmt.Fprintln(w, "| case | target | TTFT p50 ms | TTFT p99 ms | events/s | errors | CPU cores | CPU µs/event | peak RSS MB | RSS kB/stream | CPU/event ÷ bare hop | RSS/stream ÷ bare hop |")
	fmt.Fprintln(w, "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
	s.rows(func(m string) bool { return m == record.ModeStreams }, func(c, t string, r record.Record) {
		b, bok := s.get(c, barehop)
		bok = bok && t != barehop && t != direct
		fmt.Fprintf(w, "| %s | %s | %.3f | %.3f | %.0f | %d | %.2f | %.2f | %.1f | %.1f | %s | %s |\n",
			c, t, r.TTFTP50Ms, r.TTFTP99Ms, r.EventsPerSec, r.Errors, r.CPUCores, r.CPUUsPerEvent, r.PeakRSSMB, r.RSSPerStreamKB,
			ratio(r.CPUUsPerEvent, b.CPUUsPerEvent, bok), ratio(r.RSSPerStreamKB, b.RSSPerStreamKB, bok))
	})
	fmt.Fprintln(w)
}

// ratio formats a ÷ b, or "—" when b is missing or 0.
func ratio(a, b float64, ok bool) string {
	if !ok || b <= 0 {
		return "—"
	}
	return fmt.Sprintf("%.2f×", a/b)
}

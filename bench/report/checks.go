package main

import (
	"fmt"
	"io"
	"slices"

	"switchyard/bench/internal/record"
)

// limits are the targets of issue 8 for Switchyard (default config).
type limits struct {
	addedP50Ratio float64 // Switchyard's added p50 ÷ the bare hop's, at each fixed rate
	rates         []int   // the fixed rates the ratio is judged at
	p99Rate       int     // the rate whose p99 is bounded
	p99Ms         float64 // p99 bound at p99Rate
	maxShare      float64 // max req/s as a share of the bare hop's
	ttftMs        float64 // TTFT p50 added over direct
	rssMB         float64 // peak RSS over every run
}

var defaultLimits = limits{
	addedP50Ratio: 1.25,
	rates:         []int{1000, 3000},
	p99Rate:       3000,
	p99Ms:         2,
	maxShare:      0.80,
	ttftMs:        1,
	rssMB:         60,
}

// eps absorbs float rounding, so that a figure exactly at an inclusive
// limit passes.
const eps = 1e-9

// check is one target, judged.
type check struct {
	name     string
	measured string
	limit    string
	pass     bool
}

// evaluate judges Switchyard against l. A target whose runs are missing or
// had errors fails, saying so.
func evaluate(s *set, l limits) []check {
	var out []check
	for _, rate := range l.rates {
		c := fmt.Sprintf("%d req/s", rate)
		ck := check{name: fmt.Sprintf("added p50 at %s ÷ bare hop's", c), limit: fmt.Sprintf("≤ %.2f×", l.addedP50Ratio)}
		d, b, y, why := three(s, c)
		switch {
		case why != "":
			ck.measured = why
		case b.P50Ms-d.P50Ms <= 0:
			ck.measured = fmt.Sprintf("bare hop added %+.3f ms: no floor to compare with", b.P50Ms-d.P50Ms)
			ck.pass = y.P50Ms-d.P50Ms <= 0
		default:
			ratio := (y.P50Ms - d.P50Ms) / (b.P50Ms - d.P50Ms)
			ck.measured = fmt.Sprintf("+%.3f ms ÷ +%.3f ms = %.2f×", y.P50Ms-d.P50Ms, b.P50Ms-d.P50Ms, ratio)
			ck.pass = ratio <= l.addedP50Ratio+eps
		}
		out = append(out, ck)
	}

	c := fmt.Sprintf("%d req/s", l.p99Rate)
	ck := check{name: "p99 at " + c, limit: fmt.Sprintf("< %.0f ms", l.p99Ms)}
	if y, why := one(s, c, switchyard); why != "" {
		ck.measured = why
	} else {
		ck.measured = fmt.Sprintf("%.3f ms", y.P99Ms)
		ck.pass = y.P99Ms < l.p99Ms
	}
	out = append(out, ck)

	ck = check{name: "max req/s ÷ bare hop's", limit: fmt.Sprintf("≥ %.0f%%", l.maxShare*100)}
	if c, ok := caseOf(s, record.ModeMax); !ok {
		ck.measured = "no max run"
	} else if _, b, y, why := three(s, c); why != "" {
		ck.measured = why
	} else {
		share := y.RPS / b.RPS
		ck.measured = fmt.Sprintf("%.0f ÷ %.0f = %.0f%%", y.RPS, b.RPS, share*100)
		ck.pass = share >= l.maxShare-eps
	}
	out = append(out, ck)

	ck = check{name: "added TTFT p50 vs direct", limit: fmt.Sprintf("≤ %.0f ms", l.ttftMs)}
	if c, ok := caseOf(s, record.ModeStream); !ok {
		ck.measured = "no stream run"
	} else if d, _, y, why := three(s, c); why != "" {
		ck.measured = why
	} else {
		added := y.TTFTP50Ms - d.TTFTP50Ms
		ck.measured = fmt.Sprintf("%.3f − %.3f = %+.3f ms", y.TTFTP50Ms, d.TTFTP50Ms, added)
		ck.pass = added <= l.ttftMs+eps
	}
	out = append(out, ck)

	if c, ok := caseOf(s, record.ModeStream); ok {
		if x, found := s.get(c, switchyardTranslated); found {
			ck = check{name: "added TTFT p50 of translation vs passthrough", limit: fmt.Sprintf("≤ %.0f ms", l.ttftMs)}
			if y, why := one(s, c, switchyard); why != "" {
				ck.measured = why
			} else {
				added := x.TTFTP50Ms - y.TTFTP50Ms
				ck.measured = fmt.Sprintf("%.3f − %.3f = %+.3f ms", x.TTFTP50Ms, y.TTFTP50Ms, added)
				ck.pass = added <= l.ttftMs+eps
			}
			out = append(out, ck)
		}
	}

	ck = check{name: "peak RSS over all runs", limit: fmt.Sprintf("< %.0f MB", l.rssMB)}
	peak, n := 0.0, 0
	for _, c := range s.cases {
		if y, ok := s.get(c, switchyard); ok {
			peak, n = max(peak, y.PeakRSSMB), n+1
		}
	}
	if n == 0 || peak == 0 {
		ck.measured = "not measured"
	} else {
		ck.measured = fmt.Sprintf("%.1f MB", peak)
		ck.pass = peak < l.rssMB
	}
	return append(out, ck)
}

// caseOf returns the first case of a mode.
func caseOf(s *set, mode string) (string, bool) {
	i := slices.IndexFunc(s.cases, func(c string) bool {
		for _, t := range []string{switchyard, barehop, direct} {
			if r, ok := s.get(c, t); ok {
				return r.Mode == mode
			}
		}
		return false
	})
	if i < 0 {
		return "", false
	}
	return s.cases[i], true
}

// one returns the record of case c and target t, or why it cannot be used.
func one(s *set, c, t string) (record.Record, string) {
	r, ok := s.get(c, t)
	switch {
	case !ok:
		return r, fmt.Sprintf("no %s run of %s", t, c)
	case r.Requests == 0:
		return r, fmt.Sprintf("%s %s: no requests", t, c)
	case r.Errors > 0:
		return r, fmt.Sprintf("%s %s: %d errors (%s)", t, c, r.Errors, r.FirstError)
	}
	return r, ""
}

// three returns case c's direct, bare hop and Switchyard records, or why
// they cannot be compared.
func three(s *set, c string) (d, b, y record.Record, why string) {
	if d, why = one(s, c, direct); why != "" {
		return
	}
	if b, why = one(s, c, barehop); why != "" {
		return
	}
	y, why = one(s, c, switchyard)
	return
}

// writeChecks prints the targets and a summary line.
func writeChecks(w io.Writer, checks []check) {
	fmt.Fprintln(w, "| Switchyard target | measured | limit | result |")
	fmt.Fprintln(w, "| --- | --- | --- | --- |")
	passed := 0
	for _, c := range checks {
		res := "FAIL"
		if c.pass {
			res, passed = "PASS", passed+1
		}
		fmt.Fprintf(w, "| %s | %s | %s | %s |\n", c.name, c.measured, c.limit, res)
	}
	fmt.Fprintf(w, "\n%d of %d targets pass.\n", passed, len(checks))
}

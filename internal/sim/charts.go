package sim

import (
	"math"
	"slices"
	"strconv"
	"time"

	"switchyard/internal/health"
)

// bucketX returns the plot x (minutes) of bucket b's start and end, the
// last one cut at the scenario's end.
func (rp *Report) bucketX(b int) (float64, float64) {
	w := rp.rec.width
	lo := minutes(w * time.Duration(b))
	hi := math.Min(minutes(w*time.Duration(b+1)), minutes(rp.sc.Duration))
	return lo, hi
}

// shareChart is the stacked share of attempts per upstream per bucket, in
// percent, with each upstream's configured cumulative share dashed.
func (rp *Report) shareChart() []byte {
	rec := rp.rec
	s := newSVG(chartWidth, chartHeight, rp.Summary.Scenario+": traffic share per upstream")
	p := newPlot(chartHeight, minutes(rp.sc.Duration), 100)
	s.axes(p, "share of upstream attempts (%)", true)
	for b := range rec.n {
		total := 0
		for u := range rec.nu {
			total += int(rec.attempts[b*rec.nu+u])
		}
		if total == 0 {
			continue
		}
		lo, hi := rp.bucketX(b)
		cum := 0.0
		for u := range rec.nu {
			v := 100 * float64(rec.attempts[b*rec.nu+u]) / float64(total)
			if v > 0 {
				s.rect(p.px(lo), p.py(cum+v), p.px(hi)-p.px(lo), p.py(cum)-p.py(cum+v), colour(u), crisp)
			}
			cum += v
		}
	}
	items := make([]legendItem, 0, rec.nu+1)
	cum := 0.0
	for u, us := range rp.Summary.Upstreams {
		label := legendName(us.Name) + " (w " + strconv.Itoa(us.Weight)
		if us.Priority > 0 {
			label += ", tier " + strconv.Itoa(us.Priority)
		}
		items = append(items, legendItem{label: label + ")", colour: colour(u), box: true})
		if c := us.ConfiguredShare; c > 0 && u < rec.nu-1 {
			cum += 100 * c
			s.line(p.x, p.py(cum), p.x+p.w, p.py(cum), "#222222", 1.5, "6 4")
		}
	}
	items = append(items, legendItem{label: "configured split", colour: "#222222", dash: "6 4"})
	s.legend(p, items)
	return s.bytes()
}

// latencyChart draws p50/p95/p99 of successful requests' latency and the
// p95 TTFT of streams, per bucket of request start, in seconds.
func (rp *Report) latencyChart() []byte {
	rec := rp.rec
	type line struct {
		label, colour, dash string
		src                 [][]float32
		q                   float64
	}
	lines := []line{
		{"latency p50", "#4e79a7", "", rec.lat, 0.50},
		{"latency p95", "#f28e2b", "", rec.lat, 0.95},
		{"latency p99", "#e15759", "", rec.lat, 0.99},
		{"TTFT p95 (streams)", "#59a14f", "6 4", rec.ttft, 0.95},
	}
	pts := make([][]float64, len(lines))
	top := 0.0
	for i, l := range lines {
		for b := range rec.n {
			lo, hi := rp.bucketX(b)
			v := math.NaN()
			if len(l.src[b]) > 0 {
				v = quantile(l.src[b], l.q) / 1000
				top = math.Max(top, v)
			}
			pts[i] = append(pts[i], (lo+hi)/2, v)
		}
	}
	s := newSVG(chartWidth, chartHeight, rp.Summary.Scenario+": latency percentiles of successful requests")
	p := newPlot(chartHeight, minutes(rp.sc.Duration), niceMax(top, 5))
	s.axes(p, "latency (seconds)", true)
	items := make([]legendItem, len(lines))
	for i, l := range lines {
		s.polyline(scaled(p, pts[i]), l.colour, 2, l.dash)
		items[i] = legendItem{label: l.label, colour: l.colour, dash: l.dash}
	}
	s.legend(p, items)
	return s.bytes()
}

// errorsChart draws, per minute, each upstream's 429s (solid) and errors
// (dashed) and the client-visible errors (black).
func (rp *Report) errorsChart() []byte {
	rec := rp.rec
	perMin := 1 / minutes(rec.width)
	series := make([][]float64, 0, 2*rec.nu+1)
	top := 0.0
	add := func(val func(b int) float64) {
		var pts []float64
		for b := range rec.n {
			lo, hi := rp.bucketX(b)
			v := val(b) * perMin
			top = math.Max(top, v)
			pts = append(pts, (lo+hi)/2, v)
		}
		series = append(series, pts)
	}
	for u := range rec.nu {
		add(func(b int) float64 { return float64(rec.r429[b*rec.nu+u]) })
		add(func(b int) float64 { return float64(rec.errs[b*rec.nu+u]) })
	}
	add(func(b int) float64 { return float64(rec.failed[b]) })
	s := newSVG(chartWidth, chartHeight, rp.Summary.Scenario+": upstream 429s and errors, client-visible errors")
	p := newPlot(chartHeight, minutes(rp.sc.Duration), niceMax(math.Max(top, 1), 5))
	s.axes(p, "per minute", true)
	items := make([]legendItem, 0, rec.nu+3)
	for u := range rec.nu {
		s.polyline(scaled(p, series[2*u]), colour(u), 2, "")
		s.polyline(scaled(p, series[2*u+1]), colour(u), 2, "5 3")
		items = append(items, legendItem{label: legendName(rp.names[u]), colour: colour(u), box: true})
	}
	s.polyline(scaled(p, series[2*rec.nu]), "#000000", 2.5, "")
	items = append(items,
		legendItem{label: "429s (solid)", colour: "#555555"},
		legendItem{label: "5xx/timeouts (dashed)", colour: "#555555", dash: "5 3"},
		legendItem{label: "client-visible errors", colour: "#000000"})
	s.legend(p, items)
	return s.bytes()
}

// crisp keeps adjacent bars from showing hairline seams.
const crisp = ` shape-rendering="crispEdges"`

// Breaker state colours.
const (
	colourClosed   = "#cfe8c8"
	colourOpen     = "#d62728"
	colourHalfOpen = "#ff9f1c"
)

// breakerChart draws one row per upstream, coloured by breaker state over time.
func (rp *Report) breakerChart() []byte {
	rec := rp.rec
	rowH := 30.0
	height := marginTop + marginBot + int(rowH)*max(rec.nu, 1) + 12
	s := newSVG(chartWidth, height, rp.Summary.Scenario+": circuit breaker state per upstream")
	end := minutes(rp.sc.Duration)
	p := newPlot(height, end, 1)
	s.axes(p, "", false)
	for u := range rec.nu {
		y := p.y + 6 + float64(u)*rowH
		at, st := 0.0, health.Closed
		draw := func(to float64) {
			if to > at {
				s.rect(p.px(at), y, p.px(math.Min(to, end))-p.px(at), rowH-8, stateColour(st), crisp)
			}
		}
		for _, c := range rec.states[u] {
			t := math.Min(minutes(c.at), end)
			draw(t)
			at, st = t, c.to
		}
		draw(end)
		s.text(p.x-8, y+rowH/2, "end", 12, "", legendName(rp.names[u]))
	}
	s.legend(p, []legendItem{
		{label: "closed", colour: colourClosed, box: true},
		{label: "open", colour: colourOpen, box: true},
		{label: "half-open", colour: colourHalfOpen, box: true},
	})
	return s.bytes()
}

func stateColour(st health.State) string {
	switch st {
	case health.Open:
		return colourOpen
	case health.HalfOpen:
		return colourHalfOpen
	}
	return colourClosed
}

// legendName shortens a long upstream name to fit the legend.
func legendName(n string) string {
	if len(n) > 20 {
		return n[:19] + "…"
	}
	return n
}

// quantile returns the nearest-rank q-quantile of v (sorting a copy).
func quantile(v []float32, q float64) float64 {
	c := slices.Clone(v)
	slices.Sort(c)
	return float64(c[max(int(math.Ceil(q*float64(len(c))))-1, 0)])
}

// scaled maps data points to plot coordinates, keeping NaN gaps.
func scaled(p plot, pts []float64) []float64 {
	out := make([]float64, len(pts))
	for i := 0; i+1 < len(pts); i += 2 {
		out[i] = p.px(pts[i])
		out[i+1] = pts[i+1]
		if !math.IsNaN(pts[i+1]) {
			out[i+1] = p.py(pts[i+1])
		}
	}
	return out
}

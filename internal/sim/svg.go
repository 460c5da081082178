package sim

import (
	"bytes"
	"encoding/xml"
	"math"
	"strconv"
)

// palette is the fixed colour of the i-th upstream (Tableau 10).
var palette = [...]string{
	"#4e79a7", "#f28e2b", "#59a14f", "#e15759", "#76b7b2",
	"#edc948", "#b07aa1", "#ff9da7", "#9c755f", "#bab0ac",
}

func colour(i int) string { return palette[i%len(palette)] }

// Chart geometry: every chart is chartWidth wide with the plot area inset
// by these margins; the legend sits right of the plot.
const (
	chartWidth  = 960
	chartHeight = 380
	marginLeft  = 72
	marginRight = 200
	marginTop   = 48
	marginBot   = 56
)

// svgDoc writes one SVG document. Numbers are printed with one decimal, so
// the same chart is always the same bytes.
type svgDoc struct{ b bytes.Buffer }

func newSVG(w, h int, title string) *svgDoc {
	s := &svgDoc{}
	s.b.WriteString(`<?xml version="1.0" encoding="UTF-8"?>` + "\n")
	s.b.WriteString(`<svg xmlns="http://www.w3.org/2000/svg" width="` + strconv.Itoa(w) + `" height="` + strconv.Itoa(h) +
		`" viewBox="0 0 ` + strconv.Itoa(w) + " " + strconv.Itoa(h) + `" font-family="Helvetica, Arial, sans-serif">` + "\n")
	s.rect(0, 0, float64(w), float64(h), "#ffffff", "")
	s.text(float64(w)/2, 26, "middle", 17, "bold", title)
	return s
}

// f formats a coordinate with one decimal.
func f(v float64) string { return strconv.FormatFloat(v, 'f', 1, 64) }

func esc(s string) string {
	var b bytes.Buffer
	_ = xml.EscapeText(&b, []byte(s))
	return b.String()
}

func (s *svgDoc) rect(x, y, w, h float64, fill, extra string) {
	s.b.WriteString(`<rect x="` + f(x) + `" y="` + f(y) + `" width="` + f(w) + `" height="` + f(h) + `" fill="` + fill + `"` + extra + "/>\n")
}

func (s *svgDoc) line(x1, y1, x2, y2 float64, stroke string, width float64, dash string) {
	s.b.WriteString(`<line x1="` + f(x1) + `" y1="` + f(y1) + `" x2="` + f(x2) + `" y2="` + f(y2) + `" stroke="` + stroke + `" stroke-width="` + f(width) + `"`)
	if dash != "" {
		s.b.WriteString(` stroke-dasharray="` + dash + `"`)
	}
	s.b.WriteString("/>\n")
}

// text writes a label; weight is "" or "bold".
func (s *svgDoc) text(x, y float64, anchor string, size int, weight, str string) {
	s.b.WriteString(`<text x="` + f(x) + `" y="` + f(y) + `" text-anchor="` + anchor + `" font-size="` + strconv.Itoa(size) + `"`)
	if weight != "" {
		s.b.WriteString(` font-weight="` + weight + `"`)
	}
	s.b.WriteString(`>` + esc(str) + "</text>\n")
}

// vtext writes a label rotated to read bottom-up (a y-axis title).
func (s *svgDoc) vtext(x, y float64, size int, str string) {
	s.b.WriteString(`<text x="` + f(x) + `" y="` + f(y) + `" text-anchor="middle" font-size="` + strconv.Itoa(size) +
		`" transform="rotate(-90 ` + f(x) + " " + f(y) + `)">` + esc(str) + "</text>\n")
}

// polyline draws the points (x0, y0, x1, y1, …); NaN y values break it.
func (s *svgDoc) polyline(pts []float64, stroke string, width float64, dash string) {
	var seg []float64
	flush := func() {
		if len(seg) >= 4 {
			s.b.WriteString(`<polyline fill="none" stroke="` + stroke + `" stroke-width="` + f(width) + `" stroke-linejoin="round"`)
			if dash != "" {
				s.b.WriteString(` stroke-dasharray="` + dash + `"`)
			}
			s.b.WriteString(` points="`)
			for i := 0; i < len(seg); i += 2 {
				if i > 0 {
					s.b.WriteByte(' ')
				}
				s.b.WriteString(f(seg[i]) + "," + f(seg[i+1]))
			}
			s.b.WriteString("\"/>\n")
		}
		seg = seg[:0]
	}
	for i := 0; i+1 < len(pts); i += 2 {
		if math.IsNaN(pts[i+1]) {
			flush()
			continue
		}
		seg = append(seg, pts[i], pts[i+1])
	}
	flush()
}

func (s *svgDoc) bytes() []byte {
	s.b.WriteString("</svg>\n")
	return s.b.Bytes()
}

// plot maps data coordinates (x in minutes from 0 to xmax, y from 0 to
// ymax) onto the chart's plot area.
type plot struct {
	x, y, w, h float64
	xmax, ymax float64
}

func newPlot(height int, xmax, ymax float64) plot {
	return plot{
		x: marginLeft, y: marginTop, w: chartWidth - marginLeft - marginRight, h: float64(height) - marginTop - marginBot,
		xmax: max(xmax, 1e-9), ymax: max(ymax, 1e-9),
	}
}

func (p plot) px(x float64) float64 { return p.x + p.w*x/p.xmax }
func (p plot) py(y float64) float64 { return p.y + p.h - p.h*min(y, p.ymax)/p.ymax }

// niceStep returns a tick step of 1, 2 or 5 × 10^k giving at most n ticks up to v.
func niceStep(v float64, n int) float64 {
	if v <= 0 {
		return 1
	}
	raw := v / float64(n)
	mag := math.Pow(10, math.Floor(math.Log10(raw)))
	for _, m := range [...]float64{1, 2, 5, 10} {
		if m*mag >= raw {
			return m * mag
		}
	}
	return 10 * mag
}

// niceMax rounds v up to a whole tick step.
func niceMax(v float64, n int) float64 {
	step := niceStep(v, n)
	return math.Max(step, math.Ceil(v/step)*step)
}

// tickText prints a tick value with as few decimals as its step needs.
func tickText(v, step float64) string {
	d := 0
	if step < 1 {
		d = int(math.Ceil(-math.Log10(step)))
	}
	return strconv.FormatFloat(v, 'f', d, 64)
}

// axes draws the plot's frame, grid, ticks with values and axis titles;
// the x axis is time in minutes. withY false draws no y ticks (a timeline).
func (s *svgDoc) axes(p plot, ylabel string, withY bool) {
	xs := niceStep(p.xmax, 10)
	if p.xmax >= 4 {
		xs = max(xs, 1) // whole minutes
	}
	for v := 0.0; v <= p.xmax+xs*1e-9; v += xs {
		x := p.px(v)
		s.line(x, p.y, x, p.y+p.h, "#e6e6e6", 1, "")
		s.line(x, p.y+p.h, x, p.y+p.h+5, "#333333", 1, "")
		s.text(x, p.y+p.h+19, "middle", 12, "", tickText(v, xs))
	}
	if withY {
		ys := niceStep(p.ymax, 5)
		for v := 0.0; v <= p.ymax+ys*1e-9; v += ys {
			y := p.py(v)
			s.line(p.x, y, p.x+p.w, y, "#e6e6e6", 1, "")
			s.line(p.x-5, y, p.x, y, "#333333", 1, "")
			s.text(p.x-8, y+4, "end", 12, "", tickText(v, ys))
		}
		s.vtext(18, p.y+p.h/2, 13, ylabel)
	}
	s.line(p.x, p.y+p.h, p.x+p.w, p.y+p.h, "#333333", 1.2, "")
	s.line(p.x, p.y, p.x, p.y+p.h, "#333333", 1.2, "")
	s.text(p.x+p.w/2, p.y+p.h+42, "middle", 13, "", "time (minutes)")
}

// legendItem is one legend entry: a swatch (a filled box, or a line with
// an optional dash pattern) and its label.
type legendItem struct {
	label, colour, dash string
	box                 bool
}

// legend draws items in a column right of plot p.
func (s *svgDoc) legend(p plot, items []legendItem) {
	x, y := p.x+p.w+18, p.y+8
	s.text(x, y, "start", 13, "bold", "Legend")
	for i, it := range items {
		yy := y + 20 + float64(i)*20
		if it.box {
			s.rect(x, yy-10, 14, 12, it.colour, "")
		} else {
			s.line(x, yy-4, x+22, yy-4, it.colour, 2.5, it.dash)
		}
		s.text(x+30, yy, "start", 12, "", it.label)
	}
}

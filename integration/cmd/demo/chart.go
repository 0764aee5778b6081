package main

// The timeline chart: one panel per story, each request a dot at (start time, latency),
// coloured by the node that served it, a red cross when it failed, the demo's and the
// driver's moments as vertical lines, and under each panel a strip of the serving node
// over time. Plain SVG written with the standard library; chart_test.go parses it.

import (
	"bufio"
	"encoding/xml"
	"fmt"
	"io"
	"math"
	"strings"
	"time"
)

// Chart geometry, in SVG user units (pixels).
const (
	chartW     = 960.0
	plotLeft   = 84.0
	plotRight  = chartW - 24
	plotH      = 190.0
	stripH     = 12.0
	panelTop   = 34.0 // panel title above the plot
	panelGap   = 48.0 // below the strip: time axis labels, space
	chartTop   = 44.0 // the chart title
	legendH    = 40.0 // below the last panel
	minLatency = 50 * time.Microsecond
)

var nodeColour = [4]string{"#8c8c8c", "#1f77b4", "#ff7f0e", "#2ca02c"} // unknown, node1..3

const failColour = "#d62728"

// markStyle is the colour and short label of a mark kind on the chart.
func markStyle(k markKind) (colour, label string) {
	switch k {
	case markKill:
		return failColour, "kill -9 node1"
	case markPromote:
		return "#9467bd", "node2 promoted"
	case markRepoint:
		return "#9467bd", "node3 follows node2"
	case markRestart:
		return "#555555", "restart node1"
	case markBack:
		return "#555555", "node1 up"
	case markSwitch:
		return "#222222", "pool moves"
	case markFallBack:
		return "#222222", "fall-back"
	}
	return "#555555", ""
}

// chartLabel is what the chart writes at a mark: its own short label if any, else its
// kind's.
func chartLabel(m mark) string {
	if m.label != "" {
		return m.label
	}
	_, l := markStyle(m.kind)
	return l
}

// writeChart draws the stories as one SVG document.
func writeChart(out io.Writer, title string, stories []*story) error {
	w := bufio.NewWriter(out)
	end := time.Second
	maxLat := 2 * time.Second
	for _, s := range stories {
		end = max(end, s.end)
		for _, r := range s.reqs {
			end = max(end, r.start)
			maxLat = max(maxLat, r.latency)
		}
		for _, m := range s.marks {
			end = max(end, m.at)
		}
	}
	height := chartTop + float64(len(stories))*(panelTop+plotH+stripH+panelGap) + legendH
	fmt.Fprintf(w, `<svg xmlns="http://www.w3.org/2000/svg" width="%.0f" height="%.0f" viewBox="0 0 %.0f %.0f" font-family="Helvetica, Arial, sans-serif" font-size="12">`+"\n",
		chartW, height, chartW, height)
	fmt.Fprintf(w, "<title>%s</title>\n", esc(title))
	fmt.Fprintf(w, "<desc>%s</desc>\n", esc("Per-request latency (log scale) over time, coloured by the node that served "+
		"each request; red crosses are failed requests; vertical lines mark the kill of the primary, the promotion, "+
		"the restart and the driver's switches. The strip under each panel shows the serving node over time."))
	fmt.Fprintf(w, `<rect width="100%%" height="100%%" fill="#ffffff"/>`+"\n")
	fmt.Fprintf(w, `<text x="%.0f" y="26" font-size="16" font-weight="bold">%s</text>`+"\n", plotLeft, esc(title))

	x := func(t time.Duration) float64 {
		return plotLeft + (plotRight-plotLeft)*t.Seconds()/end.Seconds()
	}
	lo, hi := math.Log10(minLatency.Seconds()), math.Log10(maxLat.Seconds()*1.3)
	for i, s := range stories {
		top := chartTop + float64(i)*(panelTop+plotH+stripH+panelGap)
		plotTop := top + panelTop
		y := func(d time.Duration) float64 {
			v := math.Log10(max(d, minLatency).Seconds())
			return plotTop + plotH - plotH*(v-lo)/(hi-lo)
		}
		drawPanel(w, s, top, plotTop, end, x, y)
	}
	drawLegend(w, height-legendH+14, stories)
	fmt.Fprintln(w, "</svg>")
	return w.Flush()
}

func drawPanel(w *bufio.Writer, s *story, top, plotTop float64, end time.Duration,
	x func(time.Duration) float64, y func(time.Duration) float64) {
	plotBottom := plotTop + plotH
	fmt.Fprintf(w, `<g class="panel" id="story%d">`+"\n", s.num)
	fmt.Fprintf(w, `<text x="%.0f" y="%.1f" font-size="14" font-weight="bold">%s</text>`+"\n",
		plotLeft, top+16, esc(s.title))
	fmt.Fprintf(w, `<text x="%.0f" y="%.1f" fill="#444444">%s</text>`+"\n", plotLeft, top+30, esc(chartSubtitle(s)))

	// Axes and grid: latency decades, whole seconds.
	fmt.Fprintf(w, `<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="#fafafa" stroke="#bbbbbb"/>`+"\n",
		plotLeft, plotTop, plotRight-plotLeft, plotH)
	for _, d := range []time.Duration{100 * time.Microsecond, time.Millisecond, 10 * time.Millisecond,
		100 * time.Millisecond, time.Second} {
		yy := y(d)
		if yy < plotTop || yy > plotBottom {
			continue
		}
		fmt.Fprintf(w, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#e3e3e3"/>`+"\n", plotLeft, yy, plotRight, yy)
		fmt.Fprintf(w, `<text x="%.1f" y="%.1f" text-anchor="end" fill="#555555">%s</text>`+"\n", plotLeft-6, yy+4, esc(axisLatency(d)))
	}
	fmt.Fprintf(w, `<text transform="translate(%.1f %.1f) rotate(-90)" text-anchor="middle" fill="#555555">latency (log)</text>`+"\n",
		plotLeft-62, plotTop+plotH/2)
	stripTop := plotBottom + 4
	for sec := time.Duration(0); sec <= end; sec += time.Second {
		xx := x(sec)
		fmt.Fprintf(w, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#e3e3e3"/>`+"\n", xx, plotTop, xx, plotBottom)
		fmt.Fprintf(w, `<text x="%.1f" y="%.1f" text-anchor="middle" fill="#555555">%ds</text>`+"\n",
			xx, stripTop+stripH+14, int(sec.Seconds()))
	}
	fmt.Fprintf(w, `<text x="%.1f" y="%.1f" text-anchor="end" fill="#555555">served by</text>`+"\n", plotLeft-6, stripTop+stripH-2)

	// The serving node strip: runs of requests (by start) with the same outcome.
	type seg struct {
		from, to time.Duration
		node     int // -1: failed
	}
	var segs []seg
	for k, r := range s.reqs {
		n := r.node
		if r.err != "" {
			n = -1
		}
		to := end
		if k+1 < len(s.reqs) {
			to = s.reqs[k+1].start
		}
		if len(segs) > 0 && segs[len(segs)-1].node == n {
			segs[len(segs)-1].to = to
			continue
		}
		segs = append(segs, seg{r.start, to, n})
	}
	fmt.Fprintln(w, `<g class="strip">`)
	for _, g := range segs {
		colour := failColour
		if g.node >= 0 {
			colour = nodeColour[g.node]
		}
		fmt.Fprintf(w, `<rect x="%.1f" y="%.1f" width="%.2f" height="%.0f" fill="%s"/>`+"\n",
			x(g.from), stripTop, max(x(g.to)-x(g.from), 0.5), stripH, colour)
	}
	fmt.Fprintln(w, `</g>`)

	// Marks: a dashed line over plot and strip, a label at the top, on the first row
	// where it overlaps no earlier label.
	var rowEnd []float64 // per row of labels, where its last label ends
	fmt.Fprintln(w, `<g class="marks">`)
	for _, m := range s.marks {
		colour, _ := markStyle(m.kind)
		label := chartLabel(m)
		xx := x(m.at)
		fmt.Fprintf(w, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="%s" stroke-width="1.2" stroke-dasharray="4 3"/>`+"\n",
			xx, plotTop, xx, stripTop+stripH, colour)
		width := 6.2 * float64(len(label)) // a rough width of 12 px Helvetica
		anchor, from, to := "start", xx+3, xx+3+width
		if to > plotRight {
			anchor, from, to = "end", xx-3-width, xx-3
		}
		row := 0
		for row < len(rowEnd) && from <= rowEnd[row]+6 {
			row++
		}
		if row == len(rowEnd) {
			rowEnd = append(rowEnd, 0)
		}
		rowEnd[row] = to
		lx := from
		if anchor == "end" {
			lx = to
		}
		fmt.Fprintf(w, `<text x="%.1f" y="%.1f" text-anchor="%s" fill="%s" stroke="#fafafa" stroke-width="3" paint-order="stroke">%s</text>`+"\n",
			lx, plotTop+13+float64(row)*14, anchor, colour, esc(label))
	}
	fmt.Fprintln(w, `</g>`)

	// The requests: dots per node, crosses for failures.
	for n := 0; n <= 3; n++ {
		var b strings.Builder
		for _, r := range s.reqs {
			if r.err == "" && r.node == n {
				fmt.Fprintf(&b, `<circle cx="%.1f" cy="%.1f" r="2"/>`, x(r.start), y(r.latency))
			}
		}
		if b.Len() > 0 {
			fmt.Fprintf(w, `<g class="node%d" fill="%s" fill-opacity="0.75">%s</g>`+"\n", n, nodeColour[n], b.String())
		}
	}
	// A failed request: a cross at its start, and a faint line to its end, the time it
	// waited.
	var b, waits strings.Builder
	for _, r := range s.reqs {
		if r.err != "" {
			cx, cy := x(r.start), y(r.latency)
			fmt.Fprintf(&b, "M%.1f %.1fl6 6m0-6l-6 6", cx-3, cy-3)
			if ex := x(r.end()); ex-cx > 4 {
				fmt.Fprintf(&waits, "M%.1f %.1fH%.1f", cx+3, cy, ex)
			}
		}
	}
	if waits.Len() > 0 {
		fmt.Fprintf(w, `<path class="waits" d="%s" stroke="%s" stroke-opacity="0.35" fill="none"/>`+"\n", waits.String(), failColour)
	}
	if b.Len() > 0 {
		fmt.Fprintf(w, `<path class="failed" d="%s" stroke="%s" stroke-width="1.6" fill="none"/>`+"\n", b.String(), failColour)
	}
	fmt.Fprintln(w, `</g>`)
}

func drawLegend(w *bufio.Writer, yy float64, stories []*story) {
	used := map[int]bool{}
	for _, s := range stories {
		for _, r := range s.reqs {
			if r.err == "" {
				used[r.node] = true
			}
		}
	}
	xx := plotLeft
	fmt.Fprintln(w, `<g class="legend">`)
	for n := 0; n <= 3; n++ {
		if !used[n] {
			continue
		}
		name := fmt.Sprint("node", n)
		if n == 0 {
			name = "unknown"
		}
		fmt.Fprintf(w, `<circle cx="%.1f" cy="%.1f" r="4" fill="%s"/>`, xx+4, yy-4, nodeColour[n])
		fmt.Fprintf(w, `<text x="%.1f" y="%.1f">served by %s</text>`+"\n", xx+12, yy, name)
		xx += 122
	}
	fmt.Fprintf(w, `<path d="M%.1f %.1fl8 8m0-8l-8 8" stroke="%s" stroke-width="1.6"/>`, xx, yy-8, failColour)
	fmt.Fprintf(w, `<text x="%.1f" y="%.1f">failed (line: how long it waited)</text>`+"\n", xx+12, yy)
	xx += 222
	fmt.Fprintf(w, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#555555" stroke-dasharray="4 3"/>`, xx, yy-12, xx, yy+2)
	fmt.Fprintf(w, `<text x="%.1f" y="%.1f">a moment of the story</text>`+"\n", xx+6, yy)
	fmt.Fprintf(w, `<text x="%.1f" y="%.1f" text-anchor="end" fill="#555555">x: when a request began</text>`+"\n", plotRight, yy)
	fmt.Fprintln(w, `</g>`)
}

// axisLatency labels a latency tick: "100µs", "1ms", "1s".
func axisLatency(d time.Duration) string {
	switch {
	case d >= time.Second:
		return fmt.Sprintf("%gs", d.Seconds())
	case d >= time.Millisecond:
		return fmt.Sprintf("%gms", float64(d)/float64(time.Millisecond))
	}
	return fmt.Sprintf("%gµs", float64(d)/float64(time.Microsecond))
}

// esc escapes text for SVG character data and attribute values.
func esc(s string) string {
	var b strings.Builder
	_ = xml.EscapeText(&b, []byte(s))
	return b.String()
}

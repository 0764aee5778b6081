package main

import (
	"bytes"
	"encoding/xml"
	"errors"
	"io"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// svgDoc is what the test reads back of a chart: every element with its attributes, and
// the text of every <text>.
type svgDoc struct {
	root          xml.StartElement
	elems         []xml.StartElement
	texts         []string
	labels        []svgText // the <text> elements inside a <g class="marks">
	width, height float64
}

type svgText struct {
	elem xml.StartElement
	text string
}

// parseSVG decodes the whole document with encoding/xml, strictly: a malformed document,
// an unknown entity or text outside the root element fails the test.
func parseSVG(t *testing.T, b []byte) svgDoc {
	t.Helper()
	d := xml.NewDecoder(bytes.NewReader(b))
	d.Strict = true
	var doc svgDoc
	depth, inText := 0, false
	var text strings.Builder
	var groups []string // the classes of the open <g> elements
	var textElem xml.StartElement
	for {
		tok, err := d.Token()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("the chart is not well-formed XML: %v", err)
		}
		switch tok := tok.(type) {
		case xml.StartElement:
			if depth == 0 {
				if doc.root.Name.Local != "" {
					t.Fatalf("a second root element <%s>", tok.Name.Local)
				}
				doc.root = tok.Copy()
			}
			depth++
			doc.elems = append(doc.elems, tok.Copy())
			switch tok.Name.Local {
			case "text":
				inText = true
				text.Reset()
				textElem = tok.Copy()
			case "g":
				groups = append(groups, attr(tok, "class"))
			}
		case xml.EndElement:
			depth--
			switch tok.Name.Local {
			case "text":
				inText = false
				doc.texts = append(doc.texts, text.String())
				if len(groups) > 0 && groups[len(groups)-1] == "marks" {
					doc.labels = append(doc.labels, svgText{textElem, text.String()})
				}
			case "g":
				groups = groups[:len(groups)-1]
			}
		case xml.CharData:
			if inText {
				text.Write(tok)
			} else if depth == 0 && strings.TrimSpace(string(tok)) != "" {
				t.Fatalf("text outside the root element: %q", tok)
			}
		}
	}
	if doc.root.Name.Local != "svg" || doc.root.Name.Space != "http://www.w3.org/2000/svg" {
		t.Fatalf("root element %v, want svg in the SVG namespace", doc.root.Name)
	}
	doc.width, doc.height = attrNum(t, doc.root, "width"), attrNum(t, doc.root, "height")
	if vb := attr(doc.root, "viewBox"); vb != "0 0 "+attr(doc.root, "width")+" "+attr(doc.root, "height") {
		t.Errorf("viewBox %q does not match width and height", vb)
	}
	return doc
}

func attr(e xml.StartElement, name string) string {
	for _, a := range e.Attr {
		if a.Name.Local == name {
			return a.Value
		}
	}
	return ""
}

func attrNum(t *testing.T, e xml.StartElement, name string) float64 {
	t.Helper()
	v, err := strconv.ParseFloat(attr(e, name), 64)
	if err != nil || math.IsNaN(v) || math.IsInf(v, 0) {
		t.Fatalf("<%s %s=%q>: not a number", e.Name.Local, name, attr(e, name))
	}
	return v
}

func count(doc svgDoc, name string) int {
	n := 0
	for _, e := range doc.elems {
		if e.Name.Local == name {
			n++
		}
	}
	return n
}

func TestChart(t *testing.T) {
	reads, writes := synthReads(), synthWrites()
	var b bytes.Buffer
	if err := writeChart(&b, "demo <&> chart", []*story{reads, writes}); err != nil {
		t.Fatal(err)
	}
	doc := parseSVG(t, b.Bytes())

	// Every coordinate is a number inside the drawing.
	for _, e := range doc.elems {
		for _, a := range []struct {
			name string
			max  float64
		}{{"x", doc.width}, {"x1", doc.width}, {"x2", doc.width}, {"cx", doc.width},
			{"y", doc.height}, {"y1", doc.height}, {"y2", doc.height}, {"cy", doc.height}} {
			if attr(e, a.name) == "" || strings.HasSuffix(attr(e, a.name), "%") {
				continue
			}
			if v := attrNum(t, e, a.name); v < 0 || v > a.max {
				t.Errorf("<%s %s=%v> outside 0..%v", e.Name.Local, a.name, v, a.max)
			}
		}
	}
	if strings.Contains(b.String(), "NaN") || strings.Contains(b.String(), "Inf") {
		t.Errorf("the chart has NaN or Inf")
	}

	// A dot per successful request (and 3 in the legend), a cross per failed one.
	ok := 0
	for _, s := range []*story{reads, writes} {
		for _, r := range s.reqs {
			if r.err == "" {
				ok++
			}
		}
	}
	legendDots := 2 // node1 and node2 served requests; node3 none
	if got := count(doc, "circle"); got != ok+legendDots {
		t.Errorf("%d circles, want %d (one per successful request) + %d in the legend", got, ok, legendDots)
	}
	crosses := 0
	for _, e := range doc.elems {
		if e.Name.Local == "path" && attr(e, "class") == "failed" {
			crosses += strings.Count(attr(e, "d"), "M")
		}
	}
	if crosses != 8 {
		t.Errorf("%d failed-request crosses, want 8", crosses)
	}

	// Two panels, titled; every mark labelled; the title escaped.
	if got := strings.Count(b.String(), `class="panel"`); got != 2 {
		t.Errorf("%d panels, want 2", got)
	}
	all := strings.Join(doc.texts, "\n")
	for _, want := range []string{"demo <&> chart", "Story 1: reads", "Story 2: writes", "kill -9 node1",
		"pool moves to node2", "fall-back", "node2 promoted", "node3 follows node2", "node1 up, read-only",
		"restart node1", "281 reads, 0 errors", "205 writes, 8 failed, all while no server took writes",
		"resumed 101 ms after the promotion", "served by node1", "served by node2", "1s", "1ms", "100µs", "0s", "7s"} {
		if !strings.Contains(all, want) {
			t.Errorf("no text %q in the chart; texts:\n%s", want, all)
		}
	}
	if strings.Contains(all, "served by node3") {
		t.Errorf("the legend shows node3, which served nothing")
	}

	// No two mark labels overlap (by the width the chart assumes for 12 px text).
	type box struct{ from, to, y float64 }
	var boxes []box
	for _, l := range doc.labels {
		x, y, w := attrNum(t, l.elem, "x"), attrNum(t, l.elem, "y"), 6.2*float64(len(l.text))
		b := box{x, x + w, y}
		if attr(l.elem, "text-anchor") == "end" {
			b = box{x - w, x, y}
		}
		for _, o := range boxes {
			if o.y == b.y && b.from < o.to && o.from < b.to {
				t.Errorf("mark label %q at (%v, %v) overlaps another", l.text, x, y)
			}
		}
		boxes = append(boxes, b)
	}
	if len(doc.labels) != len(reads.marks)+len(writes.marks) {
		t.Errorf("%d mark labels, want %d", len(doc.labels), len(reads.marks)+len(writes.marks))
	}

	// The serving-node strip: node1, node2, node1 in story 1; node1, failed, node2 in story 2.
	var strip []string
	inStrip := false
	for _, e := range doc.elems {
		switch {
		case e.Name.Local == "g" && attr(e, "class") == "strip":
			inStrip = true
			strip = append(strip, "|")
		case e.Name.Local == "g":
			inStrip = false
		case inStrip && e.Name.Local == "rect":
			strip = append(strip, attr(e, "fill"))
		}
	}
	want := "| " + nodeColour[1] + " " + nodeColour[2] + " " + nodeColour[1] +
		" | " + nodeColour[1] + " " + failColour + " " + nodeColour[2]
	if got := strings.Join(strip, " "); got != want {
		t.Errorf("strips %s, want %s", got, want)
	}
}

// A story without requests or marks still makes a valid chart.
func TestChartEmpty(t *testing.T) {
	var b bytes.Buffer
	if err := writeChart(&b, "empty", []*story{{num: 1, title: "nothing"}}); err != nil {
		t.Fatal(err)
	}
	doc := parseSVG(t, b.Bytes())
	if n := count(doc, "circle"); n != 0 {
		t.Errorf("%d circles in an empty chart", n)
	}
}

// The chart the README shows (docs/demo-timeline.svg, written by a run of the demo) is
// well-formed and has both stories.
func TestCommittedChart(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "..", "..", "docs", "demo-timeline.svg"))
	if err != nil {
		t.Fatalf("the README's chart: %v", err)
	}
	doc := parseSVG(t, b)
	all := strings.Join(doc.texts, "\n")
	for _, want := range []string{"Story 1: reads survive a killed primary", "Story 2: writes resume", "kill -9 node1",
		"node2 promoted", "fall-back to node1"} {
		if !strings.Contains(all, want) {
			t.Errorf("docs/demo-timeline.svg has no text %q", want)
		}
	}
}

package bench

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
)

// writeCharts draws the charts into dir, each as SVG and as PNG, and
// returns the SVG files' names: throughput per backend and workload,
// latency percentiles per backend, and the growth curve (cost per
// admission against history size).
func (r *Report) writeCharts(dir string) ([]string, error) {
	if _, err := r.writeChartsAs(dir, "png"); err != nil {
		return nil, err
	}
	return r.writeChartsAs(dir, "svg")
}

// writeChartsAs draws the charts in the format named by ext (svg, png, pdf).
//
// Every chart leaves headroom above its data for the legend, so that the
// legend covers no bar or point, widens the X range so that no bar or
// glyph touches the frame, labels ticks with plain numbers (1k, 10k, 1M),
// and is drawn inside a margin so that no title or label reaches the edge.
// Charts with one x position per workload wrap their labels at hyphens and
// are as wide as their labels and bars need, so that none overlaps another.
func (r *Report) writeChartsAs(dir, ext string) ([]string, error) {
	var names []string
	backends, _ := r.axes()
	if len(backends) == 0 {
		return nil, nil
	}
	// Throughput: one group of bars per workload, one bar per backend.
	p, size, _ := r.throughputPlot()
	name := "throughput." + ext
	if err := save(p, size.X, size.Y, filepath.Join(dir, name)); err != nil {
		return nil, err
	}
	names = append(names, name)

	// Latency: per backend, p50/p95/p99 per workload (log scale).
	for _, b := range backends {
		p, width, err := r.latencyPlot(b)
		if err != nil {
			return nil, err
		}
		if p == nil {
			continue
		}
		name := "latency-" + b + "." + ext
		if err := save(p, width, latencyHeight, filepath.Join(dir, name)); err != nil {
			return nil, err
		}
		names = append(names, name)
	}

	// Growth: µs per admission at each history size measured.
	g := newPlot("History growth: mean cost per sequential admission")
	g.X.Label.Text = "historical attempts in the store (log scale)"
	g.Y.Label.Text = "µs per admission"
	g.X.Scale = plot.LogScale{}
	g.X.Tick.Marker = readableTicks{logTicks{}}
	g.Y.Tick.Marker = readableTicks{plot.DefaultTicks{}}
	var lines []any
	xlo, xhi, yhi := math.Inf(1), 0.0, 0.0
	for _, x := range r.Results {
		if x.GrowthRatio == nil || x.SmallOpsPerSec == 0 {
			continue
		}
		pts := plotter.XYs{}
		for _, c := range x.GrowthCurve {
			pts = append(pts, plotter.XY{X: float64(c.History), Y: c.MeanUS})
		}
		if len(pts) == 0 { // a report from before the curve was measured
			pts = plotter.XYs{
				{X: float64(x.HistorySmall), Y: 1e6 / x.SmallOpsPerSec},
				{X: float64(x.HistoryLarge), Y: 1e6 / x.OpsPerSec},
			}
		}
		for _, pt := range pts {
			xlo, xhi, yhi = min(xlo, pt.X), max(xhi, pt.X), max(yhi, pt.Y)
		}
		lines = append(lines, x.Backend, pts)
	}
	if len(lines) > 0 {
		if err := plotutil.AddLinePoints(g, lines...); err != nil {
			return nil, err
		}
		g.X.Min, g.X.Max = xlo/1.4, xhi*1.4
		g.Y.Min, g.Y.Max = 0, yhi*(1+legendRoom(len(lines)/2))
		g.Add(plotter.NewGrid())
		name := "growth." + ext
		if err := save(g, 8*vg.Inch, 4.5*vg.Inch, filepath.Join(dir, name)); err != nil {
			return nil, err
		}
		names = append(names, name)
	}
	return names, nil
}

// latencyHeight is the latency charts' height.
const latencyHeight = 5 * vg.Inch

// latencyPlot is backend b's latency chart: p50, p95 and p99 per workload
// on a log scale, its x labels wrapped at hyphens, and the canvas width
// that gives each workload the room of its widest label line; nil when b
// has no measured row.
func (r *Report) latencyPlot(b string) (*plot.Plot, vg.Length, error) {
	p := newPlot(fmt.Sprintf("%s: latency per operation (log scale)", b))
	p.Y.Label.Text = "µs per operation"
	p.Y.Scale = plot.LogScale{}
	p.Y.Tick.Marker = readableTicks{logTicks{}}
	var wls []string
	pct := [3]plotter.XYs{}
	lo, hi := math.Inf(1), 0.0
	for _, x := range r.Results {
		if x.Backend == b && x.Ops > 0 {
			j := float64(len(wls))
			wls = append(wls, x.Workload)
			for i, v := range []float64{x.P50US, x.P95US, x.P99US} {
				v = max(v, 1)
				lo, hi = min(lo, v), max(hi, v)
				pct[i] = append(pct[i], plotter.XY{X: j + 0.15*float64(i-1), Y: v})
			}
		}
	}
	if len(wls) == 0 {
		return nil, 0, nil
	}
	for i, label := range []string{"p50", "p95", "p99"} {
		sc, err := plotter.NewScatter(pct[i])
		if err != nil {
			return nil, 0, err
		}
		sc.GlyphStyle.Color = plotutil.Color(i + 3)
		sc.GlyphStyle.Shape = plotutil.Shape(i)
		sc.GlyphStyle.Radius = vg.Points(4)
		p.Add(sc)
		p.Legend.Add(label, sc)
	}
	p.NominalX(wrapLabels(wls)...)
	p.X.Min, p.X.Max = -0.5, float64(len(wls))-0.5
	// Log headroom: a factor below the lowest point, and above the
	// highest enough for the three legend rows.
	p.Y.Min = max(lo/2, 0.5)
	p.Y.Max = hi * math.Pow(hi/p.Y.Min, legendRoom(3)) * 1.2
	p.Add(plotter.NewGrid())
	return p, fitWidth(p, len(wls), groupWidth(p, wls, 3*9*vg.Points(1)), latencyHeight), nil
}

// Bar geometry of the throughput chart, in points.
const (
	barWidth = 12
	groupGap = 14 // between the last bar of a group and the next group's first
	labelGap = 8  // between two x labels
)

// throughputPlot is the throughput chart: one group of bars per workload,
// one bar per backend, its labels wrapped at hyphens, and the canvas size
// that gives every group the room of its bars or of its widest label line,
// whichever is wider. The legend sits in headroom above the tallest bar.
func (r *Report) throughputPlot() (p *plot.Plot, size vg.Point, barW vg.Length) {
	backends, workloads := r.axes()
	// Labels stay short: an SVG viewer may substitute a wider font.
	p = newPlot("Throughput (admissions/s; bare: commits/s; retry: round trips/s)")
	p.Y.Label.Text = "operations/s"
	p.Y.Tick.Marker = readableTicks{plot.DefaultTicks{}}
	barW = vg.Points(barWidth)
	top := 0.0
	for i, b := range backends {
		vals := make(plotter.Values, len(workloads))
		for j, wl := range workloads {
			vals[j] = r.rate(b, wl)
			top = max(top, vals[j])
		}
		bar, err := plotter.NewBarChart(vals, barW)
		if err != nil { // only for negative or NaN values
			continue
		}
		bar.Color = plotutil.Color(i)
		bar.LineStyle.Width = 0
		bar.Offset = barW * vg.Length(float64(i)-float64(len(backends)-1)/2)
		p.Add(bar)
		p.Legend.Add(b, bar)
	}
	p.NominalX(wrapLabels(workloads)...)
	p.X.Min, p.X.Max = -0.5, float64(len(workloads))-0.5
	p.Y.Min, p.Y.Max = 0, top*(1+legendRoom(len(backends)))
	p.Add(plotter.NewGrid())
	h := 5 * vg.Inch
	gw := groupWidth(p, workloads, barW*vg.Length(len(backends))+vg.Points(groupGap))
	return p, vg.Point{X: fitWidth(p, len(workloads), gw, h), Y: h}, barW
}

// wrapLabels breaks each label after its hyphens, one part per line.
func wrapLabels(ls []string) []string {
	out := make([]string, len(ls))
	for i, l := range ls {
		out[i] = strings.ReplaceAll(l, "-", "-\n")
	}
	return out
}

// groupWidth is the room one x position needs: at least min, and the
// widest line of any label plus labelGap.
func groupWidth(p *plot.Plot, labels []string, min vg.Length) vg.Length {
	w := min
	for _, l := range wrapLabels(labels) {
		w = max(w, p.X.Tick.Label.Width(l)+vg.Points(labelGap))
	}
	return w
}

// chartMargin is the blank border save leaves around every chart.
const chartMargin = 10

// fitWidth is the canvas width at which p's data area gives each of its n
// x positions (the range -0.5 to n-0.5) the width gw, and the title fits.
func fitWidth(p *plot.Plot, n int, gw, h vg.Length) vg.Length {
	want := gw * vg.Length(n)
	guess := want + 2*vg.Inch
	for range 3 {
		da := p.DataCanvas(chartArea(guess, h))
		guess += want - (da.Max.X - da.Min.X)
	}
	return max(guess, p.Title.TextStyle.Width(p.Title.Text)+vg.Points(4*chartMargin))
}

// chartArea is the area of a w×h canvas that save draws a plot into.
func chartArea(w, h vg.Length) draw.Canvas {
	m := vg.Points(chartMargin)
	return draw.Crop(draw.New(vgimg.New(w, h)), m, -m, m, -m)
}

// newPlot is a plot with the title set off from the data and the legend
// at the top right, in the headroom the charts leave for it.
func newPlot(title string) *plot.Plot {
	p := plot.New()
	p.Title.Text = title
	p.Title.Padding = vg.Points(8)
	p.Legend.Top = true
	p.Legend.XOffs = -vg.Points(6)
	p.Legend.YOffs = -vg.Points(4)
	p.Legend.Padding = vg.Points(3) // between entries, whose swatches would touch
	return p
}

// legendRoom is the share of the data's height added above it for a
// legend of n rows.
func legendRoom(n int) float64 { return 0.1 + 0.08*float64(n) }

// save draws p inside a margin of the canvas and writes it to path, in the
// format its extension names.
func save(p *plot.Plot, w, h vg.Length, path string) error {
	c, err := draw.NewFormattedCanvas(w, h, strings.TrimPrefix(filepath.Ext(path), "."))
	if err != nil {
		return err
	}
	m := vg.Points(chartMargin)
	p.Draw(draw.Crop(draw.New(c), m, -m, m, -m))
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if _, err := c.WriteTo(f); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// logTicks marks each power of ten (labelled) and the 2–9 multiples
// between (unlabelled); with less than one decade in range it labels the
// multiples of 2 and 5 too.
type logTicks struct{}

func (logTicks) Ticks(lo, hi float64) []plot.Tick {
	var ts []plot.Tick
	decades := math.Log10(hi) - math.Log10(lo)
	for e := math.Floor(math.Log10(lo)); e <= math.Ceil(math.Log10(hi)); e++ {
		base := math.Pow(10, e)
		for m := 1.0; m < 10; m++ {
			v := m * base
			if v < lo || v > hi {
				continue
			}
			t := plot.Tick{Value: v}
			if m == 1 || (decades < 1.2 && (m == 2 || m == 5)) {
				t.Label = "x" // relabelled by readableTicks
			}
			ts = append(ts, t)
		}
	}
	return ts
}

// readableTicks relabels another ticker's labelled ticks as plain numbers:
// 0, 250, 2.5k, 10k, 1M.
type readableTicks struct{ plot.Ticker }

func (r readableTicks) Ticks(lo, hi float64) []plot.Tick {
	ts := r.Ticker.Ticks(lo, hi)
	for i := range ts {
		if ts[i].Label != "" {
			ts[i].Label = readable(ts[i].Value)
		}
	}
	return ts
}

func readable(v float64) string {
	a := math.Abs(v)
	num := func(x float64) string { return strconv.FormatFloat(math.Round(x*100)/100, 'f', -1, 64) }
	switch {
	case a >= 1e9:
		return num(v/1e9) + "G"
	case a >= 1e6:
		return num(v/1e6) + "M"
	case a >= 1e3:
		return num(v/1e3) + "k"
	}
	return num(v)
}

// axes returns the measured backends and workloads in report order.
func (r *Report) axes() (backends, workloads []string) {
	for _, x := range r.Results {
		if x.Ops == 0 {
			continue
		}
		if !slices.Contains(backends, x.Backend) {
			backends = append(backends, x.Backend)
		}
		if !slices.Contains(workloads, x.Workload) {
			workloads = append(workloads, x.Workload)
		}
	}
	return backends, workloads
}

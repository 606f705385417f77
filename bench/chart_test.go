package bench

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	"gonum.org/v1/plot/vg"
)

// sampleReport is a report shaped like a full run on three backends.
func sampleReport() *Report {
	r := &Report{}
	rates := map[string][]float64{ // in the order of Workloads
		"sqlite":   {5200, 1900, 1500, 11000, 2100, 12000, 1800, 10000, 900, 6000, 1400, 310},
		"bolt":     {640, 230, 180, 2000, 520, 2500, 470, 2400, 300, 1500, 150, 40},
		"postgres": {1900, 700, 560, 6000, 1700, 7000, 1500, 6500, 400, 3000, 520, 120},
	}
	for _, b := range []string{"sqlite", "bolt", "postgres"} {
		for i, w := range Workloads {
			v := rates[b][i]
			x := Result{Backend: b, Workload: w, Workers: 1, Ops: 2000, OpsPerSec: v,
				MeanUS: 1e6 / v, P50US: 0.8e6 / v, P95US: 2.5e6 / v, P99US: 6e6 / v}
			if w == WGrowth {
				x.HistorySmall, x.HistoryLarge = 1000, 1_000_000
				x.SmallOpsPerSec = v * 1.1
				x.GrowthRatio = ptr(1.1)
				for j, h := range append(append([]int{1000}, curvePoints(1000, 1_000_000)...), 1_000_000) {
					x.GrowthCurve = append(x.GrowthCurve, GrowthPoint{History: h, MeanUS: 1e6 / v * (1 + 0.02*float64(j)), Ops: 250})
				}
			}
			r.Results = append(r.Results, x)
		}
	}
	return r
}

// TestCharts draws every chart of a three-backend report (as PNG, to look
// at: set WFSTORE_CHART_DIR to keep them) and checks the growth curve has
// its intermediate points.
func TestCharts(t *testing.T) {
	dir := os.Getenv("WFSTORE_CHART_DIR")
	if dir == "" {
		dir = t.TempDir()
	}
	r := sampleReport()
	for _, ext := range []string{"png", "svg"} {
		names, err := r.writeChartsAs(dir, ext)
		if err != nil {
			t.Fatal(err)
		}
		want := []string{"throughput", "latency-sqlite", "latency-bolt", "latency-postgres", "growth"}
		if len(names) != len(want) {
			t.Fatalf("%s: charts %v, want %v", ext, names, want)
		}
		for i, n := range names {
			if n != want[i]+"."+ext {
				t.Fatalf("chart %d is %s, want %s.%s", i, n, want[i], ext)
			}
			if st, err := os.Stat(filepath.Join(dir, n)); err != nil || st.Size() == 0 {
				t.Fatalf("%s: %v", n, err)
			}
		}
	}
	if got := curvePoints(1000, 1_000_000); len(got) != 5 || got[0] != 3200 || got[4] != 320_000 {
		t.Fatalf("curvePoints(1k, 1M) = %v", got)
	}
	if got := curvePoints(1000, 100_000); len(got) != 3 {
		t.Fatalf("curvePoints(1k, 100k) = %v", got)
	}
}

// throughputLayout computes where the throughput chart puts its x labels,
// its bars and its legend, as rectangles on the canvas (points).
func throughputLayout(r *Report) (labels, bars [][]vg.Rectangle, legend vg.Rectangle, canvas vg.Point) {
	p, size, barW := r.throughputPlot()
	area := chartArea(size.X, size.Y)
	da := p.DataCanvas(area)
	backends, workloads := r.axes()
	ticks := p.X.Tick.Marker.Ticks(p.X.Min, p.X.Max) // the labels as drawn
	base := da.Y(p.Y.Norm(0))
	for i, w := range workloads {
		x := da.X(p.X.Norm(float64(i)))
		lw := p.X.Tick.Label.Width(ticks[i].Label)
		labels = append(labels, []vg.Rectangle{{Min: vg.Point{X: x - lw/2}, Max: vg.Point{X: x + lw/2, Y: 1}}})
		var group []vg.Rectangle
		for j, b := range backends {
			cx := x + barW*vg.Length(float64(j)-float64(len(backends)-1)/2)
			group = append(group, vg.Rectangle{Min: vg.Point{X: cx - barW/2, Y: base}, Max: vg.Point{X: cx + barW/2, Y: da.Y(p.Y.Norm(r.rate(b, w)))}})
		}
		bars = append(bars, group)
	}
	// The legend is drawn at the top right of the area under the title.
	top := area.Max.Y - p.Title.TextStyle.Rectangle(p.Title.Text).Size().Y - p.Title.Padding
	ls := p.Legend.Rectangle(area).Size()
	legend.Max = vg.Point{X: area.Max.X + p.Legend.XOffs, Y: top + p.Legend.YOffs}
	legend.Min = vg.Point{X: legend.Max.X - ls.X, Y: legend.Max.Y - ls.Y - p.Legend.TextStyle.FontExtents().Descent}
	return labels, bars, legend, size
}

func overlaps(a, b vg.Rectangle) bool {
	return a.Min.X < b.Max.X && b.Min.X < a.Max.X && a.Min.Y < b.Max.Y && b.Min.Y < a.Max.Y
}

// TestThroughputChartLabelsBarsAndLegendDoNotOverlap lays the throughput
// chart out for three and for four backends: no two x labels overlap, no
// bar reaches into the next workload's group, the legend covers no bar, and
// everything stays on the canvas.
func TestThroughputChartLabelsBarsAndLegendDoNotOverlap(t *testing.T) {
	four := sampleReport()
	for _, x := range slices.Clone(four.Results) {
		x.Backend, x.OpsPerSec = "etcd", x.OpsPerSec/3
		four.Results = append(four.Results, x)
	}
	for name, r := range map[string]*Report{"three backends": sampleReport(), "four backends": four} {
		t.Run(name, func(t *testing.T) {
			labels, bars, legend, canvas := throughputLayout(r)
			for i := 1; i < len(labels); i++ {
				if a, b := labels[i-1][0], labels[i][0]; a.Max.X > b.Min.X {
					t.Errorf("x labels %d and %d overlap: %.1f > %.1f", i-1, i, a.Max.X, b.Min.X)
				}
				if a, b := bars[i-1][len(bars[i-1])-1], bars[i][0]; a.Max.X >= b.Min.X {
					t.Errorf("bars of groups %d and %d overlap: %.1f ≥ %.1f", i-1, i, a.Max.X, b.Min.X)
				}
			}
			for i, g := range bars {
				for j, b := range g {
					if overlaps(b, legend) {
						t.Errorf("the legend %v covers bar %d of group %d %v", legend, j, i, b)
					}
				}
			}
			if legend.Min.X < 0 || legend.Max.X > canvas.X || labels[0][0].Min.X < 0 || labels[len(labels)-1][0].Max.X > canvas.X {
				t.Errorf("off the %v canvas: legend %v, labels %v … %v", canvas, legend, labels[0][0], labels[len(labels)-1][0])
			}
		})
	}
}

// TestLatencyChartLabelsDoNotOverlap lays each latency chart out: its x
// labels, wrapped at hyphens, are boxes that do not overlap one another,
// and stay on the canvas.
func TestLatencyChartLabelsDoNotOverlap(t *testing.T) {
	r := sampleReport()
	for _, b := range []string{"sqlite", "bolt", "postgres"} {
		p, width, err := r.latencyPlot(b)
		if err != nil || p == nil {
			t.Fatalf("%s: %v", b, err)
		}
		da := p.DataCanvas(chartArea(width, latencyHeight))
		ticks := p.X.Tick.Marker.Ticks(p.X.Min, p.X.Max)
		var prev vg.Length = -1
		for i, tk := range ticks {
			x := da.X(p.X.Norm(tk.Value))
			lw := p.X.Tick.Label.Width(tk.Label)
			if x-lw/2 < 0 || x+lw/2 > width {
				t.Errorf("%s: label %d %q off the %.0f-wide canvas", b, i, tk.Label, width)
			}
			if i > 0 && x-lw/2 <= prev {
				t.Errorf("%s: labels %d and %d overlap: %.1f ≤ %.1f", b, i-1, i, x-lw/2, prev)
			}
			prev = x + lw/2
		}
	}
}

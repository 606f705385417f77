package bench

import (
	"fmt"
	"path/filepath"
	"slices"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
)

// writeCharts draws the SVG charts into dir and returns their file names:
// throughput per backend and workload, latency percentiles per backend, and
// the growth curve (cost per admission against history size).
func (r *Report) writeCharts(dir string) ([]string, error) {
	var names []string
	backends, workloads := r.axes()
	if len(backends) == 0 {
		return nil, nil
	}
	// Throughput: one group of bars per workload, one bar per backend.
	p := plot.New()
	p.Title.Text = "Throughput (operations/s; admissions, bare commits, retry round trips)"
	p.Y.Label.Text = "ops/s"
	w := vg.Points(60 / float64(len(backends)))
	for i, b := range backends {
		vals := make(plotter.Values, len(workloads))
		for j, wl := range workloads {
			vals[j] = r.rate(b, wl)
		}
		bar, err := plotter.NewBarChart(vals, w)
		if err != nil {
			return nil, err
		}
		bar.Color = plotutil.Color(i)
		bar.LineStyle.Width = 0
		bar.Offset = w * vg.Length(float64(i)-float64(len(backends)-1)/2)
		p.Add(bar)
		p.Legend.Add(b, bar)
	}
	p.Legend.Top = true
	p.NominalX(workloads...)
	p.Add(plotter.NewGrid())
	if err := p.Save(9*vg.Inch, 5*vg.Inch, filepath.Join(dir, "throughput.svg")); err != nil {
		return nil, err
	}
	names = append(names, "throughput.svg")

	// Latency: per backend, p50/p95/p99 per workload (log scale).
	for _, b := range backends {
		p := plot.New()
		p.Title.Text = fmt.Sprintf("%s: latency per operation (µs, log scale)", b)
		p.Y.Label.Text = "µs"
		p.Y.Scale = plot.LogScale{}
		p.Y.Tick.Marker = plot.LogTicks{Prec: -1}
		var wls []string
		pct := [3]plotter.XYs{}
		for _, x := range r.Results {
			if x.Backend == b && x.Ops > 0 {
				j := float64(len(wls))
				wls = append(wls, x.Workload)
				for i, v := range []float64{x.P50US, x.P95US, x.P99US} {
					pct[i] = append(pct[i], plotter.XY{X: j + 0.15*float64(i-1), Y: max(v, 1)})
				}
			}
		}
		if len(wls) == 0 {
			continue
		}
		for i, label := range []string{"p50", "p95", "p99"} {
			sc, err := plotter.NewScatter(pct[i])
			if err != nil {
				return nil, err
			}
			sc.GlyphStyle.Color = plotutil.Color(i + 3)
			sc.GlyphStyle.Shape = plotutil.Shape(i)
			sc.GlyphStyle.Radius = vg.Points(4)
			p.Add(sc)
			p.Legend.Add(label, sc)
		}
		p.Legend.Top = true
		p.NominalX(wls...)
		p.X.Min, p.X.Max = -0.5, float64(len(wls))-0.5
		p.Add(plotter.NewGrid())
		name := "latency-" + b + ".svg"
		if err := p.Save(9*vg.Inch, 5*vg.Inch, filepath.Join(dir, name)); err != nil {
			return nil, err
		}
		names = append(names, name)
	}

	// Growth: µs per admission at each history size.
	g := plot.New()
	g.Title.Text = "History growth: mean cost per sequential admission"
	g.X.Label.Text = "historical attempts in the store (log scale)"
	g.Y.Label.Text = "µs per admission"
	g.X.Scale = plot.LogScale{}
	g.X.Tick.Marker = plot.LogTicks{Prec: -1}
	var lines []any
	for _, x := range r.Results {
		if x.GrowthRatio == nil || x.SmallOpsPerSec == 0 {
			continue
		}
		lines = append(lines, x.Backend, plotter.XYs{
			{X: float64(x.HistorySmall), Y: 1e6 / x.SmallOpsPerSec},
			{X: float64(x.HistoryLarge), Y: 1e6 / x.OpsPerSec},
		})
	}
	if len(lines) > 0 {
		if err := plotutil.AddLinePoints(g, lines...); err != nil {
			return nil, err
		}
		g.Y.Min = 0
		g.Legend.Top = true
		g.Add(plotter.NewGrid())
		if err := g.Save(7*vg.Inch, 4*vg.Inch, filepath.Join(dir, "growth.svg")); err != nil {
			return nil, err
		}
		names = append(names, "growth.svg")
	}
	return names, nil
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

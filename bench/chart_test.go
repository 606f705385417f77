package bench

import (
	"os"
	"path/filepath"
	"testing"
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

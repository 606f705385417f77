package bench

import (
	"context"
	"fmt"
	"io/fs"
	"math"
	"path/filepath"
	"syscall"
	"time"
)

// bytesPerAttempt is a generous estimate of the disk one historical attempt
// takes (its run share, activation, attempt, five events and indexes), for
// the free-space check before loading history.
var bytesPerAttempt = map[string]int64{"sqlite": 3000, "bolt": 8000, "postgres": 4000}

// runGrowth (6) measures sequential admission into two stores, one holding
// SmallHistory and one History historical attempts, interleaved in rounds,
// and reports cost per admission large ÷ small.
func runGrowth(ctx context.Context, cfg Config, open func() (*Env, error), pg *progress, name, dir string) (Result, error) {
	res := Result{Backend: name, Workload: WGrowth, Workers: 1, HistorySmall: cfg.SmallHistory, HistoryLarge: cfg.History}
	per, ok := bytesPerAttempt[name]
	if !ok {
		per = 8000
	}
	need := per * int64(cfg.History+cfg.SmallHistory)
	if free, err := freeBytes(dir); err == nil && free < 2*need {
		res.Note = fmt.Sprintf("skipped: needs about %d MB free in %s, %d MB available", 2*need>>20, dir, free>>20)
		return res, nil
	}
	small, err := open()
	if err != nil {
		return res, err
	}
	defer small.Close()
	large, err := open()
	if err != nil {
		return res, err
	}
	defer large.Close()

	now := time.Now()
	if _, err := loadHistory(ctx, small, "hist", 0, cfg.SmallHistory, now, nil); err != nil {
		return res, err
	}
	n, w := cfg.N, warmup(cfg.N)

	// The large store is loaded in steps; at each intermediate size a short
	// sequential measurement adds a point to the growth curve. Each step's
	// attempts are timed so that the whole history still runs in time
	// order up to now.
	var t0 time.Time
	var loadTime time.Duration
	tk := pg.phase(fmt.Sprintf("growth: loading %d historical attempts", cfg.History), cfg.History)
	loaded, nextRun, last := 0, 0, 0
	var curve []GrowthPoint
	for i, h := range append(curvePoints(cfg.SmallHistory, cfg.History), cfg.History) {
		t0 = time.Now()
		stepEnd := now.Add(-time.Duration(cfg.History-h) * time.Millisecond)
		base := loaded
		nr, err := loadHistory(ctx, large, "hist", nextRun, h-loaded, stepEnd, func(done int) { tk.add(base + done - last); last = base + done })
		if err != nil {
			return res, err
		}
		loadTime += time.Since(t0)
		nextRun, loaded = nr, h
		if h == cfg.History {
			break
		}
		k := curveOps(n, cfg.Rounds)
		p, err := newSequential(ctx, large, fmt.Sprintf("curve%d", i), k+w)
		if err != nil {
			return res, err
		}
		if err := p.run(ctx, w, &recorder{}); err != nil {
			return res, err
		}
		rec := &recorder{}
		if err := measure(ctx, p, k, rec); err != nil {
			return res, err
		}
		curve = append(curve, GrowthPoint{History: h, MeanUS: rec.result(name, WGrowth, 1).MeanUS, Ops: k})
	}
	res.LoadSeconds = loadTime.Seconds()
	if large.dir != "" {
		res.Note = fmt.Sprintf("large store on disk: %d MB", dirBytes(large.dir)>>20)
	}

	pg.phase("growth: seeding", 0)
	ps, err := newSequential(ctx, small, "grow", n+w)
	if err != nil {
		return res, err
	}
	pl, err := newSequential(ctx, large, "grow", n+w)
	if err != nil {
		return res, err
	}
	for _, p := range []*seqP{ps, pl} {
		if err := p.run(ctx, w, &recorder{}); err != nil {
			return res, err
		}
	}
	tick := pg.phase("growth: small and large history", 2*n)
	rs, rl := &recorder{tick: tick}, &recorder{tick: tick}
	// The row's figures are the large store's, its writes included.
	rl.countingWrites(large, false)
	rl.writes.begin(ctx)
	for r := range cfg.Rounds {
		k := n / cfg.Rounds
		if r == cfg.Rounds-1 {
			k = n - k*(cfg.Rounds-1)
		}
		if err := measure(ctx, ps, k, rs); err != nil {
			return res, err
		}
		if err := measure(ctx, pl, k, rl); err != nil {
			return res, err
		}
	}
	rl.writes.end(ctx)
	out := rl.result(name, WGrowth, 1)
	out.HistorySmall, out.HistoryLarge, out.LoadSeconds, out.Note = res.HistorySmall, res.HistoryLarge, res.LoadSeconds, res.Note
	s := rs.result(name, WGrowth, 1)
	out.SmallOpsPerSec = s.OpsPerSec
	if s.MeanUS > 0 {
		out.GrowthRatio = ptr(out.MeanUS / s.MeanUS)
	}
	out.GrowthCurve = append(append([]GrowthPoint{{History: cfg.SmallHistory, MeanUS: s.MeanUS, Ops: s.Ops}}, curve...),
		GrowthPoint{History: cfg.History, MeanUS: out.MeanUS, Ops: out.Ops})
	return out, nil
}

// GrowthPoint is the mean cost of a sequential admission into a store
// holding History historical attempts, measured over Ops admissions.
type GrowthPoint struct {
	History int     `json:"history"`
	MeanUS  float64 `json:"mean_us"`
	Ops     int     `json:"ops"`
}

// curvePoints are the intermediate history sizes of the growth curve:
// about three per decade (×√10) strictly between small and large.
func curvePoints(small, large int) []int {
	var out []int
	for f := float64(max(small, 1)) * math.Sqrt(10); int(f) < large; f *= math.Sqrt(10) {
		h := int(f)
		// Round to two significant digits: readable sizes.
		mag := int(math.Pow(10, math.Floor(math.Log10(float64(h)))-1))
		h = (h + mag/2) / max(mag, 1) * max(mag, 1)
		if h > small && h < large && (len(out) == 0 || h > out[len(out)-1]) {
			out = append(out, h)
		}
	}
	return out
}

// curveOps is how many admissions measure one intermediate point.
func curveOps(n, rounds int) int { return max(n/max(rounds, 1), 100) }

func freeBytes(dir string) (int64, error) {
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil {
		return 0, err
	}
	return int64(st.Bavail) * int64(st.Bsize), nil
}

func dirBytes(dir string) int64 {
	var n int64
	filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			if fi, err := d.Info(); err == nil {
				n += fi.Size()
			}
		}
		return nil
	})
	return n
}

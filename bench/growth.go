package bench

import (
	"context"
	"fmt"
	"io/fs"
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
	t0 := time.Now()
	tk := pg.phase(fmt.Sprintf("growth: loading %d historical attempts", cfg.History), cfg.History)
	last := 0
	if _, err := loadHistory(ctx, large, "hist", 0, cfg.History, now, func(done int) { tk.add(done - last); last = done }); err != nil {
		return res, err
	}
	res.LoadSeconds = time.Since(t0).Seconds()
	if large.dir != "" {
		res.Note = fmt.Sprintf("large store on disk: %d MB", dirBytes(large.dir)>>20)
	}

	n, w := cfg.N, warmup(cfg.N)
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
	out := rl.result(name, WGrowth, 1)
	out.HistorySmall, out.HistoryLarge, out.LoadSeconds, out.Note = res.HistorySmall, res.HistoryLarge, res.LoadSeconds, res.Note
	s := rs.result(name, WGrowth, 1)
	out.SmallOpsPerSec = s.OpsPerSec
	if s.MeanUS > 0 {
		out.GrowthRatio = ptr(out.MeanUS / s.MeanUS)
	}
	return out, nil
}

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

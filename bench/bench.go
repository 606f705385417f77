package bench

import (
	"context"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/wfstore/wfstore/backend"
)

// Config selects what Run measures.
type Config struct {
	Targets []Target
	// Quick: the smaller history (100k attempts instead of 1M).
	Quick bool
	// N is the number of admissions per workload (default 2000 with Quick,
	// 10000 without); the retry workload does N/4 round trips.
	N int
	// Workers is the number of dispatchers of the parallel and racing
	// workloads (default 8).
	Workers int
	// History is the large history of the growth workload, in attempts
	// (default 100k with Quick, 1M without); SmallHistory the small one
	// (default 1000).
	History, SmallHistory int
	// Rounds: bare, raw and sequential run interleaved in this many rounds
	// (and so do the two growth stores), so that their ratios share the
	// machine's noise (default 8).
	Rounds int
	// BatchN is the number of admissions of each batch-mode workload
	// (default 5×N: 10000 with Quick, the backlog River drains).
	BatchN int
	// River: after the postgres target, Run drains a BatchN backlog with
	// River on the same database (RunRiver, compiled into the binary), or
	// reports why it could not; then admits one with the hand-written
	// probe of wfstore's own writes (RunProbe).
	River bool
	// Workloads restricts the run to these names (default all).
	Workloads []string
	// Dir holds the store files (default a temporary directory, removed).
	Dir string
	// Progress receives progress lines (stderr); nil for none.
	Progress io.Writer
}

func (c *Config) defaults() {
	if c.N <= 0 {
		c.N = 10_000
		if c.Quick {
			c.N = 2000
		}
	}
	if c.Workers <= 0 {
		c.Workers = 8
	}
	if c.BatchN <= 0 {
		c.BatchN = 5 * c.N
	}
	if c.History <= 0 {
		c.History = 1_000_000
		if c.Quick {
			c.History = 100_000
		}
	}
	if c.SmallHistory <= 0 {
		c.SmallHistory = 1000
	}
	if c.Rounds <= 0 {
		c.Rounds = 8
	}
	if len(c.Workloads) == 0 {
		c.Workloads = Workloads
	}
}

// Result is one backend × workload row. Latencies are per operation: an
// admission (a retry round trip for retry, a commit for bare).
type Result struct {
	Backend     string  `json:"backend"`
	Workload    string  `json:"workload"`
	Workers     int     `json:"workers"`
	Ops         int     `json:"ops"`
	Seconds     float64 `json:"seconds"`
	OpsPerSec   float64 `json:"ops_per_sec"`
	MeanUS      float64 `json:"mean_us"`
	P50US       float64 `json:"p50_us"`
	P95US       float64 `json:"p95_us"`
	P99US       float64 `json:"p99_us"`
	MaxUS       float64 `json:"max_us"`
	AllocsPerOp float64 `json:"allocs_per_op"`
	BytesPerOp  float64 `json:"bytes_per_op"`
	// CPUPerOpUS is the CPU time (user + system, all threads) of this
	// process per operation: the client side, which for SQLite and bbolt is
	// the whole engine and for Postgres leaves out the server's CPU. 0 where
	// the platform does not report it.
	CPUPerOpUS float64 `json:"cpu_us_per_op"`
	// MachineCPUPerOpUS is the CPU time every process on the machine spent
	// busy per operation while the workload ran (Linux, from /proc/stat, in
	// 10 ms ticks): with a local PostgreSQL it includes the server's, and it
	// includes anything else the machine ran meanwhile. MachineBusyPct is
	// that busy time as a share of all CPUs' time: near 100, the workload
	// was CPU-bound on this machine. The kernel samples these times at its
	// timer tick, so they are approximate (they can read below CPUPerOpUS,
	// which getrusage measures exactly). Both 0 where not measured.
	MachineCPUPerOpUS float64 `json:"machine_cpu_us_per_op,omitempty"`
	MachineBusyPct    float64 `json:"machine_busy_pct,omitempty"`

	// Sequential: admissions/s ÷ (bare commits/s ÷ 3), and ÷ raw admissions/s.
	CeilingRatio *float64 `json:"ceiling_ratio,omitempty"`
	RawRatio     *float64 `json:"raw_ratio,omitempty"`
	// Parallel: admissions/s ÷ sequential admissions/s; batch-parallel:
	// ÷ batch admissions/s.
	Speedup *float64 `json:"speedup,omitempty"`
	// Batch: admissions/s ÷ bare commits/s, and ÷ sequential (one at a
	// time) admissions/s.
	BareRatio *float64 `json:"bare_ratio,omitempty"`
	SeqRatio  *float64 `json:"sequential_ratio,omitempty"`
	// Racing rows: admissions/s ÷ the distinct-run row of the same mode
	// (parallel, or batch-parallel), and p99 ÷ the p99 of the one-dispatcher
	// row of the same mode (sequential, or batch).
	VsDistinct *float64 `json:"vs_distinct,omitempty"`
	P99VsOne   *float64 `json:"p99_vs_one,omitempty"`
	// Racing: owner calls beyond one per identity plus attempts beyond one
	// per activation (must be 0), and Dispatch results reported raced.
	Duplicates *int `json:"duplicates,omitempty"`
	Raced      *int `json:"raced,omitempty"`
	// Reruns are the transaction re-runs the backend made while the
	// workload ran, by cause (nil when the backend does not count them:
	// bbolt never re-runs).
	Reruns *backend.Reruns `json:"reruns,omitempty"`
	// RowsPerOp is the rows the workload's store inserted, updated and
	// deleted per operation (the bare commit's table for bare), and
	// WALBytesPerOp the WAL the server wrote per operation while it ran
	// (server-wide: on a quiet server only). PostgreSQL only, from its
	// statistics (pg_stat_user_tables of the store's schema, read once they
	// settled, and pg_current_wal_insert_lsn around each measured stretch);
	// nil where not counted.
	RowsPerOp     *float64 `json:"rows_written_per_op,omitempty"`
	WALBytesPerOp *float64 `json:"wal_bytes_per_op,omitempty"`
	// Growth: cost per admission with History attempts ÷ with SmallHistory.
	// The row's other figures are those of the large store.
	GrowthRatio    *float64 `json:"growth_ratio,omitempty"`
	HistorySmall   int      `json:"history_small,omitempty"`
	HistoryLarge   int      `json:"history_large,omitempty"`
	SmallOpsPerSec float64  `json:"small_ops_per_sec,omitempty"`
	LoadSeconds    float64  `json:"load_seconds,omitempty"`
	// GrowthCurve: mean cost per admission at each history size measured,
	// SmallHistory and History (from the interleaved rounds) and the sizes
	// between (a short run each while the large store was loaded).
	GrowthCurve []GrowthPoint `json:"growth_curve,omitempty"`
	Note        string        `json:"note,omitempty"`
	// Partial: this row is complete, but the run it belongs to was
	// interrupted (see Report.Partial).
	Partial bool `json:"partial,omitempty"`
}

// BackendReport describes one target as it was measured.
type BackendReport struct {
	Name     string       `json:"name"`
	Info     backend.Info `json:"info"`
	BareNote string       `json:"bare_commit"`
	// Writes says how rows written and WAL bytes are counted, or why not.
	Writes  string `json:"writes,omitempty"`
	Skipped string `json:"skipped,omitempty"`
}

// Report is everything one Run measured.
type Report struct {
	Machine  Machine         `json:"machine"`
	Started  time.Time       `json:"started"`
	Seconds  float64         `json:"seconds"`
	Config   ConfigSummary   `json:"config"`
	Backends []BackendReport `json:"backends"`
	Results  []Result        `json:"results"`
	// Peers are the peer comparisons run next to the backends (River, and
	// the hand-written probe).
	Peers []Peer `json:"peers,omitempty"`
	// Partial, when set, says why the run stopped before measuring
	// everything (an interruption); the rows present are complete.
	Partial string `json:"partial,omitempty"`
}

// ConfigSummary is the part of Config a reader needs to reproduce a run.
type ConfigSummary struct {
	Quick        bool `json:"quick"`
	N            int  `json:"n"`
	BatchN       int  `json:"batch_n"`
	Workers      int  `json:"workers"`
	History      int  `json:"history"`
	SmallHistory int  `json:"small_history"`
	Rounds       int  `json:"rounds"`
}

// Skip records a target that was not measured, with the reason.
func (r *Report) Skip(name, why string) {
	r.Backends = append(r.Backends, BackendReport{Name: name, Skipped: why})
}

// Run measures every workload of cfg on every target, one target after
// another, each workload on fresh stores.
func Run(ctx context.Context, cfg Config) (*Report, error) {
	cfg.defaults()
	rep := &Report{Machine: MachineInfo(), Started: time.Now(), Config: ConfigSummary{
		Quick: cfg.Quick, N: cfg.N, BatchN: cfg.BatchN, Workers: cfg.Workers, History: cfg.History,
		SmallHistory: cfg.SmallHistory, Rounds: cfg.Rounds,
	}}
	dir := cfg.Dir
	if dir == "" {
		d, err := os.MkdirTemp("", "wfstore-bench-")
		if err != nil {
			return nil, err
		}
		defer os.RemoveAll(d)
		dir = d
	}
	for _, t := range cfg.Targets {
		br, res, err := runTarget(ctx, cfg, t, dir)
		rep.Backends = append(rep.Backends, br)
		rep.Results = append(rep.Results, res...)
		if err != nil {
			rep.Seconds = time.Since(rep.Started).Seconds()
			return rep, fmt.Errorf("%s: %w", t.Name, err)
		}
		if t.dsn != "" && cfg.River {
			// Right after wfstore's own postgres rows, on the same database.
			rep.Peers = append(rep.Peers, RunRiver(ctx, t.dsn, cfg.BatchN, cfg.Progress))
			// Then the hand-written probe of wfstore's own writes, the
			// ceiling those writes allow on this machine.
			rep.Peers = append(rep.Peers, RunProbe(ctx, t.dsn, cfg.BatchN, cfg.Progress))
			if err := context.Cause(ctx); err != nil {
				rep.Seconds = time.Since(rep.Started).Seconds()
				return rep, err
			}
		}
	}
	rep.Seconds = time.Since(rep.Started).Seconds()
	return rep, nil
}

func (c *Config) wants(w string) bool { return slices.Contains(c.Workloads, w) }

// runTarget runs the workloads on one target. Each gets fresh stores.
func runTarget(ctx context.Context, cfg Config, t Target, dir string) (br BackendReport, out []Result, err error) {
	br = BackendReport{Name: t.Name, BareNote: t.BareNote, Writes: t.WritesNote}
	pg := newProgress(cfg.Progress, t.Name)
	defer func() {
		Derive(out)
		pg.finish(err)
	}()
	open := func() (*Env, error) { return t.Open(ctx, dir, cfg.Workers) }
	n := cfg.N

	if cfg.wants(WBare) || cfg.wants(WRaw) || cfg.wants(WSequential) || cfg.wants(WBatch) {
		res, info, err := runCeiling(ctx, cfg, open, pg, t.Name)
		br.Info = info
		out = append(out, res...)
		if err != nil {
			return br, out, err
		}
	}
	single := func(name string, workers int, mk func(*Env) (phase, error), ops int, after func(p phase, r *Result)) error {
		if !cfg.wants(name) {
			return nil
		}
		env, err := open()
		if err != nil {
			return err
		}
		defer env.Close()
		if br.Info.Name == "" {
			br.Info = env.Backend.Info()
		}
		pg.phase(name+": seeding", 0)
		p, err := mk(env)
		if err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		rec := (&recorder{tick: pg.phase(name, ops)}).counting(env.Backend).countingWrites(env, false)
		rec.writes.begin(ctx)
		if err := measure(ctx, p, ops, rec); err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		rec.writes.end(ctx)
		r := rec.result(t.Name, name, workers)
		if after != nil {
			after(p, &r)
		}
		out = append(out, r)
		return nil
	}
	mk := func(name string, n int) func(*Env) (phase, error) {
		return func(e *Env) (phase, error) { return newPhase(ctx, e, name, n, cfg.Workers, 0) }
	}
	if err := single(WParallel, cfg.Workers, mk(WParallel, n), n, nil); err != nil {
		return br, out, err
	}
	racing := func(p phase, r *Result) {
		rp := p.(*racingP)
		r.Duplicates, r.Raced = ptr(rp.dups), ptr(rp.raced)
	}
	for _, w := range []string{WBatchParallel, WRacing, WRacingBatch, WRacingStores, WRacingStoresBatch} {
		k := n
		if isBatch(w) {
			k = cfg.BatchN
		}
		after := racing
		if w == WBatchParallel {
			after = nil
		}
		if err := single(w, cfg.Workers, mk(w, k), k, after); err != nil {
			return br, out, err
		}
	}
	if cfg.wants(WGrowth) && t.GrowthNote != "" {
		out = append(out, Result{Backend: t.Name, Workload: WGrowth, Workers: 1, Note: t.GrowthNote})
	} else if cfg.wants(WGrowth) {
		r, err := runGrowth(ctx, cfg, open, pg, t.Name, dir)
		if err != nil {
			return br, out, fmt.Errorf("growth: %w", err)
		}
		out = append(out, r)
	}
	nr := max(n/4, 1)
	err = single(WRetry, 1, mk(WRetry, nr), nr, nil)
	return br, out, err
}

// Derive fills in the ratios that compare a backend's rows with each
// other, all measured in the same run: batch ÷ bare commits and ÷
// sequential, batch-parallel ÷ batch, each racing row ÷ the distinct-run
// row of its mode (parallel or batch-parallel) and its p99 ÷ the p99 of
// the one-dispatcher row of its mode (sequential or batch). A ratio whose
// reference row is missing or empty is left nil.
func Derive(rs []Result) {
	find := func(backend, workload string) *Result {
		for i := range rs {
			if rs[i].Backend == backend && rs[i].Workload == workload && rs[i].Ops > 0 {
				return &rs[i]
			}
		}
		return nil
	}
	ratio := func(a, b float64) *float64 {
		if a <= 0 || b <= 0 {
			return nil
		}
		return ptr(a / b)
	}
	for i := range rs {
		x := &rs[i]
		if x.Ops == 0 {
			continue
		}
		one, distinct := WSequential, WParallel
		if isBatch(x.Workload) {
			one, distinct = WBatch, WBatchParallel
		}
		switch x.Workload {
		case WBatch:
			if b := find(x.Backend, WBare); b != nil {
				x.BareRatio = ratio(x.OpsPerSec, b.OpsPerSec)
			}
			if s := find(x.Backend, WSequential); s != nil {
				x.SeqRatio = ratio(x.OpsPerSec, s.OpsPerSec)
			}
		case WParallel, WBatchParallel:
			if o := find(x.Backend, one); o != nil {
				x.Speedup = ratio(x.OpsPerSec, o.OpsPerSec)
			}
		case WRacing, WRacingBatch, WRacingStores, WRacingStoresBatch:
			if d := find(x.Backend, distinct); d != nil {
				x.VsDistinct = ratio(x.OpsPerSec, d.OpsPerSec)
			}
			if o := find(x.Backend, one); o != nil {
				x.P99VsOne = ratio(x.P99US, o.P99US)
			}
		}
	}
}

func ptr[T any](v T) *T { return &v }

// warmup is how many operations of each interleaved phase run unrecorded
// first (connections, statement caches, file growth).
func warmup(n int) int { return min(50, max(n/20, 1)) }

// batchWarmup is how many batch-mode admissions run unrecorded before the
// batch workload is measured: two batches.
func batchWarmup(n int) int { return min(2*batchSize, max(n/20, 1)) }

// bareWarmup is how many bare commits run before the ceiling is measured.
// A fresh store's first commits are slower than its steady state (on
// SQLite most likely because they extend the new WAL file until the first
// checkpoint lets it be reused). With only warmup(N) of them, quick runs
// (N = 2000) measured SQLite's bare commit at 2289–2682/s against
// 4283–6444/s after 1000, which inflated the ceiling ratio from about 0.5
// to 0.86. Bare commits are cheap, so every backend gets 1000.
const bareWarmup = 1000

// runCeiling runs bare, raw, sequential and batch interleaved in rounds,
// on three fresh stores (bare and raw share one: the bare commit has its own
// file or table), and computes the sequential row's ratios. Each round runs
// its share of N operations of the first three and of BatchN of batch.
func runCeiling(ctx context.Context, cfg Config, open func() (*Env, error), pg *progress, name string) ([]Result, backend.Info, error) {
	n, w := cfg.N, warmup(cfg.N)
	envR, err := open()
	if err != nil {
		return nil, backend.Info{}, err
	}
	defer envR.Close()
	envS, err := open()
	if err != nil {
		return nil, backend.Info{}, err
	}
	defer envS.Close()
	info := envS.Backend.Info()
	bn, bw := cfg.BatchN, batchWarmup(cfg.BatchN)
	pg.phase("seeding", 0)
	bare := &bareP{env: envR}
	raw, err := newRaw(ctx, envR, n+w)
	if err != nil {
		return nil, info, fmt.Errorf("raw: %w", err)
	}
	seq, err := newSequential(ctx, envS, "seq", n+w)
	if err != nil {
		return nil, info, fmt.Errorf("sequential: %w", err)
	}
	var batch phase
	var envB *Env
	if cfg.wants(WBatch) {
		if envB, err = open(); err != nil {
			return nil, info, err
		}
		defer envB.Close()
		if batch, err = newBatch(ctx, envB, "batch", bn+bw); err != nil {
			return nil, info, fmt.Errorf("batch: %w", err)
		}
	}
	type item struct {
		name string
		p    phase
		n    int // operations in all rounds
		rec  recorder
	}
	var items []*item
	for _, x := range []struct {
		name string
		p    phase
		n    int
		env  *Env // whose re-runs count (the bare commit's are not the adapter's)
	}{{WBare, bare, n, nil}, {WRaw, raw, n, envR}, {WSequential, seq, n, envS}, {WBatch, batch, bn, envB}} {
		if cfg.wants(x.name) {
			it := &item{name: x.name, p: x.p, n: x.n}
			if x.env != nil {
				it.rec.counting(x.env.Backend).countingWrites(x.env, false)
			} else {
				it.rec.countingWrites(envR, true) // the bare table, in raw's schema
			}
			items = append(items, it)
		}
	}
	total := 0
	for _, it := range items {
		total += it.n
		k := w
		switch it.name {
		case WBare:
			k = max(w, bareWarmup)
		case WBatch:
			k = bw
		}
		if err := it.p.run(ctx, k, &recorder{}); err != nil {
			return nil, info, fmt.Errorf("%s warm-up: %w", it.name, err)
		}
	}
	var names []string
	for _, it := range items {
		names = append(names, it.name)
	}
	tick := pg.phase(strings.Join(names, "+"), total)
	for _, it := range items {
		it.rec.writes.begin(ctx)
	}
	for r := range cfg.Rounds {
		for _, it := range items {
			k := it.n / cfg.Rounds
			if r == cfg.Rounds-1 {
				k = it.n - k*(cfg.Rounds-1)
			}
			it.rec.tick = tick
			if err := measure(ctx, it.p, k, &it.rec); err != nil {
				return nil, info, fmt.Errorf("%s: %w", it.name, err)
			}
		}
	}
	for _, it := range items {
		it.rec.writes.end(ctx)
	}
	var out []Result
	rate := map[string]float64{}
	for _, it := range items {
		r := it.rec.result(name, it.name, 1)
		rate[it.name] = r.OpsPerSec
		out = append(out, r)
	}
	for i := range out {
		if out[i].Workload != WSequential {
			continue
		}
		if b := rate[WBare]; b > 0 {
			out[i].CeilingRatio = ptr(out[i].OpsPerSec / (b / 3))
		}
		if r := rate[WRaw]; r > 0 {
			out[i].RawRatio = ptr(out[i].OpsPerSec / r)
		}
	}
	return out, info, nil
}

package bench

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/wfstore/wfstore/backend"
	"github.com/wfstore/wfstore/workflow"
)

// targets are the backends the tests and benchmarks run on: sqlite and
// bolt always, postgres when WFSTORE_POSTGRES_DSN is set.
func targets() []Target {
	ts := []Target{SQLite(), Bolt()}
	if dsn := os.Getenv("WFSTORE_POSTGRES_DSN"); dsn != "" {
		ts = append(ts, Postgres(dsn))
	}
	return ts
}

// TestRunSmoke runs every workload at tiny sizes on each backend and checks
// invariants, never timing: every workload ran its operations, racing found
// no duplicates, the ratios and JSON fields are there.
func TestRunSmoke(t *testing.T) {
	for _, tg := range targets() {
		t.Run(tg.Name, func(t *testing.T) {
			t.Parallel()
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
			defer cancel()
			cfg := Config{Targets: []Target{tg}, N: 24, BatchN: 240, Workers: 4, History: 350, SmallHistory: 120, Rounds: 2, Dir: t.TempDir()}
			rep, err := Run(ctx, cfg)
			if err != nil {
				t.Fatal(err)
			}
			byName := map[string]Result{}
			for _, r := range rep.Results {
				byName[r.Workload] = r
			}
			for _, w := range Workloads {
				r, ok := byName[w]
				if !ok {
					t.Fatalf("no %s result", w)
				}
				want := 24
				switch {
				case w == WRetry:
					want = 6
				case isBatch(w):
					want = 240
				}
				if r.Ops != want || r.OpsPerSec <= 0 || r.P50US <= 0 || r.P99US < r.P50US || r.AllocsPerOp <= 0 ||
					(runtime.GOOS == "linux" && r.CPUPerOpUS <= 0) {
					t.Errorf("%s: ops %d (want %d), %.0f/s, p50 %.0f p99 %.0f, allocs %.0f, cpu %.0f µs", w, r.Ops, want, r.OpsPerSec, r.P50US, r.P99US, r.AllocsPerOp, r.CPUPerOpUS)
				}
			}
			seq, grow := byName[WSequential], byName[WGrowth]
			if seq.CeilingRatio == nil || seq.RawRatio == nil || *seq.CeilingRatio <= 0 || *seq.RawRatio <= 0 {
				t.Errorf("sequential ratios missing: %+v", seq)
			}
			for _, w := range []string{WRacing, WRacingBatch, WRacingStores, WRacingStoresBatch} {
				race := byName[w]
				if race.Duplicates == nil || *race.Duplicates != 0 || race.Raced == nil || race.VsDistinct == nil || race.P99VsOne == nil {
					t.Errorf("%s: duplicates %v raced %v, ratios %v %v", w, race.Duplicates, race.Raced, race.VsDistinct, race.P99VsOne)
				}
			}
			if b := byName[WBatch]; b.BareRatio == nil || b.SeqRatio == nil {
				t.Errorf("batch ratios missing: %+v", b)
			}
			if b := byName[WBatchParallel]; b.Speedup == nil || b.Workers != 4 {
				t.Errorf("batch-parallel: %+v", b)
			}
			if grow.GrowthRatio == nil || grow.HistoryLarge != 350 || grow.HistorySmall != 120 {
				t.Errorf("growth: %+v", grow)
			}
			if p := byName[WParallel]; p.Speedup == nil || p.Workers != 4 {
				t.Errorf("parallel: %+v", p)
			}
			counts := tg.Name != "bolt" // bbolt never re-runs, so it counts nothing
			for _, w := range []string{WRaw, WSequential, WBatch, WParallel, WRacing, WRacingStoresBatch} {
				if got := byName[w].Reruns != nil; got != counts {
					t.Errorf("%s: re-runs reported %v, want %v", w, got, counts)
				}
			}
			if byName[WBare].Reruns != nil {
				t.Error("bare: the bare commit does not go through the adapter, its re-runs are not counted")
			}

			dir := t.TempDir()
			path := filepath.Join(dir, "b.json")
			if err := rep.WriteJSON(path); err != nil {
				t.Fatal(err)
			}
			b, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			var rows []map[string]any
			if err := json.Unmarshal(b, &rows); err != nil {
				t.Fatal(err)
			}
			if len(rows) != len(Workloads) {
				t.Fatalf("%d JSON rows, want %d", len(rows), len(Workloads))
			}
			for _, row := range rows {
				for _, f := range []string{"backend", "workload", "ops", "ops_per_sec", "p50_us", "p99_us", "allocs_per_op", "cpu_us_per_op"} {
					if _, ok := row[f]; !ok {
						t.Errorf("%v: no %s", row["workload"], f)
					}
				}
				extra := map[string]string{WSequential: "ceiling_ratio", WGrowth: "growth_ratio", WRacing: "duplicates",
					WRacingBatch: "duplicates", WBatch: "bare_ratio"}[row["workload"].(string)]
				if extra != "" {
					if _, ok := row[extra]; !ok {
						t.Errorf("%v: no %s", row["workload"], extra)
					}
				}
				if row["workload"] == WSequential {
					if _, ok := row["raw_ratio"]; !ok {
						t.Error("sequential: no raw_ratio")
					}
				}
			}

			out := filepath.Join(dir, "out")
			if err := rep.WriteDir(out, "test"); err != nil {
				t.Fatal(err)
			}
			for _, f := range []string{"report.md", "report.json", "throughput.svg", "growth.svg", "latency-" + tg.Name + ".svg"} {
				st, err := os.Stat(filepath.Join(out, f))
				if err != nil || st.Size() == 0 {
					t.Errorf("%s: %v", f, err)
				}
			}
			md, _ := os.ReadFile(filepath.Join(out, "report.md"))
			for _, s := range []string{"ceiling ratio", "duplicates **0**", "Targets", rep.Machine.GoVersion, "Modes side by side", "batch ≥ 2× bare commit rate"} {
				if !strings.Contains(string(md), s) {
					t.Errorf("report.md lacks %q", s)
				}
			}
		})
	}
}

// TestWorkloadSelection runs only the workloads asked for.
func TestWorkloadSelection(t *testing.T) {
	ctx := context.Background()
	rep, err := Run(ctx, Config{Targets: []Target{Bolt()}, N: 10, Workers: 2, Workloads: []string{WBare, WRacing}, Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range rep.Results {
		got = append(got, r.Workload)
	}
	if !slices.Equal(got, []string{WBare, WRacing}) {
		t.Fatalf("workloads %v", got)
	}
}

func TestPercentile(t *testing.T) {
	s := make([]time.Duration, 100)
	for i := range s {
		s[i] = time.Duration(i + 1)
	}
	for p, want := range map[float64]time.Duration{50: 50, 95: 95, 99: 99, 100: 100, 0: 1} {
		if got := percentile(s, p); got != want {
			t.Errorf("p%v = %v, want %v", p, got, want)
		}
	}
	if percentile(nil, 50) != 0 {
		t.Error("empty")
	}
}

// BenchmarkAdmission runs each workload per backend with b.N operations:
// BenchmarkAdmission/sqlite/sequential and so on (benchstat-friendly).
// Every b.N gets a fresh store; seeding is not timed. Growth is sequential
// admission into a store holding 1k or 10k historical attempts.
func BenchmarkAdmission(b *testing.B) {
	ctx := context.Background()
	type wl struct {
		name, workload string
		history        int
	}
	var wls []wl
	for _, w := range Workloads {
		if w == WGrowth {
			wls = append(wls, wl{"growth/history=1000", w, 1000}, wl{"growth/history=10000", w, 10000})
			continue
		}
		wls = append(wls, wl{w, w, 0})
	}
	for _, tg := range targets() {
		b.Run(tg.Name, func(b *testing.B) {
			for _, w := range wls {
				b.Run(w.name, func(b *testing.B) {
					env, err := tg.Open(ctx, b.TempDir(), 8)
					if err != nil {
						b.Fatal(err)
					}
					defer env.Close()
					workers := 1
					if w.workload != WBatch && (w.workload == WParallel || isBatch(w.workload) || strings.HasPrefix(w.workload, WRacing)) {
						workers = 8
					}
					p, err := newPhase(ctx, env, w.workload, b.N, workers, w.history)
					if err != nil {
						b.Fatal(err)
					}
					rec := &recorder{}
					b.ReportAllocs()
					b.ResetTimer()
					if err := p.run(ctx, b.N, rec); err != nil {
						b.Fatal(err)
					}
					b.StopTimer()
					if rp, ok := p.(*racingP); ok && rp.dups != 0 {
						b.Fatalf("%d duplicates", rp.dups)
					}
					r := rec.result(tg.Name, w.workload, workers)
					b.ReportMetric(r.P50US, "p50-µs")
					b.ReportMetric(r.P99US, "p99-µs")
				})
			}
		})
	}
}

// The raw baseline writes exactly the rows a Store admission writes: the
// same run, activation, attempt and events, field for field, when both
// admit the same seeded activation at the same time.
func TestRawWritesWhatTheStoreWrites(t *testing.T) {
	for _, tg := range targets() {
		t.Run(tg.Name, func(t *testing.T) {
			t.Parallel()
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			now := time.UnixMilli(1_800_000_000_000)
			var got [2]backend.Found
			var events [2][]backend.Event
			for i := range 2 {
				env, err := tg.Open(ctx, t.TempDir(), 2)
				if err != nil {
					t.Fatal(err)
				}
				defer env.Close()
				keys, err := seedRuns(ctx, env, "same", 1, 1, nil, now)
				if err != nil {
					t.Fatal(err)
				}
				k := keys[0]
				if i == 0 {
					sum, err := env.Store.Dispatch(ctx, &noopOwner{}, workflow.DispatchOptions{RunID: k.RunID, Limit: 1}, now)
					if err != nil || len(sum.Admitted) != 1 {
						t.Fatalf("store admission: %v %+v", err, sum)
					}
				} else if err := rawAdmit(ctx, env.Backend, backend.ActivationKey(k), now); err != nil {
					t.Fatal(err)
				}
				err = env.Backend.View(ctx, func(r backend.ReadTx) error {
					bk := backend.ActivationKey(k)
					got[i], err = r.Load(ctx, backend.Lookup{Runs: []string{k.RunID}, Activations: []backend.ActivationKey{bk},
						Attempts: []backend.AttemptKey{{ActivationKey: bk, Attempt: 1}}})
					if err != nil {
						return err
					}
					events[i], err = r.Events(ctx, backend.EventQuery{RunID: k.RunID, Limit: 100})
					return err
				})
				if err != nil {
					t.Fatal(err)
				}
			}
			// Both wrote a fresh 128-bit holder token with the handoff;
			// the tokens differ by design.
			for i := range got {
				for ak, a := range got[i].Attempts {
					if len(a.HandoffToken) != 32 {
						t.Errorf("attempt %v has holder token %q, want 32 hex digits", ak, a.HandoffToken)
					}
					a.HandoffToken = ""
					got[i].Attempts[ak] = a
				}
			}
			if !reflect.DeepEqual(got[0], got[1]) {
				t.Errorf("records differ:\nstore %+v\nraw   %+v", got[0], got[1])
			}
			if !reflect.DeepEqual(events[0], events[1]) {
				t.Errorf("events differ:\nstore %+v\nraw   %+v", events[0], events[1])
			}
		})
	}
}

package bench

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/wfstore/wfstore/backend"
)

// Performance targets, checked on every report.
const (
	TargetCeiling  = 0.6
	TargetRaw      = 0.85
	TargetGrowth   = 1.25
	TargetPGSpeed  = 2.5
	targetsSection = "Targets"

	// Batch admission: batch ≥ TargetBatchBare × the backend's bare commit
	// rate (GoalBatchBare is the goal beyond the target), and ≥
	// TargetBatchSeq × its own one-at-a-time sequential rate.
	TargetBatchBare = 2.0
	GoalBatchBare   = 3.0
	TargetBatchSeq  = 5.0
	// Racing dispatchers of one Store, in both modes: ≥ TargetRacingRate ×
	// the distinct-run rate of the same mode, p99 ≤ TargetRacingP99 × the
	// one-dispatcher p99 of the same mode, and 0 duplicates.
	TargetRacingRate = 0.8
	TargetRacingP99  = 10.0
	// One at a time, Workers dispatchers on distinct runs ≥ TargetParallel ×
	// sequential, on every backend.
	TargetParallel = 2.0
)

// MarkPartial records that the run stopped early, and why; every row and
// every report written afterwards says so.
func (r *Report) MarkPartial(why string) {
	r.Partial = why
	for i := range r.Results {
		r.Results[i].Partial = true
	}
}

// Where names what the run was measuring last: the backend, and the
// workloads of it measured so far.
func (r *Report) Where() string {
	if len(r.Backends) == 0 {
		return "before the first backend"
	}
	b := r.Backends[len(r.Backends)-1].Name
	var done []string
	for _, x := range r.Results {
		if x.Backend == b && x.Ops > 0 {
			done = append(done, x.Workload)
		}
	}
	if len(done) == 0 {
		return "measuring " + b + ", none of its workloads finished"
	}
	return "measuring " + b + " after " + strings.Join(done, ", ")
}

// Measured is the number of rows with measurements.
func (r *Report) Measured() int {
	n := 0
	for _, x := range r.Results {
		if x.Ops > 0 {
			n++
		}
	}
	return n
}

// WritePartial writes the partial-run banner, when the run was partial.
func (r *Report) WritePartial(w io.Writer) {
	if r.Partial != "" {
		fmt.Fprintf(w, "**PARTIAL REPORT**: the run was %s; what follows is what was measured before.\n\n", r.Partial)
	}
}

// WriteTable writes the results as one markdown table.
func (r *Report) WriteTable(w io.Writer) {
	fmt.Fprintln(w, "| backend | workload | workers | ops | ops/s | p50 µs | p95 µs | p99 µs | allocs/op | KB/op | CPU µs/op | machine CPU µs/op (busy) | rows written/op | WAL B/op | ratio and notes |")
	fmt.Fprintln(w, "|---|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|---|")
	for _, x := range r.Results {
		if x.Ops == 0 {
			fmt.Fprintf(w, "| %s | %s | | | | | | | | | | | | | %s |\n", x.Backend, x.Workload, x.Note)
			continue
		}
		machine := ""
		if x.MachineBusyPct > 0 {
			machine = fmt.Sprintf("%.0f (%.0f%%)", x.MachineCPUPerOpUS, x.MachineBusyPct)
		}
		fmt.Fprintf(w, "| %s | %s | %d | %d | %.0f | %.0f | %.0f | %.0f | %.0f | %.1f | %.0f | %s | %s | %s | %s |\n",
			x.Backend, x.Workload, x.Workers, x.Ops, x.OpsPerSec, x.P50US, x.P95US, x.P99US,
			x.AllocsPerOp, x.BytesPerOp/1024, x.CPUPerOpUS, machine, perOp(x.RowsPerOp, 1), perOp(x.WALBytesPerOp, 0), r.notes(x))
	}
}

// perOp formats a per-operation count with prec decimals, "n/a" where the
// backend does not tell it.
func perOp(v *float64, prec int) string {
	if v == nil {
		return "n/a"
	}
	return strconv.FormatFloat(*v, 'f', prec, 64)
}

func (r *Report) rate(backend, workload string) float64 {
	for _, x := range r.Results {
		if x.Backend == backend && x.Workload == workload {
			return x.OpsPerSec
		}
	}
	return 0
}

// notes is the ratio column: each ratio with the absolute rates behind it.
func (r *Report) notes(x Result) string {
	var s []string
	if x.CeilingRatio != nil {
		b := r.rate(x.Backend, WBare)
		s = append(s, fmt.Sprintf("ceiling ratio **%.2f** (bare %.0f/s ÷ 3 = %.0f/s)", *x.CeilingRatio, b, b/3))
	}
	if x.RawRatio != nil {
		s = append(s, fmt.Sprintf("raw ratio **%.2f** (raw %.0f/s)", *x.RawRatio, r.rate(x.Backend, WRaw)))
	}
	if x.Speedup != nil {
		s = append(s, fmt.Sprintf("**%.2f×** %s (%.0f/s)", *x.Speedup, oneOf(x.Workload), r.rate(x.Backend, oneOf(x.Workload))))
	}
	if x.BareRatio != nil {
		s = append(s, fmt.Sprintf("**%.2f×** bare commits (%.0f/s)", *x.BareRatio, r.rate(x.Backend, WBare)))
	}
	if x.SeqRatio != nil {
		s = append(s, fmt.Sprintf("**%.2f×** sequential (%.0f/s)", *x.SeqRatio, r.rate(x.Backend, WSequential)))
	}
	if x.VsDistinct != nil {
		s = append(s, fmt.Sprintf("**%.2f×** %s (%.0f/s)", *x.VsDistinct, distinctOf(x.Workload), r.rate(x.Backend, distinctOf(x.Workload))))
	}
	if x.P99VsOne != nil {
		s = append(s, fmt.Sprintf("p99 **%.1f×** %s's", *x.P99VsOne, oneOf(x.Workload)))
	}
	if x.Duplicates != nil {
		s = append(s, fmt.Sprintf("duplicates **%d**, raced %d", *x.Duplicates, *x.Raced))
	}
	if rr := x.Reruns; rr != nil {
		if n := rr.Busy + rr.Conflict + rr.Deadlock + rr.Transient + rr.OutcomeUnknown; n > 0 || rr.Exhausted > 0 {
			s = append(s, fmt.Sprintf("re-runs %.3f/op (%s)", float64(n)/float64(x.Ops), rerunCauses(*rr)))
		}
	}
	if x.GrowthRatio != nil {
		s = append(s, fmt.Sprintf("growth ratio **%.2f** (%s: %.0f/s, %s: %.0f/s; load %.0f s)",
			*x.GrowthRatio, count(x.HistorySmall), x.SmallOpsPerSec, count(x.HistoryLarge), x.OpsPerSec, x.LoadSeconds))
	}
	switch x.Workload {
	case WBare:
		s = append(s, "commits")
	case WRetry:
		s = append(s, "round trips (2 admissions + observation + consume)")
	}
	if x.Note != "" {
		s = append(s, x.Note)
	}
	return strings.Join(s, "; ")
}

// rerunCauses lists the non-zero causes of rr.
func rerunCauses(rr backend.Reruns) string {
	var s []string
	for _, c := range []struct {
		name string
		n    int64
	}{{"busy", rr.Busy}, {"conflict", rr.Conflict}, {"deadlock", rr.Deadlock}, {"transient", rr.Transient},
		{"outcome unknown", rr.OutcomeUnknown}, {"gave up", rr.Exhausted}} {
		if c.n > 0 {
			s = append(s, fmt.Sprintf("%s %d", c.name, c.n))
		}
	}
	return strings.Join(s, ", ")
}

// oneOf is the one-dispatcher workload of w's mode: batch or sequential.
func oneOf(w string) string {
	if isBatch(w) {
		return WBatch
	}
	return WSequential
}

// distinctOf is the distinct-run workload of w's mode.
func distinctOf(w string) string {
	if isBatch(w) {
		return WBatchParallel
	}
	return WParallel
}

func count(n int) string {
	switch {
	case n >= 1_000_000 && n%1_000_000 == 0:
		return fmt.Sprintf("%dM", n/1_000_000)
	case n >= 1000 && n%1000 == 0:
		return fmt.Sprintf("%dk", n/1000)
	}
	return fmt.Sprint(n)
}

// cpuBoundPct is the machine busy share from which a workload is reported
// as CPU-bound on the machine it ran on.
const cpuBoundPct = 85

// Check is one target's status on one backend.
type Check struct {
	Backend, Target, Value string
	Met                    bool
}

// Checks evaluates the performance targets on the results (their ratios
// come from Derive and the ceiling rounds).
func (r *Report) Checks() []Check {
	var out []Check
	for _, x := range r.Results {
		if x.CeilingRatio != nil {
			out = append(out, Check{x.Backend, fmt.Sprintf("sequential ceiling ratio ≥ %.2f", TargetCeiling),
				fmt.Sprintf("%.2f (%.0f admissions/s)", *x.CeilingRatio, x.OpsPerSec), *x.CeilingRatio >= TargetCeiling})
		}
		if x.RawRatio != nil {
			out = append(out, Check{x.Backend, fmt.Sprintf("raw ratio ≥ %.2f", TargetRaw),
				fmt.Sprintf("%.2f", *x.RawRatio), *x.RawRatio >= TargetRaw})
		}
		if x.BareRatio != nil {
			v := fmt.Sprintf("%.2f× (batch %.0f/s, bare %.0f commits/s); goal %.0f× ", *x.BareRatio, x.OpsPerSec, r.rate(x.Backend, WBare), GoalBatchBare)
			if *x.BareRatio >= GoalBatchBare {
				v += "reached"
			} else {
				v += "not reached"
			}
			out = append(out, Check{x.Backend, fmt.Sprintf("batch ≥ %.0f× bare commit rate", TargetBatchBare), v, *x.BareRatio >= TargetBatchBare})
		}
		if x.SeqRatio != nil {
			out = append(out, Check{x.Backend, fmt.Sprintf("batch ≥ %.0f× sequential", TargetBatchSeq),
				fmt.Sprintf("%.2f× (sequential %.0f/s)", *x.SeqRatio, r.rate(x.Backend, WSequential)), *x.SeqRatio >= TargetBatchSeq})
		}
		if x.GrowthRatio != nil {
			out = append(out, Check{x.Backend, fmt.Sprintf("growth ratio (%s vs %s) ≤ %.2f", count(x.HistoryLarge), count(x.HistorySmall), TargetGrowth),
				fmt.Sprintf("%.2f", *x.GrowthRatio), *x.GrowthRatio <= TargetGrowth})
		}
		// Racing dispatchers of one Store; those of separate Stores are
		// checked for duplicates only.
		if x.Workload == WRacing || x.Workload == WRacingBatch {
			if x.VsDistinct != nil {
				out = append(out, Check{x.Backend, fmt.Sprintf("%s: %d racing dispatchers ≥ %.1f× %s", x.Workload, x.Workers, TargetRacingRate, distinctOf(x.Workload)),
					fmt.Sprintf("%.2f× (%.0f/s vs %.0f/s)", *x.VsDistinct, x.OpsPerSec, r.rate(x.Backend, distinctOf(x.Workload))), *x.VsDistinct >= TargetRacingRate})
			}
			if x.P99VsOne != nil {
				out = append(out, Check{x.Backend, fmt.Sprintf("%s: p99 ≤ %.0f× %s p99", x.Workload, TargetRacingP99, oneOf(x.Workload)),
					fmt.Sprintf("%.1f× (%s vs %s)", *x.P99VsOne, ms(x.P99US), ms(r.p99(x.Backend, oneOf(x.Workload)))), *x.P99VsOne <= TargetRacingP99})
			}
		}
		if x.Duplicates != nil {
			out = append(out, Check{x.Backend, x.Workload + ": 0 duplicates", fmt.Sprintf("%d (raced %d)", *x.Duplicates, *x.Raced), *x.Duplicates == 0})
		}
		if x.Speedup != nil && x.Workload == WParallel {
			v := fmt.Sprintf("%.2f×", *x.Speedup)
			if x.MachineBusyPct > 0 {
				// Whether the machine had CPU to spare says what a miss means.
				v += fmt.Sprintf(" (machine %.0f%% busy", x.MachineBusyPct)
				if x.MachineBusyPct >= cpuBoundPct {
					v += ": CPU-bound here"
				}
				v += ")"
			}
			out = append(out, Check{x.Backend, fmt.Sprintf("%d dispatchers on distinct runs ≥ %.0f× sequential", x.Workers, TargetParallel),
				v, *x.Speedup >= TargetParallel})
			if x.Backend == "postgres" {
				out = append(out, Check{x.Backend, fmt.Sprintf("%d dispatchers ≥ %.1f× sequential", x.Workers, TargetPGSpeed),
					v, *x.Speedup >= TargetPGSpeed})
			}
		}
	}
	return out
}

func (r *Report) p99(backend, workload string) float64 {
	for _, x := range r.Results {
		if x.Backend == backend && x.Workload == workload {
			return x.P99US
		}
	}
	return 0
}

// ms formats microseconds as milliseconds.
func ms(us float64) string {
	if us < 10_000 {
		return fmt.Sprintf("%.1f ms", us/1000)
	}
	return fmt.Sprintf("%.0f ms", us/1000)
}

// WriteChecks writes the targets as a markdown list.
func (r *Report) WriteChecks(w io.Writer) {
	for _, c := range r.Checks() {
		mark := "met"
		if !c.Met {
			mark = "**MISSED**"
		}
		fmt.Fprintf(w, "- %s — %s: %s — %s\n", c.Backend, c.Target, c.Value, mark)
	}
}

// WriteWrites writes, per measured backend, how its rows written and WAL
// bytes per operation were counted, or why they were not.
func (r *Report) WriteWrites(w io.Writer) {
	for _, b := range r.Backends {
		if b.Skipped == "" && b.Writes != "" {
			fmt.Fprintf(w, "%s writes: %s\n", b.Name, b.Writes)
		}
	}
}

// WriteSkips writes one line per skipped backend.
func (r *Report) WriteSkips(w io.Writer) {
	for _, b := range r.Backends {
		if b.Skipped != "" {
			fmt.Fprintf(w, "%s: skipped: %s\n", b.Name, b.Skipped)
		}
	}
}

// WriteJSON writes one object per backend × workload.
func (r *Report) WriteJSON(path string) error {
	b, err := json.MarshalIndent(r.Results, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(b, '\n'), 0o644)
}

// WriteDir writes report.md, report.json and the charts (SVG and PNG)
// into dir.
// command is the command line, recorded in the report.
func (r *Report) WriteDir(dir, command string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	charts, err := r.writeCharts(dir)
	if err != nil {
		return fmt.Errorf("charts: %w", err)
	}
	full, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "report.json"), append(full, '\n'), 0o644); err != nil {
		return err
	}
	var sb strings.Builder
	r.WriteMarkdown(&sb, command)
	for _, c := range charts {
		fmt.Fprintf(&sb, "![%s](%s)\n\n", strings.TrimSuffix(c, ".svg"), c)
	}
	return os.WriteFile(filepath.Join(dir, "report.md"), []byte(sb.String()), 0o644)
}

// WriteMarkdown writes the whole report: machine, settings, table, targets.
func (r *Report) WriteMarkdown(w io.Writer, command string) {
	m := r.Machine
	fmt.Fprintf(w, "# wfstore bench\n\n")
	r.WritePartial(w)
	fmt.Fprintf(w, "- command: `%s`\n", command)
	fmt.Fprintf(w, "- date: %s (%.0f s)\n", r.Started.UTC().Format(time.RFC3339), r.Seconds)
	fmt.Fprintf(w, "- machine: %s, %d cores, %s %s, kernel %s, %s\n", m.CPU, m.Cores, m.OS, m.Arch, m.Kernel, m.GoVersion)
	c := r.Config
	fmt.Fprintf(w, "- sizes: N=%d admissions per workload (%d per batch-mode workload, batch size %d), %d workers, growth %s vs %s historical attempts, %d interleaved rounds, quick=%v\n\n",
		c.N, c.BatchN, batchSize, c.Workers, count(c.History), count(c.SmallHistory), c.Rounds, c.Quick)
	fmt.Fprintf(w, "## Backends\n\n")
	for _, b := range r.Backends {
		if b.Skipped != "" {
			fmt.Fprintf(w, "- **%s**: skipped: %s\n", b.Name, b.Skipped)
			continue
		}
		keys := make([]string, 0, len(b.Info.Settings))
		for k := range b.Info.Settings {
			if k != "path" && k != "schema" {
				keys = append(keys, k)
			}
		}
		slices.Sort(keys)
		var kv []string
		for _, k := range keys {
			kv = append(kv, k+"="+b.Info.Settings[k])
		}
		fmt.Fprintf(w, "- **%s** %s: %s\n  - bare commit: %s\n", b.Name, b.Info.Version, strings.Join(kv, ", "), b.BareNote)
		if b.Writes != "" {
			fmt.Fprintf(w, "  - writes: %s\n", b.Writes)
		}
	}
	fmt.Fprintf(w, "\n## Modes side by side\n\n")
	r.WriteSummary(w)
	fmt.Fprintf(w, "\n## Results\n\n")
	r.WriteTable(w)
	fmt.Fprintf(w, "\nLatency is per admission (per commit for bare, per round trip for retry), from the owner's Plan call to the receipt commit. allocs/op, KB/op and CPU µs/op (user + system time) count the whole benchmark process while the workload ran: the client side, which for SQLite and bbolt includes the engine and for Postgres leaves out the server. Machine CPU µs/op (Linux) is the busy CPU time of every process on the machine per operation, a local PostgreSQL server's included (and anything else that ran meanwhile), with the busy share of all CPUs in parentheses: near 100%%, the workload was CPU-bound here. The kernel samples it at its timer tick, so it is approximate (it can read below the process's own CPU µs/op). Rows written/op are the rows the store's tables inserted, updated and deleted per operation: on PostgreSQL from the server's statistics (pg_stat_user_tables, read once the pool's server processes exited and flushed them; rows of rolled-back transactions included), on SQLite from its preupdate hook (committed rows only). WAL B/op (PostgreSQL) is the WAL the server wrote per operation, from its WAL position around each measured stretch: server-wide, so only a quiet server gives the store's own. n/a: not measured on that backend (each backend's writes line says why).\n")
	fmt.Fprintf(w, "\n## %s\n\n", targetsSection)
	r.WriteChecks(w)
	fmt.Fprintln(w)
}

// summaryRows are the rows of WriteSummary, in order.
var summaryRows = []struct{ workload, label string }{
	{WBare, "bare commits"},
	{WSequential, "sequential, one at a time"},
	{WBatch, "batch (1 dispatcher, batch 100)"},
	{WParallel, "parallel: 8 dispatchers, distinct runs"},
	{WBatchParallel, "batch-parallel: 8, distinct runs"},
	{WRacing, "racing: 8 on one Store, one at a time"},
	{WRacingBatch, "racing-batch: 8 on one Store, batch"},
	{WRacingStores, "racing-stores: 8 Stores, one at a time"},
	{WRacingStoresBatch, "racing-stores-batch: 8 Stores, batch"},
}

// backendNames lists the measured backends in report order.
func (r *Report) backendNames() []string {
	var out []string
	for _, x := range r.Results {
		if !slices.Contains(out, x.Backend) {
			out = append(out, x.Backend)
		}
	}
	return out
}

// find returns the measured row of backend × workload, or nil.
func (r *Report) find(backend, workload string) *Result {
	for i := range r.Results {
		if x := &r.Results[i]; x.Backend == backend && x.Workload == workload && x.Ops > 0 {
			return x
		}
	}
	return nil
}

// cpuPerOp is the machine CPU per operation, or the process's where the
// machine's was not measured (marked so).
func cpuPerOp(x *Result) string {
	if x.MachineCPUPerOpUS > 0 {
		return fmt.Sprintf("%.0f µs", x.MachineCPUPerOpUS)
	}
	if x.CPUPerOpUS > 0 {
		return fmt.Sprintf("%.0f µs (process)", x.CPUPerOpUS)
	}
	return "—"
}

// WriteSummary writes the modes side by side, one column per backend, each
// cell with the rate, the p99, the machine CPU per admission and the
// ratios the targets use; then the peer, when one ran.
func (r *Report) WriteSummary(w io.Writer) {
	names := r.backendNames()
	if len(names) == 0 {
		return
	}
	fmt.Fprintf(w, "| per admission (per commit for bare): rate · p99 · machine CPU | %s |\n", strings.Join(names, " | "))
	fmt.Fprintf(w, "|---|%s\n", strings.Repeat("---|", len(names)))
	for _, row := range summaryRows {
		cells := make([]string, len(names))
		measured := false
		for i, b := range names {
			x := r.find(b, row.workload)
			if x == nil {
				continue
			}
			measured = true
			c := fmt.Sprintf("%.0f/s · %s · %s", x.OpsPerSec, ms(x.P99US), cpuPerOp(x))
			var extra []string
			if x.BareRatio != nil {
				extra = append(extra, fmt.Sprintf("%.2f× bare", *x.BareRatio))
			}
			if x.SeqRatio != nil {
				extra = append(extra, fmt.Sprintf("%.1f× seq", *x.SeqRatio))
			}
			if x.Speedup != nil {
				extra = append(extra, fmt.Sprintf("%.2f× %s", *x.Speedup, oneOf(x.Workload)))
			}
			if x.VsDistinct != nil {
				extra = append(extra, fmt.Sprintf("%.2f× distinct", *x.VsDistinct))
			}
			if x.P99VsOne != nil {
				extra = append(extra, fmt.Sprintf("p99 %.1f× %s", *x.P99VsOne, oneOf(x.Workload)))
			}
			if x.Duplicates != nil {
				extra = append(extra, fmt.Sprintf("dups %d", *x.Duplicates))
			}
			if len(extra) > 0 {
				c += " (" + strings.Join(extra, ", ") + ")"
			}
			cells[i] = c
		}
		if measured {
			fmt.Fprintf(w, "| %s | %s |\n", row.label, strings.Join(cells, " | "))
		}
	}
	r.WritePeers(w)
}

// writesPer is ", R rows written and W WAL bytes per <unit>", or "" when
// neither was counted.
func writesPer(rows, wal *float64, unit string) string {
	if rows == nil && wal == nil {
		return ""
	}
	return fmt.Sprintf(", %s rows written and %s WAL bytes per %s", perOp(rows, 2), perOp(wal, 0), unit)
}

// WritePeers writes each peer's drain next to wfstore's batch figure on
// the same database, and what the two do differently.
func (r *Report) WritePeers(w io.Writer) {
	for _, p := range r.Peers {
		if p.Skipped != "" {
			fmt.Fprintf(w, "\n%s (peer): not measured: %s\n", p.Name, p.Skipped)
			continue
		}
		if p.Name == "probe" {
			r.writeProbe(w, p)
			continue
		}
		fmt.Fprintf(w, "\n%s %s (peer, same PostgreSQL, same run): drained %d jobs at **%.0f jobs/s**, machine CPU %.0f µs/job (%.0f%% busy; MaxWorkers %d; backlog inserted in %.1f s, not counted)%s.",
			p.Name, p.Version, p.Jobs, p.JobsPerSec, p.MachineCPUPerJobUS, p.MachineBusyPct, p.MaxWorkers, p.InsertSeconds,
			writesPer(p.RowsPerJob, p.WALBytesPerJob, "job"))
		if b := r.find("postgres", WBatch); b != nil {
			fmt.Fprintf(w, " wfstore postgres batch: **%.0f admissions/s**, %s per admission: %.2f× %s%s.",
				b.OpsPerSec, cpuPerOp(b), b.OpsPerSec/p.JobsPerSec, p.Name, writesPer(b.RowsPerOp, b.WALBytesPerOp, "admission"))
		}
		fmt.Fprintf(w, "\nNot the same work: %s\n", PeerSemantics)
	}
}

// writeProbe writes the hand-written probe's admissions next to River's
// drain and wfstore's batch, and what the probe leaves out.
func (r *Report) writeProbe(w io.Writer, p Peer) {
	fmt.Fprintf(w, "\n%s (%s, same PostgreSQL, same run): admitted %d at **%.0f admissions/s**, machine CPU %.0f µs per admission (%.0f%% busy)%s.",
		p.Name, p.Version, p.Jobs, p.JobsPerSec, p.MachineCPUPerJobUS, p.MachineBusyPct,
		writesPer(p.RowsPerJob, p.WALBytesPerJob, "admission"))
	for _, o := range r.Peers {
		if o.Name == "river" && o.Skipped == "" && o.JobsPerSec > 0 {
			fmt.Fprintf(w, " Probe %.2f× %s.", p.JobsPerSec/o.JobsPerSec, o.Name)
		}
	}
	if b := r.find("postgres", WBatch); b != nil && p.JobsPerSec > 0 {
		fmt.Fprintf(w, " wfstore postgres batch: %.2f× the probe.", b.OpsPerSec/p.JobsPerSec)
	}
	fmt.Fprintf(w, "\n%s\n", ProbeSemantics)
}

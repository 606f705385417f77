package bench

import (
	"bytes"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/wfstore/wfstore/backend"
)

// row is a measured result of backend b for workload w.
func row(b, w string, workers int, rate, p99 float64) Result {
	return Result{Backend: b, Workload: w, Workers: workers, Ops: 100, OpsPerSec: rate, P99US: p99}
}

// oneRun is one backend's rows as a run leaves them before Derive.
func oneRun(b string) []Result {
	return []Result{
		row(b, WBare, 1, 3000, 400),
		row(b, WSequential, 1, 500, 3000),
		row(b, WBatch, 1, 7500, 40_000),
		row(b, WParallel, 8, 900, 20_000),
		row(b, WBatchParallel, 8, 9000, 300_000),
		row(b, WRacing, 8, 810, 31_000),
		row(b, WRacingBatch, 8, 6000, 500_000),
		row(b, WRacingStores, 8, 300, 90_000),
	}
}

func byWorkload(rs []Result) map[string]Result {
	m := map[string]Result{}
	for _, r := range rs {
		m[r.Backend+"/"+r.Workload] = r
	}
	return m
}

// Derive compares each row with the rows of its own backend and mode.
func TestDeriveComputesRatiosWithinOneBackendAndMode(t *testing.T) {
	rs := append(oneRun("sqlite"), oneRun("postgres")...)
	// The other backend's figures must not leak in.
	for i := range rs {
		if rs[i].Backend == "postgres" {
			rs[i].OpsPerSec *= 2
			rs[i].P99US *= 3
		}
	}
	Derive(rs)
	m := byWorkload(rs)
	for _, b := range []string{"sqlite", "postgres"} {
		batch := m[b+"/"+WBatch]
		require.NotNil(t, batch.BareRatio, b)
		require.NotNil(t, batch.SeqRatio, b)
		assert.InDelta(t, 2.5, *batch.BareRatio, 1e-9, b)
		assert.InDelta(t, 15.0, *batch.SeqRatio, 1e-9, b)

		bp := m[b+"/"+WBatchParallel]
		require.NotNil(t, bp.Speedup)
		assert.InDelta(t, 1.2, *bp.Speedup, 1e-9, "batch-parallel ÷ batch")

		race := m[b+"/"+WRacing]
		require.NotNil(t, race.VsDistinct)
		require.NotNil(t, race.P99VsOne)
		assert.InDelta(t, 0.9, *race.VsDistinct, 1e-9, "racing ÷ parallel")
		assert.InDelta(t, 31_000.0/3000, *race.P99VsOne, 1e-9, "racing p99 ÷ sequential p99")

		rb := m[b+"/"+WRacingBatch]
		require.NotNil(t, rb.VsDistinct)
		require.NotNil(t, rb.P99VsOne)
		assert.InDelta(t, 6000.0/9000, *rb.VsDistinct, 1e-9, "racing-batch ÷ batch-parallel")
		assert.InDelta(t, 12.5, *rb.P99VsOne, 1e-9, "racing-batch p99 ÷ batch p99")

		rs := m[b+"/"+WRacingStores]
		require.NotNil(t, rs.VsDistinct)
		assert.InDelta(t, 300.0/900, *rs.VsDistinct, 1e-9)

		assert.Nil(t, m[b+"/"+WSequential].BareRatio, "only batch has a bare ratio")
		assert.Nil(t, m[b+"/"+WParallel].VsDistinct)
		require.NotNil(t, m[b+"/"+WParallel].Speedup)
		assert.InDelta(t, 1.8, *m[b+"/"+WParallel].Speedup, 1e-9, "parallel ÷ sequential")
	}
}

// A ratio whose reference row is missing, or was not measured, stays nil.
func TestDeriveLeavesRatiosWithoutReferenceUnset(t *testing.T) {
	rs := []Result{
		row("bolt", WBatch, 1, 5000, 1000),
		{Backend: "bolt", Workload: WBare, Note: "not measured"},
		row("bolt", WRacingBatch, 8, 100, 10),
	}
	Derive(rs)
	assert.Nil(t, rs[0].BareRatio)
	assert.Nil(t, rs[0].SeqRatio)
	assert.Nil(t, rs[2].VsDistinct, "no batch-parallel row")
	require.NotNil(t, rs[2].P99VsOne)
	assert.InDelta(t, 0.01, *rs[2].P99VsOne, 1e-9)
}

// checks maps "backend: target" to its check.
type checks map[string]Check

// checksOf returns the checks of r keyed by backend and target.
func checksOf(r *Report) checks {
	m := checks{}
	for _, c := range r.Checks() {
		m[c.Backend+": "+c.Target] = c
	}
	return m
}

// met returns whether the check named k is met, failing t if there is none.
func (c checks) met(t *testing.T, k string) bool {
	t.Helper()
	x, ok := c[k]
	require.True(t, ok, "no check %q in %v", k, c)
	return x.Met
}

func TestChecksEvaluateIssueTargetsAtTheirBounds(t *testing.T) {
	dups := func(n int) *int { return &n }
	rs := oneRun("bolt")
	for i := range rs {
		if strings.HasPrefix(rs[i].Workload, WRacing) {
			rs[i].Duplicates, rs[i].Raced = dups(0), dups(7)
		}
	}
	// racing-stores has a duplicate: its only target is the duplicates one.
	rs[7].Duplicates = dups(1)
	r := &Report{Results: rs}
	Derive(r.Results)
	c := checksOf(r)

	assert.True(t, c.met(t, "bolt: batch ≥ 2× bare commit rate"), "2.5× ≥ 2×")
	assert.Contains(t, c["bolt: batch ≥ 2× bare commit rate"].Value, "goal 3× not reached")
	assert.True(t, c.met(t, "bolt: batch ≥ 5× sequential"), "15× ≥ 5×")
	assert.False(t, c.met(t, "bolt: 8 dispatchers on distinct runs ≥ 2× sequential"), "1.8× < 2×")
	assert.True(t, c.met(t, "bolt: racing: 8 racing dispatchers ≥ 0.8× parallel"), "0.9×")
	assert.False(t, c.met(t, "bolt: racing: p99 ≤ 10× sequential p99"), "10.3× > 10×")
	assert.True(t, c.met(t, "bolt: racing: 0 duplicates"))
	assert.False(t, c.met(t, "bolt: racing-batch: 8 racing dispatchers ≥ 0.8× batch-parallel"), "0.67× < 0.8×")
	assert.False(t, c.met(t, "bolt: racing-batch: p99 ≤ 10× batch p99"), "12.5× > 10×")
	assert.True(t, c.met(t, "bolt: racing-batch: 0 duplicates"))
	assert.False(t, c.met(t, "bolt: racing-stores: 0 duplicates"))
	for k := range c {
		assert.False(t, strings.HasPrefix(k, "bolt: racing-stores: 8"), "racing-stores has no rate target: %s", k)
	}
	_, pg := c["bolt: 8 dispatchers ≥ 2.5× sequential"]
	assert.False(t, pg, "the 2.5× target is Postgres's only")

	// Exactly on the bounds: met.
	x := []Result{row("sqlite", WBare, 1, 1000, 1), row("sqlite", WSequential, 1, 600, 100),
		row("sqlite", WBatch, 1, 3000, 1000), row("sqlite", WParallel, 8, 1200, 1),
		row("sqlite", WBatchParallel, 8, 5000, 1), row("sqlite", WRacing, 8, 960, 1000),
		row("sqlite", WRacingBatch, 8, 4000, 10_000)}
	x[5].Duplicates, x[5].Raced, x[6].Duplicates, x[6].Raced = dups(0), dups(0), dups(0), dups(0)
	r = &Report{Results: x}
	Derive(r.Results)
	for k, c := range checksOf(r) {
		assert.True(t, c.Met, "%s: %s", k, c.Value)
	}
	c = checksOf(r)
	assert.Contains(t, c["sqlite: batch ≥ 2× bare commit rate"].Value, "goal 3× reached")
	assert.Len(t, c, 9, "batch ×2, parallel, racing ×3, racing-batch ×3 (no ceiling ratio here): %v", c)
}

// The summary puts River beside wfstore's postgres batch, says how the
// semantics differ, and says why a peer was not measured.
func TestSummaryShowsModesAndPeer(t *testing.T) {
	rs := oneRun("postgres")
	rs[2].MachineCPUPerOpUS = 250
	r := &Report{Results: rs, Peers: []Peer{{Name: "river", Version: "v0.51.2", Jobs: 10000, Seconds: 1, JobsPerSec: 10000,
		MachineCPUPerJobUS: 180, MachineBusyPct: 90, MaxWorkers: 1000}}}
	Derive(r.Results)
	var b bytes.Buffer
	r.WriteSummary(&b)
	s := b.String()
	assert.Contains(t, s, "| batch (1 dispatcher, batch 100) | 7500/s · 40 ms · 250 µs (2.50× bare, 15.0× seq) |")
	assert.Contains(t, s, "**10000 jobs/s**")
	assert.Contains(t, s, "wfstore postgres batch: **7500 admissions/s**, 250 µs per admission: 0.75× river")
	assert.Contains(t, s, "at-least-once")
	assert.NotContains(t, s, "rows written", "nothing counted, nothing said")

	// Rows and WAL per job and per admission, where counted.
	r.Peers[0].RowsPerJob, r.Peers[0].WALBytesPerJob = ptr(2.0), ptr(1944.0)
	r.find("postgres", WBatch).RowsPerOp, r.find("postgres", WBatch).WALBytesPerOp = ptr(7.06), ptr(6267.0)
	b.Reset()
	r.WriteSummary(&b)
	assert.Contains(t, b.String(), "not counted), 2.00 rows written and 1944 WAL bytes per job.")
	assert.Contains(t, b.String(), ": 0.75× river, 7.06 rows written and 6267 WAL bytes per admission.")
	assert.NotContains(t, s, "racing-stores-batch", "a workload not measured has no row")

	b.Reset()
	(&Report{Results: rs, Peers: []Peer{{Name: "river", Skipped: "no go command on PATH"}}}).WriteSummary(&b)
	assert.Contains(t, b.String(), "river (peer): not measured: no go command on PATH")
}

// A row's re-runs appear in its notes, per operation and by cause; a row
// without any says nothing of them.
func TestNotesShowReruns(t *testing.T) {
	r := &Report{}
	x := Result{Backend: "postgres", Workload: WRacing, Ops: 8, Reruns: &backend.Reruns{Conflict: 3, Busy: 1}}
	assert.Contains(t, r.notes(x), "re-runs 0.500/op (busy 1, conflict 3)")
	x.Reruns = &backend.Reruns{}
	assert.NotContains(t, r.notes(x), "re-runs")
}

// The summary puts the hand-written probe beside River and wfstore's
// batch: its rate, its writes, both ratios and what it leaves out.
func TestSummaryShowsProbe(t *testing.T) {
	rs := oneRun("postgres")
	r := &Report{Results: rs, Peers: []Peer{
		{Name: "river", Version: "v0.51.2", Jobs: 10000, Seconds: 1, JobsPerSec: 10000, MaxWorkers: 1000},
		{Name: "probe", Version: "hand-written SQL", Jobs: 10000, Seconds: 1, JobsPerSec: 12500, MachineCPUPerJobUS: 150,
			MachineBusyPct: 95, RowsPerJob: ptr(7.03), WALBytesPerJob: ptr(4400.0)},
	}}
	Derive(r.Results)
	var b bytes.Buffer
	r.WriteSummary(&b)
	s := b.String()
	assert.Contains(t, s, "probe (hand-written SQL, same PostgreSQL, same run): admitted 10000 at **12500 admissions/s**, "+
		"machine CPU 150 µs per admission (95% busy), 7.03 rows written and 4400 WAL bytes per admission. "+
		"Probe 1.25× river. wfstore postgres batch: 0.60× the probe.")
	assert.Contains(t, s, ProbeSemantics)
	assert.Equal(t, 1, strings.Count(s, "at-least-once"), "River's semantics once, for River only")
}

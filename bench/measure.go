package bench

import (
	"context"
	"encoding/json"
	"runtime"
	"slices"
	"sync"
	"time"

	"github.com/wfstore/wfstore/backend"
	"github.com/wfstore/wfstore/internal/benchdata"
	"github.com/wfstore/wfstore/internal/faultseam"
	"github.com/wfstore/wfstore/workflow"
)

// recorder collects one workload's operations: latency of each, wall time,
// the allocations and CPU time of the process while it ran, and the busy and
// total CPU time of the whole machine meanwhile.
type recorder struct {
	lat     []time.Duration
	ops     int
	elapsed time.Duration
	mallocs uint64
	bytes   uint64
	cpu     time.Duration
	noCPU   bool // the platform does not report process CPU time
	// Machine-wide CPU clock ticks (busy and total) while it ran.
	mBusy, mTotal uint64
	noMachine     bool  // the platform does not report machine CPU time
	tick          *tick // progress, may be nil (shared by a phase's workers)
	// reruns counts the transaction re-runs of the backend while the
	// workload ran, when counter (the workload's backend) reports them.
	counter backend.RerunCounter
	reruns  backend.Reruns
	// writes counts what the workload wrote, where the backend tells;
	// nil elsewhere.
	writes *writeCounts
}

// countingWrites has r count the rows env's store writes (and on
// PostgreSQL the WAL), where its backend tells: the bare commit's table
// or file when bare.
func (r *recorder) countingWrites(env *Env, bare bool) *recorder {
	switch {
	case env == nil:
	case env.writes != nil:
		r.writes = &writeCounts{pg: env.writes, bare: bare}
	case bare && env.bareRows != nil:
		r.writes = &writeCounts{local: env.bareRows, bare: true}
	case !bare && env.rows != nil:
		r.writes = &writeCounts{local: env.rows}
	}
	return r
}

// counting sets the backend whose re-runs r counts, when it counts them.
func (r *recorder) counting(b backend.Backend) *recorder {
	r.counter, _ = b.(backend.RerunCounter)
	return r
}

func (r *recorder) add(d time.Duration) {
	r.lat = append(r.lat, d)
	r.ops++
	r.tick.add(1)
}

func (r *recorder) merge(o *recorder) { r.lat = append(r.lat, o.lat...); r.ops += o.ops }

// phase is a workload prepared for a fixed number of operations; run does k
// more of them, recording each in rec. Phases are resumable so that
// workloads compared by a ratio can run interleaved, in rounds, and share
// the machine's noise.
type phase interface {
	run(ctx context.Context, k int, rec *recorder) error
}

// measure runs k operations of p, adding wall time, allocations, process
// CPU time and machine CPU time to rec.
func measure(ctx context.Context, p phase, k int, rec *recorder) error {
	var m0, m1 runtime.MemStats
	runtime.ReadMemStats(&m0)
	b0, t0m, okm0 := machineCPU()
	c0, ok0 := processCPU()
	var rr0 backend.Reruns
	if rec.counter != nil {
		rr0 = rec.counter.Reruns()
	}
	wal0 := rec.writes.walBefore(ctx)
	t0 := time.Now()
	err := p.run(ctx, k, rec)
	rec.elapsed += time.Since(t0)
	rec.writes.walAfter(ctx, wal0)
	if rec.counter != nil {
		rec.reruns = rec.reruns.Add(rec.counter.Reruns().Since(rr0))
	}
	c1, ok1 := processCPU()
	b1, t1m, okm1 := machineCPU()
	rec.cpu += c1 - c0
	rec.noCPU = rec.noCPU || !ok0 || !ok1
	rec.mBusy += b1 - b0
	rec.mTotal += t1m - t0m
	rec.noMachine = rec.noMachine || !okm0 || !okm1
	runtime.ReadMemStats(&m1)
	rec.mallocs += m1.Mallocs - m0.Mallocs
	rec.bytes += m1.TotalAlloc - m0.TotalAlloc
	return err
}

// percentile returns the p-th percentile (0..100) of sorted, nearest rank.
func percentile(sorted []time.Duration, p float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	i := int(float64(len(sorted))*p/100+0.5) - 1
	return sorted[min(max(i, 0), len(sorted)-1)]
}

// result turns a recorder into a Result row (ratios are filled in later).
func (r *recorder) result(backendName, workload string, workers int) Result {
	s := slices.Clone(r.lat)
	slices.Sort(s)
	res := Result{Backend: backendName, Workload: workload, Workers: workers, Ops: r.ops,
		Seconds: r.elapsed.Seconds()}
	if r.ops > 0 && r.elapsed > 0 {
		res.OpsPerSec = float64(r.ops) / r.elapsed.Seconds()
		res.MeanUS = us(r.elapsed / time.Duration(r.ops))
		res.AllocsPerOp = float64(r.mallocs) / float64(r.ops)
		res.BytesPerOp = float64(r.bytes) / float64(r.ops)
		if !r.noCPU {
			res.CPUPerOpUS = us(r.cpu) / float64(r.ops)
		}
		if !r.noMachine && r.mTotal > 0 {
			res.MachineBusyPct = 100 * float64(r.mBusy) / float64(r.mTotal)
			res.MachineCPUPerOpUS = float64(r.mBusy) * 1e6 / userHZ / float64(r.ops)
		}
	}
	r.writes.fill(&res)
	if r.counter != nil {
		rr := r.reruns
		res.Reruns = &rr
	}
	res.P50US, res.P95US, res.P99US = us(percentile(s, 50)), us(percentile(s, 95)), us(percentile(s, 99))
	if len(s) > 0 {
		res.MaxUS = us(s[len(s)-1])
	}
	return res
}

func us(d time.Duration) float64 { return float64(d.Nanoseconds()) / 1e3 }

// noopOwner accepts everything at once. It times each admission from its
// Plan call (in batch mode every candidate of a batch is planned before the
// batch's intent transaction) to its receipt commit (the ReceiptCommitted
// fault boundary). One owner per dispatcher: Plan and the fault hook of one
// owner are never called concurrently. It is a BatchOwner, so a batch-mode
// pass hands it each batch in one call.
type noopOwner struct {
	start map[workflow.ActivationKey]time.Time
	rec   *recorder
	calls *callCounter // racing only: owner calls per identity
}

var noopPlan = workflow.Plan{SideEffect: workflow.ReadOnly, Intent: benchdata.Intent}

func (o *noopOwner) Plan(_ context.Context, a workflow.Activation) (*workflow.Plan, error) {
	if o.start == nil {
		o.start = map[workflow.ActivationKey]time.Time{}
	}
	o.start[a.Key] = time.Now()
	p := noopPlan
	return &p, nil
}

func (o *noopOwner) Dispatch(_ context.Context, p workflow.PreparedDispatch) (json.RawMessage, error) {
	if o.calls != nil {
		o.calls.add(p.Identity)
	}
	return benchdata.Receipt, nil
}

func (o *noopOwner) DispatchBatch(_ context.Context, ps []workflow.PreparedDispatch) ([]workflow.DispatchResult, error) {
	out := make([]workflow.DispatchResult, len(ps))
	for i, p := range ps {
		if o.calls != nil {
			o.calls.add(p.Identity)
		}
		out[i].Receipt = benchdata.Receipt
	}
	return out, nil
}

func (o *noopOwner) fault(_ context.Context, b faultseam.Boundary, p workflow.PreparedDispatch) error {
	if b == faultseam.ReceiptCommitted && o.rec != nil {
		k := p.Activation.Key
		o.rec.add(time.Since(o.start[k]))
		delete(o.start, k)
	}
	return nil
}

// callCounter counts owner Dispatch calls per dispatch identity.
type callCounter struct {
	mu sync.Mutex
	n  map[string]int
}

func (c *callCounter) add(id string) {
	c.mu.Lock()
	if c.n == nil {
		c.n = map[string]int{}
	}
	c.n[id]++
	c.mu.Unlock()
}

// duplicates returns the owner calls beyond the first per identity.
func (c *callCounter) duplicates() (calls, distinct, dups int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, v := range c.n {
		calls += v
		dups += v - 1
	}
	return calls, len(c.n), dups
}

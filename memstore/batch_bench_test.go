package memstore_test

import (
	"context"
	"testing"
	"time"

	"github.com/wfstore/wfstore/internal/benchdata"
	"github.com/wfstore/wfstore/memstore"
	"github.com/wfstore/wfstore/workflow"
)

// BenchmarkBatchDispatch times the Store's batch admission (batches of
// 100, as the batch workload) on the in-memory backend, which does no I/O:
// what it measures is the Store's own CPU and allocations per admission.
// One op is one admission; seeding is not timed.
//
//	go test -run '^$' -bench BatchDispatch -benchtime 5000x -count 5 ./memstore/
func BenchmarkBatchDispatch(b *testing.B) {
	ctx := context.Background()
	n := (b.N + benchdata.PerRun - 1) / benchdata.PerRun * benchdata.PerRun
	be := memstore.New()
	s := workflow.New(be)
	if _, err := benchdata.SeedRuns(ctx, s, be, "bench", n, benchdata.PerRun, nil, time.Now()); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.ResetTimer()
	if err := benchdata.AdmitBatches(ctx, s, b.N, 100); err != nil {
		b.Fatal(err)
	}
}

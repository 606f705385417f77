package memstore_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/wfstore/wfstore/internal/benchdata"
	"github.com/wfstore/wfstore/memstore"
	"github.com/wfstore/wfstore/workflow"
)

type batchOwner struct{}

func (batchOwner) Plan(context.Context, workflow.Activation) (*workflow.Plan, error) {
	return &workflow.Plan{SideEffect: workflow.ReadOnly, Intent: benchdata.Intent}, nil
}

func (batchOwner) Dispatch(context.Context, workflow.PreparedDispatch) (json.RawMessage, error) {
	return benchdata.Receipt, nil
}

func (batchOwner) DispatchBatch(_ context.Context, ps []workflow.PreparedDispatch) ([]workflow.DispatchResult, error) {
	out := make([]workflow.DispatchResult, len(ps))
	for i := range out {
		out[i].Receipt = benchdata.Receipt
	}
	return out, nil
}

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
	for admitted := 0; admitted < b.N; {
		sum, err := s.Dispatch(ctx, batchOwner{}, workflow.DispatchOptions{Limit: min(1000, b.N-admitted), BatchSize: 100}, time.Now())
		if err != nil {
			b.Fatal(err)
		}
		if len(sum.Admitted) == 0 {
			b.Fatalf("admitted %d of %d", admitted, b.N)
		}
		admitted += len(sum.Admitted)
	}
}

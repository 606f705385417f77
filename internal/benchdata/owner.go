package benchdata

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/wfstore/wfstore/workflow"
)

// Owner accepts every activation it is offered: a read-only plan carrying
// Intent, and Receipt for each dispatch, one at a time or a batch at once.
// It does no work of its own, so what a benchmark times with it is the
// Store and its backend.
type Owner struct{}

// Plan implements workflow.Owner.
func (Owner) Plan(context.Context, workflow.Activation) (*workflow.Plan, error) {
	return &workflow.Plan{SideEffect: workflow.ReadOnly, Intent: Intent}, nil
}

// Dispatch implements workflow.Owner.
func (Owner) Dispatch(context.Context, workflow.PreparedDispatch) (json.RawMessage, error) {
	return Receipt, nil
}

// DispatchBatch implements workflow.BatchOwner.
func (Owner) DispatchBatch(_ context.Context, ps []workflow.PreparedDispatch) ([]workflow.DispatchResult, error) {
	out := make([]workflow.DispatchResult, len(ps))
	for i := range out {
		out[i].Receipt = Receipt
	}
	return out, nil
}

// AdmitBatches admits n pending activations through s with Owner, in
// batches of batchSize (at most 1000 per Dispatch pass). It fails when a
// pass returns an error or admits nothing before n are admitted.
func AdmitBatches(ctx context.Context, s *workflow.Store, n, batchSize int) error {
	for admitted := 0; admitted < n; {
		sum, err := s.Dispatch(ctx, Owner{}, workflow.DispatchOptions{Limit: min(1000, n-admitted), BatchSize: batchSize}, time.Now())
		if err != nil {
			return fmt.Errorf("benchdata: admitted %d of %d: %w", admitted, n, err)
		}
		if len(sum.Admitted) == 0 {
			return fmt.Errorf("benchdata: admitted %d of %d: a pass admitted nothing", admitted, n)
		}
		admitted += len(sum.Admitted)
	}
	return nil
}

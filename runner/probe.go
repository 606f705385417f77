package runner

import (
	"context"
	"errors"

	"go.opentelemetry.io/otel/trace"

	"github.com/wfstore/wfstore/internal/faultseam"
	"github.com/wfstore/wfstore/workflow"
)

// After an owner error (a failed Plan or Dispatch call, or an owner
// failure the Store reported), the runner's next pass in batch mode first
// plans, prepares and hands off one attempt alone (BatchSize 1, Limit 1)
// before it hands off a batch again: an owner that is still down costs one
// attempt (one repair_required, for mutating work), not a batch. The probe
// is repeated on every pass until one admission succeeds; then the pass
// goes on with the configured batch size.

// dispatch runs the pass's Dispatch (after a probe of one attempt when
// the last owner call failed) and accounts for it; it returns how many
// attempts it admitted.
func (r *Runner) dispatch(ctx context.Context) (int, error) {
	opts := workflow.DispatchOptions{
		RunID: r.cfg.runID, Authority: r.cfg.authority, Limit: r.cfg.limit,
		BatchSize: r.cfg.batchSize, OwnerConcurrency: r.cfg.ownerConcurrency,
	}
	admitted := 0
	if r.probing && opts.BatchSize > 1 {
		probe := opts
		probe.BatchSize, probe.Limit = 1, 1
		n, err := r.dispatchOnce(ctx, probe)
		if err != nil || n == 0 {
			return n, err
		}
		admitted = n
	}
	n, err := r.dispatchOnce(ctx, opts)
	return admitted + n, err
}

// dispatchOnce runs one Dispatch, accounts for its summary and records
// whether the owner failed in it.
func (r *Runner) dispatchOnce(ctx context.Context, opts workflow.DispatchOptions) (int, error) {
	sum, err := r.store.Dispatch(faultseam.With(ctx, r.dispatchHook()), r.owner, opts, r.cfg.clock.Now())
	r.shim.spans.finish(sum, err)
	r.account(ctx, sum)
	r.collectDoubts(sum, err)
	admittedEvents(trace.SpanFromContext(ctx), sum.Admitted)
	switch {
	case len(sum.OwnerFailed) > 0 || errors.Is(err, workflow.ErrOwner):
		r.probing = true
	case len(sum.Admitted) > 0:
		r.probing = false
	}
	return len(sum.Admitted), err
}

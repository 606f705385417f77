package bench

import (
	"context"
	"fmt"
	"time"

	"github.com/wfstore/wfstore/internal/benchdata"
	"github.com/wfstore/wfstore/workflow"
)

// perRun is how many activations a seeded run holds (benchdata.PerRun).
const perRun = benchdata.PerRun

// seedRuns creates n pending activations in runs of per (benchdata.SeedRuns).
func seedRuns(ctx context.Context, env *Env, prefix string, n, per int, policy *workflow.RetryPolicy, now time.Time) ([]workflow.ActivationKey, error) {
	return benchdata.SeedRuns(ctx, env.Store, env.Backend, prefix, n, per, policy, now)
}

// loadHistory writes completed history (benchdata.LoadHistory).
func loadHistory(ctx context.Context, env *Env, prefix string, first, attempts int, now time.Time, progress func(done int)) (int, error) {
	n, err := benchdata.LoadHistory(ctx, env.Backend, prefix, first, attempts, now, progress)
	if err != nil {
		err = fmt.Errorf("bench: %w", err)
	}
	return n, err
}

package runner

import (
	"context"
	"fmt"

	"github.com/wfstore/wfstore/workflow"
)

// siblings reaches the work of attempts a fail-fast fan-out stopped
// (sibling_cancelling) through the owner's Canceller, a page per pass: as
// for a cancelled run's attempts, Cancel first, and only after it returned
// nil the signal is recorded (MarkCancellationSignalled keeps the status).
// The attempt then settles on its owner's word in the receipt-backed pass.
// Each identity is signalled once per process (a restart signals again:
// Cancel is idempotent on the identity). It returns how many it signalled.
func (r *Runner) siblings(ctx context.Context, c *cancels) (int, error) {
	if c.canceller == nil {
		return 0, nil
	}
	limit := r.cfg.runsPerPass
	page, err := r.store.Attempts(ctx, workflow.AttemptQuery{RunID: r.cfg.runID, Status: workflow.AttemptSiblingCancelling,
		After: c.siblingAfter, Limit: limit})
	if err != nil {
		return 0, fmt.Errorf("sibling_cancelling attempts: %w", err)
	}
	if c.siblingSeen == nil {
		c.siblingSeen = map[string]bool{}
	}
	moved := 0
	for _, a := range page.Items {
		c.siblingSeen[a.Identity] = true
		if c.siblingSignalled[a.Identity] || r.stopping.Load() {
			continue
		}
		n, err := r.signal(ctx, c, a)
		if err != nil {
			return moved, err
		}
		if n > 0 {
			c.siblingSignalled[a.Identity] = true
		}
		moved += n
	}
	if page.Next == "" {
		// A full cycle: forget the identities that settled since.
		c.siblingAfter, c.siblingSignalled, c.siblingSeen = "", keep(c.siblingSignalled, c.siblingSeen), nil
	} else {
		c.siblingAfter = page.Next
	}
	return moved, nil
}

// keep returns the entries of m that seen holds.
func keep(m, seen map[string]bool) map[string]bool {
	out := map[string]bool{}
	for id := range m {
		if seen[id] {
			out[id] = true
		}
	}
	return out
}

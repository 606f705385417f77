package workflow

import (
	"context"

	"github.com/wfstore/wfstore/backend"
)

// Leases are keyed by the tuple (run, node, activation, attempt, resource,
// mode). Conflicts are checked within one run: an unreleased
// lease on the same resource conflicts when either side is a write. A
// released lease never blocks a later attempt. All claims of an activation
// are taken in the prepare transaction, in resource order, so one conflict
// rolls back the whole set and the attempt with it. Leases are released on
// every settled attempt status and kept on repair_required.

// acquireLeases returns the leases attempt k must insert, or
// ErrResourceConflict. held maps each claimed resource to its unreleased
// leases (from Lookup.Resources).
func acquireLeases(act backend.Activation, k backend.AttemptKey, held map[backend.ResourceRef][]backend.Lease, at int64) ([]backend.Lease, error) {
	out := make([]backend.Lease, 0, len(act.Claims))
	for _, c := range act.Claims {
		ref := backend.ResourceRef{RunID: k.RunID, Resource: c.Resource}
		for _, l := range held[ref] {
			if l.Key.AttemptKey == k {
				continue // our own (cannot happen for a fresh attempt)
			}
			if c.Mode == backend.LeaseWrite || l.Key.Mode == backend.LeaseWrite {
				return nil, stateErr(ErrResourceConflict, "workflow resource is already leased incompatibly: %s", c.Resource)
			}
		}
		out = append(out, backend.Lease{
			Key:        backend.LeaseKey{AttemptKey: k, Resource: c.Resource, Mode: c.Mode},
			AcquiredMS: at,
		})
	}
	return out, nil
}

// ActiveLeases returns up to limit unreleased leases of a run. limit is
// 1 to MaxPageLimit; 0 means DefaultPageLimit.
func (s *Engine) ActiveLeases(ctx context.Context, runID string, limit int) ([]Lease, error) {
	if err := ValidateID("run id", runID); err != nil {
		return nil, err
	}
	limit, err := pageLimit("lease limit", limit)
	if err != nil {
		return nil, err
	}
	var out []backend.Lease
	err = s.view(ctx, func(r backend.ReadTx) error {
		var err error
		out, err = r.Leases(ctx, backend.LeaseQuery{RunID: runID, Limit: limit})
		return err
	})
	if err != nil {
		return nil, err
	}
	return toLeases(out), nil
}

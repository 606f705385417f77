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

// LeaseQuery selects a page of one run's unreleased leases.
type LeaseQuery struct {
	// RunID is the run whose leases are listed.
	RunID string
	// After resumes after a previous page (its Next); empty starts at the
	// beginning.
	After Cursor
	// Limit is 1 to MaxPageLimit; 0 means DefaultPageLimit.
	Limit int
}

// leasePos is a position in ActiveLeases: after the lease with this key.
type leasePos struct {
	NodeID       string `json:"n"`
	ActivationID string `json:"a"`
	Attempt      uint32 `json:"t"`
	Resource     string `json:"r"`
	Mode         string `json:"m"`
}

// ActiveLeases returns a page of the run's unreleased leases in key order
// (node, activation, attempt, resource, mode), read in one snapshot.
func (s *Engine) ActiveLeases(ctx context.Context, q LeaseQuery) (Page[Lease], error) {
	if err := ValidateID("run id", q.RunID); err != nil {
		return Page[Lease]{}, err
	}
	limit, err := pageLimit("lease limit", q.Limit)
	if err != nil {
		return Page[Lease]{}, err
	}
	var pos leasePos
	if ok, err := decodeCursor(leasesCursor, q.After, &pos); err != nil {
		return Page[Lease]{}, err
	} else if ok && pos.NodeID == "" {
		return Page[Lease]{}, invalid(leasesCursor+" cursor", "must name a lease")
	}
	after := backend.LeaseKey{Resource: pos.Resource, Mode: backend.LeaseMode(pos.Mode)}
	if pos.NodeID != "" {
		after.AttemptKey = backend.AttemptKey{ActivationKey: backend.ActivationKey{RunID: q.RunID,
			NodeID: pos.NodeID, ActivationID: pos.ActivationID}, Attempt: pos.Attempt}
	}
	var out []backend.Lease
	err = s.view(ctx, func(r backend.ReadTx) error {
		var err error
		out, err = r.Leases(ctx, backend.LeaseQuery{RunID: q.RunID, After: after, Limit: limit + 1})
		return err
	})
	if err != nil {
		return Page[Lease]{}, err
	}
	var page Page[Lease]
	if len(out) > limit {
		out = out[:limit]
		k := out[limit-1].Key
		page.Next = encodeCursor(leasesCursor, leasePos{k.NodeID, k.ActivationID, k.Attempt, k.Resource, string(k.Mode)})
	}
	page.Items = toLeases(out)
	return page, nil
}

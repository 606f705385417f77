package state

import (
	"context"

	"github.com/wfstore/wfstore/backend"
)

// releaseLeases releases the unreleased leases of attempt k (its
// activation's claims).
func releaseLeases(ctx context.Context, tx backend.ReadTx, w *Batch, act backend.Activation, k backend.AttemptKey, at int64) error {
	if len(act.Claims) == 0 {
		return nil
	}
	keys := make([]backend.LeaseKey, 0, len(act.Claims))
	for _, c := range act.Claims {
		keys = append(keys, backend.LeaseKey{AttemptKey: k, Resource: c.Resource, Mode: c.Mode})
	}
	f, err := tx.Load(ctx, backend.Lookup{Leases: keys})
	if err != nil {
		return err
	}
	for _, key := range keys {
		l, ok := f.Leases[key]
		if !ok || l.ReleasedMS != 0 {
			continue
		}
		l.ReleasedMS = at
		Replace(w, l)
	}
	return nil
}

package bolt

import (
	"context"

	"github.com/wfstore/wfstore/backend"
)

// Load reads every record l names (kvlayout's Layout.Load: point reads by
// primary key, by identity and by resource). Keys that do not exist are
// absent from the result's maps; a ResourceRef with no unreleased lease is
// absent from Found.Resources. A map is nil when its Lookup list is empty.
func (t *readTx) Load(ctx context.Context, l backend.Lookup) (backend.Found, error) {
	if err := t.check(ctx, "load"); err != nil {
		return backend.Found{}, err
	}
	return layout.Load(ctx, t, l)
}

package etcd

import (
	"context"

	"github.com/wfstore/wfstore/backend"
)

// Load reads every record l names (kvlayout's Layout.Load): the point reads
// by primary key in one batch of gets, then the identity and resource
// lookups, a scan of an index prefix each, whose records are read in one
// more batch. Keys that do not exist are absent from the result's maps; a
// ResourceRef with no unreleased lease is absent from Found.Resources. A
// map is nil when its Lookup list is empty.
func (t *readTx) Load(ctx context.Context, l backend.Lookup) (backend.Found, error) {
	if err := t.check(ctx, "load"); err != nil {
		return backend.Found{}, err
	}
	return layout.Load(ctx, store{t: t, op: "load"}, l)
}

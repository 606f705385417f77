package kvlayout

import (
	"context"
	"fmt"

	"github.com/wfstore/wfstore/backend"
)

// This file is Load: point reads by primary key, by identity (the first
// entry of the unique identity index's prefix) and by resource (a prefix
// of the lease-resource index), and the reads of the records index
// entries name.

// Load reads every record lk names through r. Keys that do not exist are
// absent from the result's maps; a ResourceRef with no unreleased lease is
// absent from Found.Resources. A map is nil when its Lookup list is empty.
func (l *Layout) Load(ctx context.Context, r Reader, lk backend.Lookup) (backend.Found, error) {
	var f backend.Found
	if p, ok := r.(Prefetcher); ok {
		var keys []StoredKey
		keys = appendKeys(keys, l.Run, lk.Runs)
		keys = appendKeys(keys, l.Link, lk.Links)
		keys = appendKeys(keys, l.Activation, lk.Activations)
		keys = appendKeys(keys, l.FanOutGroup, lk.Groups)
		keys = appendKeys(keys, l.Attempt, lk.Attempts)
		keys = appendKeys(keys, l.Lease, lk.Leases)
		keys = appendKeys(keys, l.Schedule, lk.Schedules)
		if err := p.Prefetch(ctx, keys); err != nil {
			return f, err
		}
	}
	var err error
	if f.Runs, err = loadAll(ctx, r, l.Run, lk.Runs); err != nil {
		return f, err
	}
	if f.Links, err = loadAll(ctx, r, l.Link, lk.Links); err != nil {
		return f, err
	}
	if f.Activations, err = loadAll(ctx, r, l.Activation, lk.Activations); err != nil {
		return f, err
	}
	if f.Groups, err = loadAll(ctx, r, l.FanOutGroup, lk.Groups); err != nil {
		return f, err
	}
	if f.Attempts, err = loadAll(ctx, r, l.Attempt, lk.Attempts); err != nil {
		return f, err
	}
	if f.Leases, err = loadAll(ctx, r, l.Lease, lk.Leases); err != nil {
		return f, err
	}
	if f.Schedules, err = loadAll(ctx, r, l.Schedule, lk.Schedules); err != nil {
		return f, err
	}
	if f.Identities, err = l.loadIdentities(ctx, r, lk.Identities); err != nil {
		return f, err
	}
	if f.Resources, err = l.loadResources(ctx, r, lk.Resources); err != nil {
		return f, err
	}
	return f, nil
}

// loadAll gets each key's record of tb's kind.
func loadAll[K comparable, R any](ctx context.Context, r Reader, tb *Table[K, R], keys []K) (map[K]R, error) {
	if len(keys) == 0 {
		return nil, nil
	}
	out := make(map[K]R, len(keys))
	for _, k := range keys {
		v, err := r.Get(ctx, &tb.Space, tb.Stored(tb.key(k)))
		if err != nil {
			return nil, err
		}
		if v == nil {
			continue
		}
		rec, err := tb.Decode(v)
		if err != nil {
			return nil, fmt.Errorf("%s: load %s %v: %w", tb.name, tb.Name, k, err)
		}
		out[k] = rec
	}
	return out, nil
}

func (l *Layout) loadIdentities(ctx context.Context, r Reader, ids []string) (map[string]backend.Attempt, error) {
	if len(ids) == 0 {
		return nil, nil
	}
	ix := l.AttemptIdentity
	out := make(map[string]backend.Attempt, len(ids))
	for _, id := range ids {
		prefix := Key(nil).Str(id)
		from, until := ix.Range("", prefix, PrefixEnd(prefix))
		got, err := r.Keys(ctx, &ix.Space, from, until, 1)
		if err != nil {
			return nil, err
		}
		if len(got) == 0 {
			continue
		}
		a, err := l.Attempt.NamedBy(ctx, r, ix.Index, got[0])
		if err != nil {
			return nil, fmt.Errorf("%s: load identity %q: %w", l.cfg.Name, id, err)
		}
		out[id] = a
	}
	return out, nil
}

func (l *Layout) loadResources(ctx context.Context, r Reader, refs []backend.ResourceRef) (map[backend.ResourceRef][]backend.Lease, error) {
	if len(refs) == 0 {
		return nil, nil
	}
	ix := l.LeaseResource
	out := make(map[backend.ResourceRef][]backend.Lease, len(refs))
	for _, ref := range refs {
		prefix := Key(nil).Str(ref.RunID).Str(ref.Resource)
		from, until := ix.Range(ref.RunID, prefix, PrefixEnd(prefix))
		got, err := r.Keys(ctx, &ix.Space, from, until, -1)
		if err != nil {
			return nil, err
		}
		if len(got) == 0 {
			continue
		}
		ls, err := l.Lease.Named(ctx, r, ix.Index, got)
		if err != nil {
			return nil, fmt.Errorf("%s: load resource %+v: %w", l.cfg.Name, ref, err)
		}
		out[ref] = ls
	}
	return out, nil
}

// NamedBy reads the record of tb's kind that entry, a stored key of index
// ix, names. A missing record means the index is damaged: an error.
func (tb *Table[K, R]) NamedBy(ctx context.Context, r Reader, ix *Index, entry []byte) (R, error) {
	var zero R
	pk, err := tb.primaryOf(ix, entry)
	if err != nil {
		return zero, err
	}
	v, err := r.Get(ctx, &tb.Space, tb.Stored(pk))
	if err != nil {
		return zero, err
	}
	return tb.decodeNamed(ix, pk, v)
}

// Named reads the records NamedBy reads, for each of entries in order.
// A Prefetcher reads them in one batch.
func (tb *Table[K, R]) Named(ctx context.Context, r Reader, ix *Index, entries [][]byte) ([]R, error) {
	keys := make([]StoredKey, len(entries))
	pks := make([]Key, len(entries))
	for i, e := range entries {
		pk, err := tb.primaryOf(ix, e)
		if err != nil {
			return nil, err
		}
		pks[i] = pk
		keys[i] = StoredKey{Space: &tb.Space, Key: tb.Stored(pk)}
	}
	if p, ok := r.(Prefetcher); ok {
		if err := p.Prefetch(ctx, keys); err != nil {
			return nil, err
		}
	}
	out := make([]R, len(entries))
	for i, k := range keys {
		v, err := r.Get(ctx, k.Space, k.Key)
		if err != nil {
			return nil, err
		}
		if out[i], err = tb.decodeNamed(ix, pks[i], v); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// primaryOf returns the primary key that entry, a stored key of ix, names.
func (tb *Table[K, R]) primaryOf(ix *Index, entry []byte) (Key, error) {
	e, ok := ix.Unstored(entry)
	if !ok {
		return nil, fmt.Errorf("%s: index %s: %x is not one of its keys", tb.name, ix.Name, entry)
	}
	pk, err := ix.Primary(e)
	if err != nil {
		return nil, fmt.Errorf("%s: index %s: %w", tb.name, ix.Name, err)
	}
	return pk, nil
}

func (tb *Table[K, R]) decodeNamed(ix *Index, pk Key, v []byte) (R, error) {
	if v == nil {
		var zero R
		return zero, fmt.Errorf("%s: an index entry of %s names missing %s %s (run Verify)", tb.name, ix.Name, tb.Name, tb.Schema.Format(pk))
	}
	rec, err := tb.Decode(v)
	if err != nil {
		return rec, fmt.Errorf("%s %s: %w", tb.Name, tb.Schema.Format(pk), err)
	}
	return rec, nil
}

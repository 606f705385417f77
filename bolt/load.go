package bolt

import (
	"bytes"
	"context"
	"fmt"

	"github.com/wfstore/wfstore/backend"
)

// This file is ReadTx.Load: point reads by primary key, by identity (one
// seek in the unique identity index) and by resource (a prefix of the
// lease-resource index).

// Load reads every record l names. Keys that do not exist are absent from
// the result's maps; a ResourceRef with no unreleased lease is absent from
// Found.Resources. A map is nil when its Lookup list is empty.
func (t *readTx) Load(ctx context.Context, l backend.Lookup) (backend.Found, error) {
	var f backend.Found
	if err := t.check(ctx, "load"); err != nil {
		return f, err
	}
	var err error
	if f.Runs, err = loadAll(t, kindRun, l.Runs); err != nil {
		return f, err
	}
	if f.Links, err = loadAll(t, kindLink, l.Links); err != nil {
		return f, err
	}
	if f.Activations, err = loadAll(t, kindActivation, l.Activations); err != nil {
		return f, err
	}
	if f.Groups, err = loadAll(t, kindGroup, l.Groups); err != nil {
		return f, err
	}
	if f.Attempts, err = loadAll(t, kindAttempt, l.Attempts); err != nil {
		return f, err
	}
	if f.Leases, err = loadAll(t, kindLease, l.Leases); err != nil {
		return f, err
	}
	if f.Schedules, err = loadAll(t, kindSchedule, l.Schedules); err != nil {
		return f, err
	}
	if f.Identities, err = t.loadIdentities(l.Identities); err != nil {
		return f, err
	}
	if f.Resources, err = t.loadResources(l.Resources); err != nil {
		return f, err
	}
	return f, nil
}

// loadAll gets each key's record of tb's kind.
func loadAll[K comparable, R any](t *readTx, tb *table[K, R], keys []K) (map[K]R, error) {
	if len(keys) == 0 {
		return nil, nil
	}
	out := make(map[K]R, len(keys))
	for _, k := range keys {
		bk, bkey, err := t.at(&tb.space, tb.stored(tb.key(k)), false)
		if err != nil {
			return nil, err
		}
		if bk == nil {
			continue
		}
		v := bk.Get(bkey)
		if v == nil {
			continue
		}
		rec, err := tb.decode(v)
		if err != nil {
			return nil, fmt.Errorf("bolt: load %s %v: %w", tb.name, k, err)
		}
		out[k] = rec
	}
	return out, nil
}

// getRecord reads and decodes the record of tb's kind under pk, which an
// index entry named; a missing record means the index is damaged.
func getRecord[K comparable, R any](t *readTx, tb *table[K, R], pk []byte) (R, error) {
	var zero R
	bk, bkey, err := t.at(&tb.space, tb.stored(pk), false)
	if err != nil {
		return zero, err
	}
	var v []byte
	if bk != nil {
		v = bk.Get(bkey)
	}
	if v == nil {
		return zero, fmt.Errorf("bolt: an index entry names missing %s %s (run Verify)", tb.name, tb.schema.format(pk))
	}
	return tb.decode(v)
}

func (t *readTx) loadIdentities(ids []string) (map[string]backend.Attempt, error) {
	if len(ids) == 0 {
		return nil, nil
	}
	ix, err := t.bucket(ixAttemptIdentity.bucket)
	if err != nil {
		return nil, err
	}
	out := make(map[string]backend.Attempt, len(ids))
	for _, id := range ids {
		prefix := ixAttemptIdentity.stored(key(nil).str(id))
		k, _ := ix.Cursor().Seek(prefix)
		if k == nil || !bytes.HasPrefix(k, prefix) {
			continue
		}
		e, _ := ixAttemptIdentity.unstored(k)
		pk, err := ixAttemptIdentity.primary(e)
		if err != nil {
			return nil, fmt.Errorf("bolt: load identity %q: %w", id, err)
		}
		a, err := getRecord(t, kindAttempt, pk)
		if err != nil {
			return nil, fmt.Errorf("bolt: load identity %q: %w", id, err)
		}
		out[id] = a
	}
	return out, nil
}

func (t *readTx) loadResources(refs []backend.ResourceRef) (map[backend.ResourceRef][]backend.Lease, error) {
	if len(refs) == 0 {
		return nil, nil
	}
	out := make(map[backend.ResourceRef][]backend.Lease, len(refs))
	for _, ref := range refs {
		prefix := key(nil).str(ref.RunID).str(ref.Resource)
		from, until := ixLeaseResource.runSpan(ref.RunID, prefix, prefixEnd(prefix))
		var got []backend.Lease
		err := t.scanSpace(&ixLeaseResource.space, from, until, func(k, _ []byte) (bool, error) {
			e, _ := ixLeaseResource.unstored(k)
			pk, err := ixLeaseResource.primary(e)
			if err != nil {
				return false, err
			}
			l, err := getRecord(t, kindLease, pk)
			if err != nil {
				return false, err
			}
			got = append(got, l)
			return true, nil
		})
		if err != nil {
			return nil, fmt.Errorf("bolt: load resource %+v: %w", ref, err)
		}
		if got != nil {
			out[ref] = got
		}
	}
	return out, nil
}

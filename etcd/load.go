package etcd

import (
	"context"
	"fmt"

	"github.com/wfstore/wfstore/backend"
)

// This file is ReadTx.Load: point reads by primary key, all in one batch of
// gets, then the identity and resource lookups (a prefix of the unique
// identity index; a prefix of the lease-resource index), whose records are
// read in a second batch.

// Load reads every record l names. Keys that do not exist are absent from
// the result's maps; a ResourceRef with no unreleased lease is absent from
// Found.Resources. A map is nil when its Lookup list is empty.
func (t *readTx) Load(ctx context.Context, l backend.Lookup) (backend.Found, error) {
	var f backend.Found
	if err := t.check(ctx, "load"); err != nil {
		return f, err
	}
	var keys []string
	keys = appendKeys(t, keys, kindRun, l.Runs)
	keys = appendKeys(t, keys, kindLink, l.Links)
	keys = appendKeys(t, keys, kindActivation, l.Activations)
	keys = appendKeys(t, keys, kindGroup, l.Groups)
	keys = appendKeys(t, keys, kindAttempt, l.Attempts)
	keys = appendKeys(t, keys, kindLease, l.Leases)
	keys = appendKeys(t, keys, kindSchedule, l.Schedules)
	if _, err := t.get(ctx, "load", keys); err != nil {
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
	if f.Identities, err = t.loadIdentities(ctx, l.Identities); err != nil {
		return f, err
	}
	if f.Resources, err = t.loadResources(ctx, l.Resources); err != nil {
		return f, err
	}
	return f, nil
}

func appendKeys[K comparable, R any](t *readTx, out []string, tb *table[K, R], keys []K) []string {
	for _, k := range keys {
		out = append(out, t.b.sk(tb.space, tb.key(k)))
	}
	return out
}

// loadAll decodes each key's record of tb's kind, already fetched.
func loadAll[K comparable, R any](t *readTx, tb *table[K, R], keys []K) (map[K]R, error) {
	if len(keys) == 0 {
		return nil, nil
	}
	out := make(map[K]R, len(keys))
	for _, k := range keys {
		v := t.lookup(t.b.sk(tb.space, tb.key(k)))
		if v == nil {
			continue
		}
		rec, err := tb.decode(v)
		if err != nil {
			return nil, fmt.Errorf("etcd: load %s %v: %w", tb.name, k, err)
		}
		out[k] = rec
	}
	return out, nil
}

// records reads the records of tb's kind that index entries (stored keys
// of ix) name, in the entries' order; a missing record means the index is
// damaged.
func records[K comparable, R any](ctx context.Context, t *readTx, ix *indexOf[R], tb *table[K, R], entries []kv) ([]R, error) {
	keys := make([]string, len(entries))
	pks := make([]key, len(entries))
	for i, e := range entries {
		ik := []byte(e.key[len(t.b.prefix)+1:])
		pk, err := ix.primary(ik)
		if err != nil {
			return nil, fmt.Errorf("etcd: index %s: %w", ix.name, err)
		}
		pks[i] = pk
		keys[i] = t.b.sk(tb.space, pk)
	}
	vals, err := t.get(ctx, ix.name, keys)
	if err != nil {
		return nil, err
	}
	out := make([]R, len(entries))
	for i, v := range vals {
		if v == nil {
			return nil, fmt.Errorf("etcd: an index entry of %s names missing %s %s (run Verify)", ix.name, tb.name, tb.schema.format(pks[i]))
		}
		if out[i], err = tb.decode(v); err != nil {
			return nil, fmt.Errorf("etcd: %s %s: %w", tb.name, tb.schema.format(pks[i]), err)
		}
	}
	return out, nil
}

func (t *readTx) loadIdentities(ctx context.Context, ids []string) (map[string]backend.Attempt, error) {
	if len(ids) == 0 {
		return nil, nil
	}
	out := make(map[string]backend.Attempt, len(ids))
	for _, id := range ids {
		prefix := key(nil).str(id)
		got, err := t.scan(ctx, "load identity", t.b.sk(ixAttemptIdentity.space, prefix),
			t.b.sk(ixAttemptIdentity.space, prefixEnd(prefix)), 1, scanOpts{keysOnly: true})
		if err != nil {
			return nil, err
		}
		if len(got) == 0 {
			continue
		}
		recs, err := records(ctx, t, ixAttemptIdentity, kindAttempt, got)
		if err != nil {
			return nil, fmt.Errorf("etcd: load identity %q: %w", id, err)
		}
		out[id] = recs[0]
	}
	return out, nil
}

func (t *readTx) loadResources(ctx context.Context, refs []backend.ResourceRef) (map[backend.ResourceRef][]backend.Lease, error) {
	if len(refs) == 0 {
		return nil, nil
	}
	out := make(map[backend.ResourceRef][]backend.Lease, len(refs))
	for _, ref := range refs {
		prefix := key(nil).str(ref.RunID).str(ref.Resource)
		got, err := t.scan(ctx, "load resource", t.b.sk(ixLeaseResource.space, prefix),
			t.b.sk(ixLeaseResource.space, prefixEnd(prefix)), -1, scanOpts{keysOnly: true})
		if err != nil {
			return nil, err
		}
		if len(got) == 0 {
			continue
		}
		ls, err := records(ctx, t, ixLeaseResource, kindLease, got)
		if err != nil {
			return nil, fmt.Errorf("etcd: load resource %+v: %w", ref, err)
		}
		out[ref] = ls
	}
	return out, nil
}

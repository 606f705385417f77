package etcd

import (
	"github.com/wfstore/wfstore/backend"
)

// This file is the key layout: the key spaces under a store's prefix and
// the record kinds stored in them. Every key of a store is
//
//	prefix | tag | rest
//
// where tag is one byte naming the space (a record kind, an index, the
// meta keys or the commit markers) and rest is a codec key (codec.go) for
// records and index entries. So each record kind and each index is one
// contiguous key range, read in key order by a bounded range request.

// Space tags. Record kinds and indexes use the bolt adapter's tags and ids.
const (
	tagMeta   byte = 'm' // meta keys: store marker, schema version
	tagMarker byte = 'x' // commit markers: instance | slot (tx.go)
)

// space is a key range under the prefix: the keys whose first byte after
// the prefix is tag.
type space struct {
	tag byte
}

// Primary key schemas.
var (
	activationSchema = schema{{"run", partStr}, {"node", partStr}, {"activation", partStr}}
	attemptSchema    = append(activationSchema[:3:3], field{"attempt", partU32})
	leaseSchema      = append(attemptSchema[:4:4], field{"resource", partStr}, field{"mode", partStr})
)

// kind is what the layout and the verifier know of a record kind without
// its Go type.
type kind struct {
	name    string // as reported by Verify
	space          // tag
	schema  schema // of the primary key
	indexes []*index
	// check decodes a stored value and returns the primary key its fields
	// give and its key in each of indexes, in order (nil where the record
	// is not a member).
	check func(value []byte) (pk key, entries []key, err error)
}

// table is a record kind with its Go types: K the key type Changes and
// Lookup name records by, R the record.
type table[K comparable, R any] struct {
	*kind
	id      func(R) K // the record's key
	key     func(K) key
	encode  func(R) []byte
	decode  func([]byte) (R, error)
	indexed []*indexOf[R]
}

// pk returns rec's primary key.
func (tb *table[K, R]) pk(rec R) key { return tb.key(tb.id(rec)) }

func newTable[K comparable, R any](name string, tag byte, s schema, id func(R) K, k func(K) key,
	enc func(R) []byte, dec func([]byte) (R, error), ixs ...*indexOf[R]) *table[K, R] {
	tb := &table[K, R]{
		kind: &kind{name: name, space: space{tag: tag}, schema: s},
		id:   id, key: k, encode: enc, decode: dec, indexed: ixs,
	}
	for _, ix := range ixs {
		ix.owner = tb.kind
		tb.indexes = append(tb.indexes, ix.index)
	}
	tb.check = func(v []byte) (key, []key, error) {
		rec, err := dec(v)
		if err != nil {
			return nil, nil, err
		}
		entries := make([]key, len(ixs))
		for i, ix := range ixs {
			if e, ok := ix.entry(rec); ok {
				entries[i] = e
			}
		}
		return tb.pk(rec), entries, nil
	}
	return tb
}

// The record kinds. Their tags are fixed by the format: never renumber one.
var (
	kindRun = newTable("run", 0x40, schema{{"id", partStr}},
		func(r backend.Run) string { return r.ID }, runKey, encodeRun, decodeRun)
	kindLink = newTable("run_link", 0x41, schema{{"child", partStr}},
		func(l backend.RunLink) string { return l.ChildRunID }, linkKey, encodeLink, decodeLink,
		ixLinkRoot)
	kindActivation = newTable("activation", 0x42, activationSchema,
		func(a backend.Activation) backend.ActivationKey { return a.Key }, activationKey, encodeActivation, decodeActivation,
		ixPending)
	kindGroup = newTable("fan_out_group", 0x43, activationSchema,
		func(g backend.FanOutGroup) backend.ActivationKey { return g.Controller }, activationKey, encodeGroup, decodeGroup)
	kindAttempt = newTable("attempt", 0x44, attemptSchema,
		func(a backend.Attempt) backend.AttemptKey { return a.Key }, attemptKey, encodeAttempt, decodeAttempt,
		ixAttemptIdentity, ixAttemptStatus, ixAttemptRunStatus, ixAttemptRun, ixAttemptPrepared)
	kindLease = newTable("lease", 0x45, leaseSchema,
		func(l backend.Lease) backend.LeaseKey { return l.Key }, leaseKey, encodeLease, decodeLease,
		ixLeaseActive, ixLeaseResource)
	kindSchedule = newTable("retry_schedule", 0x46, activationSchema,
		func(s backend.RetrySchedule) backend.ActivationKey { return s.Key }, activationKey, encodeSchedule, decodeSchedule,
		ixScheduleDue)
	kindEvent = newTable("event", 0x47, schema{{"run", partStr}, {"seq", partI64}},
		backend.Event.Key, eventKey, encodeEvent, decodeEvent)

	kinds = []*kind{kindRun.kind, kindLink.kind, kindActivation.kind, kindGroup.kind,
		kindAttempt.kind, kindLease.kind, kindSchedule.kind, kindEvent.kind}
)

package bolt

import (
	"bytes"
	"fmt"

	"go.etcd.io/bbolt"

	"github.com/wfstore/wfstore/backend"
)

// This file is the store's layout: the bucket "runs" holds a bucket per
// run with the run's records and per-run index entries, keyed tag | rest of
// the key, so what one admission writes to its run lands on a few leaves of
// one small tree; the bucket "ix" holds the indexes that
// order across runs (indexes.go), and "meta" the marker and version
// (meta.go). The record kinds below are the only place that ties a record
// type to its space, key, codec and indexes; apply.go, load.go, scans.go
// and verify.go are written against them. Which operations a kind accepts
// is not here: it is the shape of backend.Changes, so apply.go has a call
// for each of its slices and nothing to check at run time.

// bucketRuns holds a bucket per run, named by the encoded run id, with
// every record and per-run index entry of the run.
var bucketRuns = []byte("runs")

// space is where a record kind's records or an index's entries are stored.
//
// A per-run space lives in bucketRuns: a codec key k, whose first part is
// always the run id (a string, so self-delimiting), has the stored key k's
// run part, then the space's tag byte, then the rest of k; locate finds the
// run's bucket (named by the run part) and the key in it (tag | rest). A
// run's keys of one space are therefore one contiguous range. A global
// space lives in bucketIndex: k is stored after the space's tag (the index
// id) byte, so the whole index is one range.
type space struct {
	bucket []byte
	perRun bool
	tag    byte
}

// runPartLen returns the length of k's first part, an encoded string, or
// -1 when k does not start with a complete one.
func runPartLen(k []byte) int {
	for i := 0; i+1 < len(k); i++ {
		if k[i] == 0x00 {
			if k[i+1] == escEnd {
				return i + 2
			}
			i++ // 0x00 0xFF: an escaped 0x00
		}
	}
	return -1
}

// locate returns the bucket that holds stored key sk of space s, and sk's
// key in it. A per-run space's keys live in the run's own bucket inside
// bucketRuns, named by the run part and keyed tag | rest: nil when the run
// has no keys yet, unless create (a write transaction) makes it.
func locate(tx *bbolt.Tx, s *space, sk []byte, create bool) (*bbolt.Bucket, []byte, error) {
	top := tx.Bucket(s.bucket)
	if top == nil {
		return nil, nil, fmt.Errorf("bolt: bucket %q is missing", s.bucket)
	}
	if tx.Writable() {
		top.FillPercent = fillPercent
	}
	if !s.perRun {
		return top, sk, nil
	}
	n := runPartLen(sk)
	if n < 0 {
		return nil, nil, fmt.Errorf("bolt: a per-run key without a run part: %x", sk)
	}
	rb := top.Bucket(sk[:n])
	if rb == nil && create {
		var err error
		if rb, err = top.CreateBucket(sk[:n]); err != nil {
			return nil, nil, fmt.Errorf("bolt: create run bucket %x: %w", sk[:n], err)
		}
	}
	if rb != nil && tx.Writable() {
		rb.FillPercent = fillPercent
	}
	return rb, sk[n:], nil
}

// stored returns the key under which codec key k is stored in s (for a
// per-run space, its run part then its key in the run's bucket: locate).
func (s *space) stored(k key) []byte {
	out := make([]byte, 0, 1+len(k))
	if !s.perRun {
		return append(append(out, s.tag), k...)
	}
	n := runPartLen(k)
	if n < 0 {
		panic("bolt: a per-run key without a run part")
	}
	return append(append(append(out, k[:n]...), s.tag), k[n:]...)
}

// unstored returns the codec key sk was stored from, or ok=false when sk is
// not a key of s.
func (s *space) unstored(sk []byte) (k key, ok bool) {
	if !s.perRun {
		if len(sk) == 0 || sk[0] != s.tag {
			return nil, false
		}
		return sk[1:], true
	}
	n := runPartLen(sk)
	if n < 0 || n >= len(sk) || sk[n] != s.tag {
		return nil, false
	}
	return append(append(key(nil), sk[:n]...), sk[n+1:]...), true
}

// span returns the stored-key range of a global space for codec keys
// [from, until): a nil from is the space's first key, a nil until its end.
func (s *space) span(from, until []byte) (sfrom, suntil []byte) {
	sfrom = s.stored(from)
	if until == nil {
		suntil = []byte{s.tag + 1}
	} else {
		suntil = s.stored(until)
	}
	return sfrom, suntil
}

// runSpan returns the stored-key range of a per-run space for codec keys
// [from, until) of one run: a nil from is the run's first key, a nil until
// the end of the run's keys in s. The range is clipped to the run's keys: a
// bound outside the run (a cursor in another run, a prefixEnd that carried
// into the run part) stands for the run's start or end.
func (s *space) runSpan(run string, from, until []byte) (sfrom, suntil []byte) {
	runPart := key(nil).str(run)
	start, end := s.stored(runPart), append(runPart.clone(), s.tag+1)
	switch {
	case !bytes.HasPrefix(from, runPart) && bytes.Compare(from, runPart) < 0:
		sfrom = start
	case !bytes.HasPrefix(from, runPart):
		return end, end // after the run: empty
	default:
		sfrom = s.stored(from)
	}
	if until == nil || !bytes.HasPrefix(until, runPart) {
		if bytes.Compare(until, runPart) <= 0 && until != nil {
			return start, start // before the run: empty
		}
		suntil = end
	} else {
		suntil = s.stored(until)
	}
	return sfrom, suntil
}

// Primary key schemas.
var (
	activationSchema = schema{{"run", partStr}, {"node", partStr}, {"activation", partStr}}
	attemptSchema    = append(activationSchema[:3:3], field{"attempt", partU32})
	leaseSchema      = append(attemptSchema[:4:4], field{"resource", partStr}, field{"mode", partStr})
)

// kind is what the layout and the verifier know of a record kind without
// its Go type: its name, space, key schema and indexes, and check, which
// takes a stored value apart.
type kind struct {
	name    string // as reported by Verify
	space          // per-run, tagged tag
	schema  schema // of the primary key
	indexes []*index
	// check decodes a stored value and returns the primary key its fields
	// give and its key in each of indexes, in order (nil where the record
	// is not a member).
	check func(value []byte) (pk key, entries []key, err error)
}

// table is a record kind with its Go types: K the key type Changes and
// Lookup name records by, R the record. Every write and read of R goes
// through its table, so no code picks a kind by a record's dynamic type.
type table[K comparable, R any] struct {
	*kind
	id      func(R) K // the record's key
	key     func(K) key
	encode  func(R) []byte
	decode  func([]byte) (R, error)
	indexed []*indexOf[R] // the indexes of kind.indexes, typed
}

// pk returns rec's primary key.
func (tb *table[K, R]) pk(rec R) key { return tb.key(tb.id(rec)) }

// newTable makes a record kind's table, stored in bucketRuns under tag,
// with its indexes.
func newTable[K comparable, R any](name string, tag byte, s schema, id func(R) K, k func(K) key,
	enc func(R) []byte, dec func([]byte) (R, error), ixs ...*indexOf[R]) *table[K, R] {
	tb := &table[K, R]{
		kind: &kind{name: name, space: space{bucket: bucketRuns, perRun: true, tag: tag}, schema: s},
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

// The record kinds, in the order of the table in backend's package doc.
// Their tags are fixed by the format: never renumber one. They share the
// tag byte of bucketRuns with the per-run indexes' ids (1 to 11).
var (
	kindRun = newTable("run", 0x40, schema{{"id", partStr}},
		func(r backend.Run) string { return r.ID }, runKey, encodeRun, decodeRun,
		ixRunStatus)
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

// allBuckets lists every bucket of a store.
func allBuckets() [][]byte {
	return [][]byte{bucketMeta, bucketRuns, bucketIndex}
}

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
// (meta.go). The kinds table below is the only place that ties a record
// kind to its space, codec, allowed operations and indexes; apply.go and
// verify.go are written against it.

// bucketRuns holds a bucket per run, named by the encoded run id, with
// every record and per-run index entry of the run.
var bucketRuns = []byte("runs")

// space is where a record kind's records or an index's entries are stored.
//
// A per-run space lives in bucketRuns: a codec key k, whose first part is
// always the run id (a string, so self-delimiting), has the stored key k's
// run part, then the space's tag byte, then the rest of k; locate finds the
// run's bucket (named by the run part) and the key in it (tag | rest). A
// run's keys of one space are therefore one contiguous range. A global space lives in bucketIndex: k is stored after the
// space's tag (the index id) byte, so the whole index is one range.
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

// kind describes how one record kind is stored.
type kind struct {
	name    string // backend.Record.Kind()
	space          // per-run, tagged tag
	schema  schema // of the primary key
	replace bool   // accepts Replace (every kind accepts Insert)
	delete  bool   // accepts Delete
	expect  bool   // accepts Expect
	key     func(backend.Record) key
	encode  func(backend.Record) []byte
	decode  func([]byte) (backend.Record, error)
	indexes []*index
}

// The record kinds, in the order of the table in backend's package doc.
var (
	kindRun = &kind{
		name: "run", schema: schema{{"id", partStr}}, replace: true, expect: true,
		key:    func(r backend.Record) key { return runKey(r.(backend.Run).ID) },
		encode: func(r backend.Record) []byte { return encodeRun(r.(backend.Run)) },
		decode: func(b []byte) (backend.Record, error) { return decodeRun(b) },
	}
	kindLink = &kind{
		name: "run_link", schema: schema{{"child", partStr}},
		key:     func(r backend.Record) key { return linkKey(r.(backend.RunLink).ChildRunID) },
		encode:  func(r backend.Record) []byte { return encodeLink(r.(backend.RunLink)) },
		decode:  func(b []byte) (backend.Record, error) { return decodeLink(b) },
		indexes: []*index{ixLinkRoot},
	}
	kindActivation = &kind{
		name: "activation", schema: activationSchema, replace: true, expect: true,
		key:     func(r backend.Record) key { return activationKey(r.(backend.Activation).Key) },
		encode:  func(r backend.Record) []byte { return encodeActivation(r.(backend.Activation)) },
		decode:  func(b []byte) (backend.Record, error) { return decodeActivation(b) },
		indexes: []*index{ixPending},
	}
	kindGroup = &kind{
		name: "fan_out_group", schema: activationSchema, replace: true,
		key:    func(r backend.Record) key { return activationKey(r.(backend.FanOutGroup).Controller) },
		encode: func(r backend.Record) []byte { return encodeGroup(r.(backend.FanOutGroup)) },
		decode: func(b []byte) (backend.Record, error) { return decodeGroup(b) },
	}
	kindAttempt = &kind{
		name: "attempt", schema: attemptSchema, replace: true, delete: true, expect: true,
		key:     func(r backend.Record) key { return attemptKey(r.(backend.Attempt).Key) },
		encode:  func(r backend.Record) []byte { return encodeAttempt(r.(backend.Attempt)) },
		decode:  func(b []byte) (backend.Record, error) { return decodeAttempt(b) },
		indexes: []*index{ixAttemptIdentity, ixAttemptStatus, ixAttemptRunStatus, ixAttemptRun, ixAttemptPrepared},
	}
	kindLease = &kind{
		name: "lease", schema: leaseSchema, replace: true, delete: true,
		key:     func(r backend.Record) key { return leaseKey(r.(backend.Lease).Key) },
		encode:  func(r backend.Record) []byte { return encodeLease(r.(backend.Lease)) },
		decode:  func(b []byte) (backend.Record, error) { return decodeLease(b) },
		indexes: []*index{ixLeaseActive, ixLeaseResource},
	}
	kindSchedule = &kind{
		name: "retry_schedule", schema: activationSchema, replace: true, delete: true,
		key:     func(r backend.Record) key { return activationKey(r.(backend.RetrySchedule).Key) },
		encode:  func(r backend.Record) []byte { return encodeSchedule(r.(backend.RetrySchedule)) },
		decode:  func(b []byte) (backend.Record, error) { return decodeSchedule(b) },
		indexes: []*index{ixScheduleDue},
	}
	kindEvent = &kind{
		name: "event", schema: schema{{"run", partStr}, {"seq", partI64}}, delete: true,
		key: func(r backend.Record) key {
			e := r.(backend.Event)
			return eventKey(e.RunID, e.Seq)
		},
		encode: func(r backend.Record) []byte { return encodeEvent(r.(backend.Event)) },
		decode: func(b []byte) (backend.Record, error) { return decodeEvent(b) },
	}

	kinds = []*kind{kindRun, kindLink, kindActivation, kindGroup, kindAttempt, kindLease, kindSchedule, kindEvent}
)

// Kind tags are fixed by the format: never renumber one. They share the
// tag byte of bucketRuns with the per-run indexes' ids (1..10).
func init() {
	for i, k := range kinds {
		k.space = space{bucket: bucketRuns, perRun: true, tag: byte(0x40 + i)}
	}
}

// kindOf returns the kind of rec. Records must be values of the backend
// record types; anything else (a pointer, a foreign type) is unsupported.
func kindOf(rec backend.Record) (*kind, error) {
	switch rec.(type) {
	case backend.Run:
		return kindRun, nil
	case backend.RunLink:
		return kindLink, nil
	case backend.Activation:
		return kindActivation, nil
	case backend.FanOutGroup:
		return kindGroup, nil
	case backend.Attempt:
		return kindAttempt, nil
	case backend.Lease:
		return kindLease, nil
	case backend.RetrySchedule:
		return kindSchedule, nil
	case backend.Event:
		return kindEvent, nil
	}
	return nil, fmt.Errorf("bolt: record of type %T (records are values of the backend record types): %w", rec, backend.ErrUnsupported)
}

// allBuckets lists every bucket of a store.
func allBuckets() [][]byte {
	return [][]byte{bucketMeta, bucketRuns, bucketIndex}
}

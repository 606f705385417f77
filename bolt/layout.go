package bolt

import (
	"fmt"

	"github.com/wfstore/wfstore/backend"
)

// This file is the store's layout: one top-level bucket per record kind,
// keyed by the kind's primary key, plus the meta bucket (meta.go) and one
// bucket "ix" holding every index (indexes.go). The kinds table below is the only place
// that ties a record kind to its bucket, codec, allowed operations and
// indexes; apply.go and verify.go are written against it.

// Primary key schemas.
var (
	activationSchema = schema{{"run", partStr}, {"node", partStr}, {"activation", partStr}}
	attemptSchema    = append(activationSchema[:3:3], field{"attempt", partU32})
	leaseSchema      = append(attemptSchema[:4:4], field{"resource", partStr}, field{"mode", partStr})
)

// kind describes how one record kind is stored.
type kind struct {
	name    string // backend.Record.Kind(); also the bucket name
	bucket  []byte
	schema  schema // of the primary key
	replace bool   // accepts Replace (every kind accepts Insert)
	delete  bool   // accepts Delete
	key     func(backend.Record) key
	encode  func(backend.Record) []byte
	decode  func([]byte) (backend.Record, error)
	indexes []*index
}

// The record kinds, in the order of the table in backend's package doc.
var (
	kindRun = &kind{
		name: "run", schema: schema{{"id", partStr}}, replace: true,
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
		name: "activation", schema: activationSchema, replace: true,
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
		name: "attempt", schema: attemptSchema, replace: true,
		key:     func(r backend.Record) key { return attemptKey(r.(backend.Attempt).Key) },
		encode:  func(r backend.Record) []byte { return encodeAttempt(r.(backend.Attempt)) },
		decode:  func(b []byte) (backend.Record, error) { return decodeAttempt(b) },
		indexes: []*index{ixAttemptIdentity, ixAttemptStatus, ixAttemptRunStatus, ixAttemptRun, ixAttemptPrepared},
	}
	kindLease = &kind{
		name: "lease", schema: leaseSchema, replace: true,
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
		name: "event", schema: schema{{"run", partStr}, {"seq", partI64}},
		key: func(r backend.Record) key {
			e := r.(backend.Event)
			return eventKey(e.RunID, e.Seq)
		},
		encode: func(r backend.Record) []byte { return encodeEvent(r.(backend.Event)) },
		decode: func(b []byte) (backend.Record, error) { return decodeEvent(b) },
	}

	kinds = []*kind{kindRun, kindLink, kindActivation, kindGroup, kindAttempt, kindLease, kindSchedule, kindEvent}
)

func init() {
	for _, k := range kinds {
		k.bucket = []byte(k.name)
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

// allBuckets lists every bucket of a format-1 store.
func allBuckets() [][]byte {
	out := [][]byte{bucketMeta}
	for _, k := range kinds {
		out = append(out, k.bucket)
	}
	return append(out, bucketIndex)
}

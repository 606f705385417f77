package kvlayout

import (
	"fmt"

	"github.com/wfstore/wfstore/backend"
)

// This file is the layout: the record kinds, each tied to its space, key,
// codec and indexes. The only place that ties a record type to them is
// New; Apply, Load, the scans and the verifier are written against the
// kinds. Which operations a kind accepts is not here: it is the shape of
// backend.Changes (apply.go).

// Config is what may differ between two stores of this layout. Tags, ids,
// keys and values never differ.
type Config struct {
	// Name starts the layout's error messages ("bolt", "etcd").
	Name string
	// RunGroup, when set, is the group of the per-run spaces: every record
	// kind and every run-scoped index is stored by run there. When nil,
	// every space is flat, in FlatGroup.
	RunGroup []byte
	// FlatGroup is the group of the flat spaces.
	FlatGroup []byte
	// RunStatusIndex adds ix_run_status (runs by status) to the run kind.
	RunStatusIndex bool
	// MaxKeySize and MaxValueSize, when > 0, bound the stored keys and the
	// values Apply writes.
	MaxKeySize, MaxValueSize int
}

// Kind is what the layout and the verifier know of a record kind without
// its Go type: its name, space, key schema and indexes.
type Kind struct {
	Name string // as reported by Verify
	Space
	Schema  Schema // of the primary key
	Indexes []*Index
	// check decodes a stored value and returns the primary key its fields
	// give and its key in each of Indexes, in order (nil where the record
	// is not a member).
	check func(value []byte) (pk Key, entries []Key, err error)
}

// Table is a record kind with its Go types: K the key type Changes and
// Lookup name records by, R the record. Every write and read of R goes
// through its table, so no code picks a kind by a record's dynamic type.
type Table[K comparable, R any] struct {
	*Kind
	ID  func(R) K // the record's key
	key func(K) Key
	// appendKey appends the primary key of the record named k to dst.
	appendKey func(dst Key, k K) Key
	encode    func(R) []byte
	read      func(valueReader) (R, error)
	Indexed   []*IndexOf[R] // the indexes of Kind.Indexes, typed
	name      string        // the layout's, for errors
}

// Key returns the primary key (a codec key) of the record named k.
func (tb *Table[K, R]) Key(k K) Key { return tb.key(k) }

// PK returns rec's primary key.
func (tb *Table[K, R]) PK(rec R) Key { return tb.key(tb.ID(rec)) }

// Encode returns rec's stored value. Equal records encode as equal bytes.
func (tb *Table[K, R]) Encode(rec R) []byte { return tb.encode(rec) }

// Decode decodes a stored value of this kind; a value that is not one
// fails with an error wrapping ErrMalformedValue.
func (tb *Table[K, R]) Decode(v []byte) (R, error) {
	rec, err := tb.read(valueReader{b: v})
	if err != nil {
		err = fmt.Errorf("%s: %w", tb.name, err)
	}
	return rec, err
}

// decodeView is Decode for a record used only while v is: its strings and
// byte fields share v's memory instead of being copied (valueReader.view).
// Apply decodes the stored record it replaces or deletes this way, to work
// out the index entries to delete, which copy what they take.
func (tb *Table[K, R]) decodeView(v []byte) (R, error) {
	rec, err := tb.read(valueReader{b: v, view: true})
	if err != nil {
		err = fmt.Errorf("%s: %w", tb.name, err)
	}
	return rec, err
}

// Layout is one store's layout: the record kinds and indexes, each in its
// space. Its tables are fixed by New and shared by every transaction.
type Layout struct {
	cfg Config

	Run         *Table[string, backend.Run]
	Link        *Table[string, backend.RunLink]
	Activation  *Table[backend.ActivationKey, backend.Activation]
	FanOutGroup *Table[backend.ActivationKey, backend.FanOutGroup]
	Attempt     *Table[backend.AttemptKey, backend.Attempt]
	Lease       *Table[backend.LeaseKey, backend.Lease]
	Schedule    *Table[backend.ActivationKey, backend.RetrySchedule]
	Event       *Table[backend.EventKey, backend.Event]

	Pending          *IndexOf[backend.Activation]    // ix_pending_activation
	AttemptIdentity  *IndexOf[backend.Attempt]       // ix_attempt_identity (unique)
	AttemptStatus    *IndexOf[backend.Attempt]       // ix_attempt_status
	AttemptRunStatus *IndexOf[backend.Attempt]       // ix_attempt_run_status
	AttemptRun       *IndexOf[backend.Attempt]       // ix_attempt_run_prepared
	AttemptPrepared  *IndexOf[backend.Attempt]       // ix_attempt_prepared
	LinkRoot         *IndexOf[backend.RunLink]       // ix_link_root
	ScheduleDue      *IndexOf[backend.RetrySchedule] // ix_schedule_due
	LeaseActive      *IndexOf[backend.Lease]         // ix_lease_active
	LeaseResource    *IndexOf[backend.Lease]         // ix_lease_resource
	RunStatus        *IndexOf[backend.Run]           // ix_run_status; nil unless Config.RunStatusIndex

	// Kinds lists the record kinds, in the order of the table in backend's
	// package doc (and of Verify's report).
	Kinds []*Kind
}

// Primary key schemas.
var (
	activationSchema = Schema{{"run", PartStr}, {"node", PartStr}, {"activation", PartStr}}
	attemptSchema    = append(activationSchema[:3:3], Field{"attempt", PartU32})
	leaseSchema      = append(attemptSchema[:4:4], Field{"resource", PartStr}, Field{"mode", PartStr})
)

// New returns the layout cfg describes.
func New(cfg Config) *Layout {
	l := &Layout{cfg: cfg}
	l.newIndexes()
	// The kinds' tags are fixed by the format: never renumber one. They
	// share the tag byte of a group with the indexes' ids (1 to 11).
	var runIxs []*IndexOf[backend.Run]
	if l.RunStatus != nil {
		runIxs = append(runIxs, l.RunStatus)
	}
	l.Run = newTable(l, "run", 0x40, Schema{{"id", PartStr}},
		func(r backend.Run) string { return r.ID }, appendIDKey, encodeRun, readRun, runIxs...)
	l.Link = newTable(l, "run_link", 0x41, Schema{{"child", PartStr}},
		func(r backend.RunLink) string { return r.ChildRunID }, appendIDKey, encodeLink, readLink,
		l.LinkRoot)
	l.Activation = newTable(l, "activation", 0x42, activationSchema,
		func(a backend.Activation) backend.ActivationKey { return a.Key }, appendActivationKey, encodeActivation, readActivation,
		l.Pending)
	l.FanOutGroup = newTable(l, "fan_out_group", 0x43, activationSchema,
		func(g backend.FanOutGroup) backend.ActivationKey { return g.Controller }, appendActivationKey, encodeGroup, readGroup)
	l.Attempt = newTable(l, "attempt", 0x44, attemptSchema,
		func(a backend.Attempt) backend.AttemptKey { return a.Key }, appendAttemptKey, encodeAttempt, readAttempt,
		l.AttemptIdentity, l.AttemptStatus, l.AttemptRunStatus, l.AttemptRun, l.AttemptPrepared)
	l.Lease = newTable(l, "lease", 0x45, leaseSchema,
		func(s backend.Lease) backend.LeaseKey { return s.Key }, appendLeaseKey, encodeLease, readLease,
		l.LeaseActive, l.LeaseResource)
	l.Schedule = newTable(l, "retry_schedule", 0x46, activationSchema,
		func(s backend.RetrySchedule) backend.ActivationKey { return s.Key }, appendActivationKey, encodeSchedule, readSchedule,
		l.ScheduleDue)
	l.Event = newTable(l, "event", 0x47, Schema{{"run", PartStr}, {"seq", PartI64}},
		backend.Event.Key, appendEventKey, encodeEvent, readEvent)
	l.Kinds = []*Kind{l.Run.Kind, l.Link.Kind, l.Activation.Kind, l.FanOutGroup.Kind,
		l.Attempt.Kind, l.Lease.Kind, l.Schedule.Kind, l.Event.Kind}
	return l
}

// Name is the layout's name, which starts its errors.
func (l *Layout) Name() string { return l.cfg.Name }

// space returns the space of a record kind or index with tag, stored by
// run when perRun is allowed and the layout has a run group.
func (l *Layout) space(tag byte, perRun bool) Space {
	if perRun && l.cfg.RunGroup != nil {
		return Space{Group: l.cfg.RunGroup, PerRun: true, Tag: tag}
	}
	return Space{Group: l.cfg.FlatGroup, Tag: tag}
}

// newTable makes a record kind's table, in its space, with its indexes.
func newTable[K comparable, R any](l *Layout, name string, tag byte, s Schema, id func(R) K, ak func(Key, K) Key,
	enc func(R) []byte, read func(valueReader) (R, error), ixs ...*IndexOf[R]) *Table[K, R] {
	tb := &Table[K, R]{
		Kind: &Kind{Name: name, Space: l.space(tag, true), Schema: s},
		ID:   id, key: func(k K) Key { return ak(nil, k) }, appendKey: ak, encode: enc, read: read, Indexed: ixs, name: l.cfg.Name,
	}
	for _, ix := range ixs {
		ix.Owner = tb.Kind
		tb.Indexes = append(tb.Indexes, ix.Index)
	}
	tb.check = func(v []byte) (Key, []Key, error) {
		rec, err := tb.Decode(v)
		if err != nil {
			return nil, nil, err
		}
		entries := make([]Key, len(ixs))
		for i, ix := range ixs {
			if e, ok := ix.Entry(rec); ok {
				entries[i] = e
			}
		}
		return tb.PK(rec), entries, nil
	}
	return tb
}

package state

import (
	"bytes"
	"context"
	"fmt"
	"slices"

	"github.com/wfstore/wfstore/backend"
)

// Batch collects the writes one transaction decides, in decision order, and
// turns them into one backend.Changes when the transaction applies them.
// Decision order may touch a record several times (insert then replace, or
// replace then delete); Changes coalesces each record's operations into the
// one its final state needs, so the fixed apply order of Changes gives the
// state the decisions describe.
type Batch struct {
	log []entry
	// Arrived: the transaction makes work available (see WorkArrives).
	Arrived bool
	// Settled lists, in first-settlement order, the runs whose attempt,
	// activation or retry schedule the transaction settled or removed:
	// completion is evaluated for each once the transaction's decisions
	// are made (see workflow's completeSettledRuns). It survives Apply.
	Settled []string
	// EventAt is, per run, the time of the last event the transaction
	// appended to it: the time a completion it decides is dated.
	EventAt map[string]int64
	// Waits lists, in settlement order, the activations joins wait for
	// whose settlement (or lost retry schedule) the transaction decided:
	// workflow's settleJoins applies each to its joins once the transaction's own
	// decisions are made. It survives Apply.
	Waits []WaitSettled
	// swapped holds the attempts the transaction has already written with
	// a compare-and-set (see Swapped), as written.
	swapped map[backend.AttemptKey]backend.Attempt
}

// Swapped notes that the transaction has already written att itself, by a
// per-row compare-and-set (backend.Swapper) that reported it changed the
// row: a Replace of att's key whose final value equals att is then left
// out of Changes, as it would write the row again unchanged. Any other
// write of that attempt is kept. It survives Apply.
func (b *Batch) Swapped(att backend.Attempt) {
	if b.swapped == nil {
		b.swapped = map[backend.AttemptKey]backend.Attempt{}
	}
	b.swapped[att.Key] = att
}

// WaitSettled is one settlement of an activation joins wait for.
type WaitSettled struct {
	Pred backend.ActivationKey
	// Completed: Pred completed; Joins are the joins waiting for it then
	// (a join added later in the transaction counted it complete).
	// Otherwise Pred failed or was cancelled, and settleJoins reads it
	// afresh.
	Completed bool
	Joins     []backend.NodeRef
	At        int64
}

// WaitForSettled notes that act, which joins wait for, settles now:
// completed or not.
func (b *Batch) WaitForSettled(act backend.Activation, completed bool, at int64) {
	b.Waits = append(b.Waits, WaitSettled{Pred: act.Key, Completed: completed, Joins: act.Joins, At: at})
}

type writeOp uint8

const (
	opInsert writeOp = iota + 1
	opReplace
	opDelete
	// opFail: a write that could not be built (rec is its error); the
	// batch refuses to apply while the entry is in it.
	opFail
)

type entry struct {
	op  writeOp
	rec any // a backend record value, or the error of an opFail
}

// insertable, replaceable and removable are the record kinds the contract
// lets a transaction insert, replace and delete: a write it does not allow
// does not compile.
type (
	insertable interface {
		backend.Run | backend.RunLink | backend.Activation | backend.FanOutGroup |
			backend.Attempt | backend.Lease | backend.RetrySchedule | backend.Event
	}
	replaceable interface {
		backend.Run | backend.Activation | backend.FanOutGroup | backend.Attempt |
			backend.Lease | backend.RetrySchedule
	}
	removable interface {
		backend.Attempt | backend.Lease | backend.RetrySchedule | backend.Event
	}
)

func Insert[R insertable](w *Batch, r R) { w.log = append(w.log, entry{opInsert, r}) }

func Replace[R replaceable](w *Batch, r R) {
	w.log = append(w.log, entry{opReplace, r})
	w.noteSettlement(r)
}

func Remove[R removable](w *Batch, r R) {
	w.log = append(w.log, entry{opDelete, r})
	w.noteSettlement(r)
}

// noteSettlement records the run of a write that may let it complete: an
// attempt leaving the active statuses, an activation reaching a terminal
// status, or a retry schedule deleted. Every settlement path writes such a
// record, so none can skip the completion check.
func (b *Batch) noteSettlement(rec any) {
	var runID string
	switch r := rec.(type) {
	case backend.Attempt:
		if isActive(r.Status) {
			return
		}
		runID = r.Key.RunID
	case backend.Activation:
		if !activationSettled(r.Status) {
			return
		}
		runID = r.Key.RunID
	case backend.RetrySchedule:
		runID = r.Key.RunID
	default:
		return
	}
	if !slices.Contains(b.Settled, runID) {
		b.Settled = append(b.Settled, runID)
	}
}

// WorkArrives records that the transaction makes work available: once it
// commits, in-process waiters (WorkArrived, ListenWork) are woken, and the
// backend, when it can (backend.WorkSignaler), signals listeners in other
// processes. A transaction that does not commit wakes no one.
func (b *Batch) WorkArrives() { b.Arrived = true }

// Empty reports whether no write has been decided since the last apply.
func (b *Batch) Empty() bool { return len(b.log) == 0 }

// Mark returns a position that truncate returns the batch to.
func (b *Batch) Mark() int { return len(b.log) }

// Truncate drops every write decided after mark m.
func (b *Batch) Truncate(m int) { b.log = b.log[:m] }

// event appends an event to run (advancing its sequence); the caller
// replaces the run record afterwards. A payload that cannot be encoded
// within the document limits fails the batch (apply returns its error):
// the owner limits keep every owner document small enough that this never
// happens, and if it did the transaction would be refused, not panic.
func (b *Batch) event(run *backend.Run, typ string, payload any, atMS int64) {
	enc, err := encodePayload(payload)
	if err != nil {
		err = fmt.Errorf("workflow: event %s payload: %w", typ, err)
		b.log = append(b.log, entry{opFail, err})
		return
	}
	b.appendEvent(run, typ, enc, atMS)
}

// appendEvent appends to run (advancing its sequence) an event whose
// payload enc is already encoded, as event encodes it; the caller replaces
// the run record afterwards.
func (b *Batch) appendEvent(run *backend.Run, typ string, enc []byte, atMS int64) {
	run.LastEventSeq++
	if b.EventAt == nil {
		b.EventAt = map[string]int64{}
	}
	b.EventAt[run.ID] = atMS
	Insert(b, backend.Event{
		RunID:     run.ID,
		Seq:       run.LastEventSeq,
		Type:      typ,
		Payload:   enc,
		CreatedMS: atMS,
	})
}

// recordKind numbers the record kinds, for recordKey.
type recordKind uint8

const (
	kindRun recordKind = iota + 1
	kindLink
	kindActivation
	kindGroup
	kindAttempt
	kindLease
	kindSchedule
	kindEvent
)

var kindNames = [...]string{kindRun: "run", kindLink: "link", kindActivation: "activation", kindGroup: "group",
	kindAttempt: "attempt", kindLease: "lease", kindSchedule: "schedule", kindEvent: "event"}

// recordKey identifies one record across kinds: its kind and the fields
// of its key (unused ones empty). It holds no interface, so making one
// allocates nothing.
type recordKey struct {
	kind          recordKind
	a, b, c, d, e string
	n             int64
}

func activationRecordKey(kind recordKind, k backend.ActivationKey) recordKey {
	return recordKey{kind: kind, a: k.RunID, b: k.NodeID, c: k.ActivationID}
}

func keyOf(rec any) recordKey {
	switch r := rec.(type) {
	case backend.Run:
		return recordKey{kind: kindRun, a: r.ID}
	case backend.RunLink:
		return recordKey{kind: kindLink, a: r.ChildRunID}
	case backend.Activation:
		return activationRecordKey(kindActivation, r.Key)
	case backend.FanOutGroup:
		return activationRecordKey(kindGroup, r.Controller)
	case backend.Attempt:
		k := activationRecordKey(kindAttempt, r.Key.ActivationKey)
		k.n = int64(r.Key.Attempt)
		return k
	case backend.Lease:
		k := activationRecordKey(kindLease, r.Key.ActivationKey)
		k.d, k.e, k.n = r.Key.Resource, string(r.Key.Mode), int64(r.Key.Attempt)
		return k
	case backend.RetrySchedule:
		return activationRecordKey(kindSchedule, r.Key)
	case backend.Event:
		return recordKey{kind: kindEvent, a: r.RunID, n: r.Seq}
	}
	panic(fmt.Sprintf("workflow: %T is not a backend record", rec))
}

// pending is the coalesced fate of one record.
type pending struct {
	deleted  bool // the stored record is deleted first
	inserted bool // a new record is inserted (after any delete)
	replaced bool // the stored record is replaced
	rec      any
	kind     recordKind
}

// Changes coalesces the log into one Changes. Per record: insert then
// replace is an insert of the final value, insert then delete is nothing,
// replace then delete is a delete, and delete then insert stays both (the
// apply order deletes first).
func (b *Batch) Changes() backend.Changes {
	// fates, in the order each record was first written.
	fates := make([]pending, 0, len(b.log))
	index := make(map[recordKey]int, len(b.log))
	for _, e := range b.log {
		k := keyOf(e.rec)
		i, ok := index[k]
		if !ok {
			i = len(fates)
			index[k] = i
			fates = append(fates, pending{kind: k.kind})
		}
		p := &fates[i]
		switch e.op {
		case opInsert:
			p.inserted, p.replaced, p.rec = true, false, e.rec
		case opReplace:
			if p.inserted {
				p.rec = e.rec
			} else {
				p.replaced, p.rec = true, e.rec
			}
		case opDelete:
			if p.inserted {
				p.inserted, p.rec = false, nil
			} else {
				p.replaced, p.deleted, p.rec = false, true, e.rec
			}
		}
	}
	for i := range fates {
		if p := &fates[i]; p.replaced && b.wasSwapped(p.rec) {
			p.replaced = false // already written as it is
		}
	}
	var c backend.Changes
	presize(&c, fates)
	for i := range fates {
		p := &fates[i]
		if p.deleted {
			addDelete(&c, p.rec)
		}
		switch {
		case p.inserted:
			addInsert(&c, p.rec)
		case p.replaced:
			addReplace(&c, p.rec)
		}
	}
	return c
}

// presize gives the insert and replace slices of c the capacity fates
// needs (leaving nil those that stay empty), so that adding the records
// does not copy them as the slices grow.
func presize(c *backend.Changes, fates []pending) {
	var ins, rep [len(kindNames)]int
	for i := range fates {
		switch p := &fates[i]; {
		case p.inserted:
			ins[p.kind]++
		case p.replaced:
			rep[p.kind]++
		}
	}
	in, rp := &c.Insert, &c.Replace
	in.Runs, rp.Runs = capped(in.Runs, ins[kindRun]), capped(rp.Runs, rep[kindRun])
	in.Links = capped(in.Links, ins[kindLink])
	in.Activations, rp.Activations = capped(in.Activations, ins[kindActivation]), capped(rp.Activations, rep[kindActivation])
	in.Groups, rp.Groups = capped(in.Groups, ins[kindGroup]), capped(rp.Groups, rep[kindGroup])
	in.Attempts, rp.Attempts = capped(in.Attempts, ins[kindAttempt]), capped(rp.Attempts, rep[kindAttempt])
	in.Leases, rp.Leases = capped(in.Leases, ins[kindLease]), capped(rp.Leases, rep[kindLease])
	in.Schedules, rp.Schedules = capped(in.Schedules, ins[kindSchedule]), capped(rp.Schedules, rep[kindSchedule])
	in.Events = capped(in.Events, ins[kindEvent])
}

// capped returns s (nil) when n is 0, and an empty slice of capacity n
// otherwise.
func capped[T any](s []T, n int) []T {
	if n == 0 {
		return s
	}
	return make([]T, 0, n)
}

// wasSwapped reports whether rec is an attempt the transaction already
// wrote as it is (see Swapped).
func (b *Batch) wasSwapped(rec any) bool {
	a, ok := rec.(backend.Attempt)
	if !ok {
		return false
	}
	s, ok := b.swapped[a.Key]
	return ok && sameAttempt(s, a)
}

// sameAttempt reports whether a and b are deeply equal, exactly as
// reflect.DeepEqual reports it (a nil slice differs from an empty one),
// without boxing either.
func sameAttempt(a, b backend.Attempt) bool {
	return a.Key == b.Key && a.Identity == b.Identity && a.Status == b.Status && a.SideEffect == b.SideEffect &&
		sameBytes(a.Intent, b.Intent) && a.IntentChecksum == b.IntentChecksum && sameBytes(a.Receipt, b.Receipt) &&
		a.Handoff == b.Handoff && sameBytes(a.Detail, b.Detail) && a.PreparedMS == b.PreparedMS &&
		a.AdmittedMS == b.AdmittedMS && a.TerminalMS == b.TerminalMS && a.HandoffToken == b.HandoffToken
}

// sameBytes is reflect.DeepEqual of two byte slices: nil differs from
// empty.
func sameBytes(a, b []byte) bool { return (a == nil) == (b == nil) && bytes.Equal(a, b) }

func addInsert(c *backend.Changes, rec any) {
	if !c.Insert.Add(rec) {
		panic(fmt.Sprintf("workflow: insert of %T", rec))
	}
}

func addReplace(c *backend.Changes, rec any) {
	rp := &c.Replace
	switch r := rec.(type) {
	case backend.Run:
		rp.Runs = append(rp.Runs, r)
	case backend.Activation:
		rp.Activations = append(rp.Activations, r)
	case backend.FanOutGroup:
		rp.Groups = append(rp.Groups, r)
	case backend.Attempt:
		rp.Attempts = append(rp.Attempts, r)
	case backend.Lease:
		rp.Leases = append(rp.Leases, r)
	case backend.RetrySchedule:
		rp.Schedules = append(rp.Schedules, r)
	default:
		panic(fmt.Sprintf("workflow: replace of %T", rec))
	}
}

func addDelete(c *backend.Changes, rec any) {
	d := &c.Delete
	switch r := rec.(type) {
	case backend.Attempt:
		d.Attempts = append(d.Attempts, r.Key)
	case backend.Lease:
		d.Leases = append(d.Leases, r.Key)
	case backend.RetrySchedule:
		d.Schedules = append(d.Schedules, r.Key)
	case backend.Event:
		d.Events = append(d.Events, r.Key())
	default:
		panic(fmt.Sprintf("workflow: delete of %s %v", kindNames[keyOf(rec).kind], deleteKey(rec)))
	}
}

// LastRun returns the latest value of run id the batch holds since its
// last apply (replaced or inserted), if any.
func (b *Batch) LastRun(id string) (backend.Run, bool) {
	for i := len(b.log) - 1; i >= 0; i-- {
		if r, ok := b.log[i].rec.(backend.Run); ok && r.ID == id && b.log[i].op != opDelete {
			return r, true
		}
	}
	return backend.Run{}, false
}

// Apply applies and clears the batch's pending writes.
func (b *Batch) Apply(ctx context.Context, tx backend.Tx) error {
	if b.Empty() {
		return nil
	}
	for _, e := range b.log {
		if e.op == opFail {
			b.log = b.log[:0]
			return e.rec.(error)
		}
	}
	c := b.Changes()
	b.log = b.log[:0]
	return tx.Apply(ctx, c)
}

// deleteKey is the key a refused delete names: the record's own key.
func deleteKey(rec any) any {
	switch r := rec.(type) {
	case backend.Run:
		return r.ID
	case backend.RunLink:
		return r.ChildRunID
	case backend.Activation:
		return r.Key
	case backend.FanOutGroup:
		return r.Controller
	}
	return rec
}

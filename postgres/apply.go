package postgres

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/wfstore/wfstore/backend"
)

// write is one queued write statement.
type write struct {
	sql  string
	args []any
	// For errors: verb, noun, how many records and the first few keys
	// (formatted only on failure) ...
	verb, noun string
	n          int
	keys       []any
	why        string // ... what the statement's guard failing (22012) means
	none       error  // ... and its sentinel
	many       bool   // a many-row statement
	setting    bool   // not a write: genericPlans or autoPlans
}

// genericPlans and autoPlans bracket the writes of one Apply that has a
// many-row statement. A custom plan of a many-row statement costs 0.15 to
// 0.3 ms to make (more than running it for a few rows), and under
// plan_cache_mode = auto the server makes one on every call when the slice
// is shorter than the ten rows the generic plan assumes for an unnest of a
// parameter (the custom plan, knowing the true count, then looks cheaper).
// The generic plan is as good for any count: a nested loop over the
// unnested keys probing the primary key (TestExplainUsesIndexes checks it),
// so these statements run on it from their first call. Each is a
// set_config(..., true): local to the transaction, restored to the
// transaction's setting after the writes.
const (
	genericPlans = "SELECT set_config('plan_cache_mode', 'force_generic_plan', true)"
	autoPlans    = "SELECT set_config('plan_cache_mode', 'auto', true)"
)

// what names w's operation and records.
func (w write) what() string {
	if w.setting {
		return "set plan_cache_mode"
	}
	keys := make([]string, len(w.keys))
	for i, k := range w.keys {
		keys[i] = fmtKey(k)
	}
	if w.n == 1 {
		return w.verb + " " + w.noun + " " + keys[0]
	}
	if w.n > len(keys) {
		keys = append(keys, "…")
	}
	return w.verb + " of " + strconv.Itoa(w.n) + " " + w.noun + "s (" + strings.Join(keys, ", ") + ")"
}

// op is one of the four operations of backend.Changes.
type op int

const (
	opExpect op = iota
	opDelete
	opInsert
	opReplace
)

// kind is how one slice of backend.Changes is written: records of type R
// (for a Delete slice, keys), each named by a key of type K.
type kind[R any, K comparable] struct {
	noun string // singular, for errors
	w    *writeSQL
	args func(R) []any // the values of the table's columns (Delete: key columns), in order
	key  func(R) K
	// uniqueNonKey: the table has a unique column besides its key
	// (attempts: identity). PostgreSQL checks a non-deferrable unique index
	// row by row, in whatever order a multi-row UPDATE reaches the rows, so
	// whether a slice of Replaces that moves values of that column between
	// its rows conflicts would depend on that order, not on the slice's:
	// such a slice is written one statement per record instead.
	uniqueNonKey bool
	// manyFrom is the shortest slice written with one many-row statement.
	manyFrom int
}

func newKind[R any, K comparable](noun string, w *writeSQL, args func(R) []any, key func(R) K) kind[R, K] {
	return kind[R, K]{noun: noun, w: w, args: args, key: key}
}

// kinds holds the kind of every slice of backend.Changes.
type kinds struct {
	runs        kind[backend.Run, string]
	links       kind[backend.RunLink, string]
	activations kind[backend.Activation, backend.ActivationKey]
	groups      kind[backend.FanOutGroup, backend.ActivationKey]
	attempts    kind[backend.Attempt, backend.AttemptKey]
	leases      kind[backend.Lease, backend.LeaseKey]
	schedules   kind[backend.RetrySchedule, backend.ActivationKey]
	events      kind[backend.Event, backend.EventKey]

	eventKeys    kind[backend.EventKey, backend.EventKey]
	scheduleKeys kind[backend.ActivationKey, backend.ActivationKey]
	leaseKeys    kind[backend.LeaseKey, backend.LeaseKey]
	attemptKeys  kind[backend.AttemptKey, backend.AttemptKey]
}

func buildKinds(q *queries, manyFrom int) kinds {
	k := kinds{
		runs:        newKind("run", &q.runs, runArgs, func(r backend.Run) string { return r.ID }),
		links:       newKind("run link", &q.links, linkArgs, func(l backend.RunLink) string { return l.ChildRunID }),
		activations: newKind("activation", &q.activations, activationArgs, func(a backend.Activation) backend.ActivationKey { return a.Key }),
		groups:      newKind("fan-out group", &q.groups, groupArgs, func(g backend.FanOutGroup) backend.ActivationKey { return g.Controller }),
		attempts:    newKind("attempt", &q.attemptsW, attemptArgs, func(a backend.Attempt) backend.AttemptKey { return a.Key }),
		leases:      newKind("lease", &q.leases, leaseArgs, func(l backend.Lease) backend.LeaseKey { return l.Key }),
		schedules:   newKind("retry schedule", &q.schedules, scheduleArgs, func(s backend.RetrySchedule) backend.ActivationKey { return s.Key }),
		events:      newKind("event", &q.eventsW, eventArgs, backend.Event.Key),

		eventKeys:    newKind("event", &q.eventsW, eventKeyArg, self[backend.EventKey]),
		scheduleKeys: newKind("retry schedule", &q.schedules, actKeyArg, self[backend.ActivationKey]),
		leaseKeys:    newKind("lease", &q.leases, leaseKeyArg, self[backend.LeaseKey]),
		attemptKeys:  newKind("attempt", &q.attemptsW, attemptKeyArg, self[backend.AttemptKey]),
	}
	k.attempts.uniqueNonKey = true
	for _, m := range []*int{&k.runs.manyFrom, &k.links.manyFrom, &k.activations.manyFrom, &k.groups.manyFrom,
		&k.attempts.manyFrom, &k.leases.manyFrom, &k.schedules.manyFrom, &k.events.manyFrom,
		&k.eventKeys.manyFrom, &k.scheduleKeys.manyFrom, &k.leaseKeys.manyFrom, &k.attemptKeys.manyFrom} {
		*m = manyFrom
	}
	return k
}

// smallSlice is the longest slice Apply writes one statement per record,
// as it writes a slice of one. A many-row statement has a fixed cost (its
// unnest, its join, the plan_cache_mode switches around it) that one-row
// statements, each a primary-key probe on a cached plan, only outgrow at
// about five records. BenchmarkApplySlices (a write-only Update expecting
// and replacing n activations and inserting n events, one round trip)
// measured the many-row statements about 20% slower than one statement
// per record for two and four records, about even for five and six, 20%
// faster for eight, 30% for 16 and 40% for 64.
const smallSlice = 4

func self[K any](k K) K { return k }

func eventKeyArg(k backend.EventKey) []any { return []any{k.RunID, k.Seq} }

// queueChanges appends c's writes to ws in the order backend.Changes
// fixes: expects, deletes (events, schedules, leases, attempts), inserts
// (runs, links, activations, groups, attempts, leases, schedules, events),
// replaces (runs, activations, groups, attempts, leases, schedules).
//
// known is what the transaction's earlier writes proved about its
// attempts' Identities (nil: nothing); queueChanges adds what c proves.
func (k *kinds) queueChanges(ws []write, c *backend.Changes, known identities) []write {
	start := len(ws)
	if known == nil {
		known = identities{}
	}
	ws = k.queueOps(ws, c, known)
	for _, w := range ws[start:] {
		if w.many {
			ws = slices.Insert(ws, start, write{sql: genericPlans, setting: true})
			return append(ws, write{sql: autoPlans, setting: true})
		}
	}
	return ws
}

func (k *kinds) queueOps(ws []write, c *backend.Changes, known identities) []write {
	e, d, i, r := &c.Expect, &c.Delete, &c.Insert, &c.Replace
	ws = k.runs.queue(ws, opExpect, e.Runs)
	ws = k.activations.queue(ws, opExpect, e.Activations)
	ws = k.attempts.queue(ws, opExpect, e.Attempts)

	ws = k.eventKeys.queue(ws, opDelete, d.Events)
	ws = k.scheduleKeys.queue(ws, opDelete, d.Schedules)
	ws = k.leaseKeys.queue(ws, opDelete, d.Leases)
	ws = k.attemptKeys.queue(ws, opDelete, d.Attempts)

	ws = k.runs.queue(ws, opInsert, i.Runs)
	ws = k.links.queue(ws, opInsert, i.Links)
	ws = k.activations.queue(ws, opInsert, i.Activations)
	ws = k.groups.queue(ws, opInsert, i.Groups)
	ws = k.attempts.queue(ws, opInsert, i.Attempts)
	ws = k.leases.queue(ws, opInsert, i.Leases)
	ws = k.schedules.queue(ws, opInsert, i.Schedules)
	ws = k.events.queue(ws, opInsert, i.Events)

	ws = k.runs.queue(ws, opReplace, r.Runs)
	ws = k.activations.queue(ws, opReplace, r.Activations)
	ws = k.groups.queue(ws, opReplace, r.Groups)
	ws = k.attempts.queueKept(ws, opReplace, r.Attempts, identitiesKept(c, known))
	ws = k.leases.queue(ws, opReplace, r.Leases)
	ws = k.schedules.queue(ws, opReplace, r.Schedules)
	return ws
}

// queue appends the writes of one slice: one statement for the whole slice
// (the many-row forms of writeSQL), or one one-row statement per record
// when the slice is shorter than manyFrom (smallSlice+1 unless a test
// says otherwise). Either way the outcome is that of writing the
// records one by one in slice order (see guardRows); a slice of Replaces
// that names a key twice is written as its last Replace of each key, which
// is what writing them in order leaves.
func (k *kind[R, K]) queue(ws []write, o op, rs []R) []write {
	return k.queueKept(ws, o, rs, false)
}

// identities is what a transaction has proven about its attempts'
// Identities at the point its queued writes have reached: an attempt it
// expected, inserted or replaced is stored with the Identity it gave (had
// it not been, that write would have failed and the transaction with it).
// A deleted attempt is forgotten.
type identities map[backend.AttemptKey]string

// identitiesKept reports whether c's Replace.Attempts provably change no
// attempt's Identity, and records what c proves in known: every replaced
// attempt is known, from an earlier write of the transaction or from c's
// own Expects, Deletes and Inserts (which run before the Replaces), to be
// stored with the Identity it is replaced with. Then a many-row UPDATE
// moves no Identity between its rows, and its outcome does not depend on
// the order the server reaches them (see kind.uniqueNonKey).
func identitiesKept(c *backend.Changes, known identities) bool {
	for _, a := range c.Expect.Attempts {
		known[a.Key] = a.Identity
	}
	for _, k := range c.Delete.Attempts {
		delete(known, k)
	}
	for _, a := range c.Insert.Attempts {
		known[a.Key] = a.Identity
	}
	kept := len(c.Replace.Attempts) > 0
	for _, a := range c.Replace.Attempts {
		if id, ok := known[a.Key]; !ok || id != a.Identity {
			kept = false
		}
	}
	for _, a := range c.Replace.Attempts {
		known[a.Key] = a.Identity
	}
	return kept
}

// queueKept is queue; uniqueKept says the caller has proven that a Replace
// slice changes no value of the table's unique non-key column, so that it
// may be written as one many-row statement even so.
func (k *kind[R, K]) queueKept(ws []write, o op, rs []R, uniqueKept bool) []write {
	if len(rs) == 0 {
		return ws
	}
	one, many, verb, why, none := k.w.expect, k.w.expectN, "expect", "missing or different", backend.ErrChanged
	switch o {
	case opDelete:
		one, many, verb, why, none = k.w.delete, k.w.deleteN, "delete", "missing", backend.ErrNotFound
	case opInsert:
		one, many, verb, why, none = k.w.insert, k.w.insertN, "insert", "already stored", backend.ErrConflict
		if k.uniqueNonKey {
			why = "already stored (key or identity)"
		}
	case opReplace:
		one, many, verb, why, none = k.w.replace, k.w.replaceN, "replace", "missing", backend.ErrNotFound
		if k.uniqueNonKey && !uniqueKept {
			many = ""
		} else {
			rs = lastByKey(rs, k.key)
		}
	}
	if len(rs) < k.manyFrom || many == "" {
		for _, r := range rs {
			ws = append(ws, write{sql: one, args: detach(k.args(r)),
				verb: verb, noun: k.noun, n: 1, keys: []any{k.key(r)}, why: why, none: none})
		}
		return ws
	}
	rows := make([][]any, len(rs))
	var keys []any // the first few
	for i, r := range rs {
		rows[i] = detach(k.args(r))
		if i < 3 {
			keys = append(keys, k.key(r))
		}
	}
	why = "one of them is " + why
	if o == opInsert || o == opDelete {
		why += " or repeats an earlier one"
	}
	return append(ws, write{sql: many, args: k.w.t.rowArrays(rows),
		verb: verb, noun: k.noun, n: len(rs), keys: keys, why: why, none: none, many: true})
}

// lastByKey returns rs without the records whose key a later record of rs
// repeats (rs itself when no key repeats).
func lastByKey[R any, K comparable](rs []R, key func(R) K) []R {
	last := make(map[K]int, len(rs))
	for i, r := range rs {
		last[key(r)] = i
	}
	if len(last) == len(rs) {
		return rs
	}
	out := make([]R, 0, len(last))
	for i, r := range rs {
		if last[key(r)] == i {
			out = append(out, r)
		}
	}
	return out
}

func fmtKey(k any) string {
	if s, ok := k.(string); ok {
		return strconv.Quote(s)
	}
	return fmt.Sprintf("%+v", k)
}

// Apply implements backend.Tx. It sends nothing: it encodes c's writes, one
// statement per slice (see kind.queue), and queues them in the transaction
// in the order backend.Changes fixes. The next read sends them ahead of
// its own statements in the same batch, or, when fn returns nil, the commit
// sends them ahead of COMMIT (see readWrites). A queued write that fails
// then fails that read, or Update, with the error Apply would have returned
// (backend.ErrConflict, backend.ErrNotFound, backend.ErrChanged), and
// nothing commits. An Apply whose ctx is done queues none of its writes and
// dooms the transaction: every later call fails and Update does not
// commit.
func (t *txn) Apply(ctx context.Context, c backend.Changes) error {
	if t.readOnly {
		return errors.New("postgres: Apply in a read-only View")
	}
	if c.Empty() {
		return nil
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.done {
		return errors.New("postgres: transaction used after its fn returned")
	}
	if t.broken != nil {
		return fmt.Errorf("postgres: transaction is aborted by an earlier failure: %w", t.broken)
	}
	octx, stop := t.opCtx(ctx)
	defer stop()
	if err := octx.Err(); err != nil {
		err = ctxWrap(octx, fmt.Errorf("postgres: apply: %w", err))
		t.broken = err
		return err
	}
	if t.known == nil {
		t.known = identities{}
	}
	t.pending = t.b.q.kinds.queueChanges(t.pending, &c, t.known)
	return nil
}

// detach copies what an encoded write shares with the caller's record
// (byte slices, pointers into an Authority or GroupMember), so that the
// queued write sends the record as it was when Apply was called.
func detach(args []any) []any {
	for i, a := range args {
		switch v := a.(type) {
		case []byte:
			if v != nil {
				args[i] = append([]byte{}, v...)
			}
		case *string:
			if v != nil {
				c := *v
				args[i] = &c
			}
		case *int64:
			if v != nil {
				c := *v
				args[i] = &c
			}
		}
	}
	return args
}

// queueWrites adds deferred writes to a batch.
func queueWrites(b *pgx.Batch, writes []write) {
	for _, w := range writes {
		b.Queue(w.sql, w.args...)
	}
}

// readWrites reads the results of writes queued by queueWrites and returns
// the first failure as that write's error. Every write statement is guarded
// (see guardWrite, guardRows): one that matches fewer rows than it was
// given raises division_by_zero (22012), which makes the server abort the
// transaction and skip the rest of the batch (later writes, the read,
// COMMIT); the adapter reports it as backend.ErrConflict (Insert),
// backend.ErrNotFound (Replace, Delete) or backend.ErrChanged (Expect,
// whose rows must also hold every value). A unique violation (23505: a
// Replace onto another attempt's Identity) is backend.ErrConflict too. The
// errors wrap the server's, so that a serialization failure keeps its
// SQLSTATE. raw is the error as pgx returned it.
func readWrites(br pgx.BatchResults, writes []write) (mapped, raw error) {
	for _, w := range writes {
		if _, err := br.Exec(); err != nil {
			return w.failure(err), err
		}
	}
	return nil, nil
}

// failure maps the server's error for w.
func (w write) failure(err error) error {
	what := "deferred " + w.what()
	switch pgCode(err) {
	case "22012":
		return fmt.Errorf("%s: %s: %w", what, w.why, w.none)
	case "23505":
		return fmt.Errorf("%s: %w: %w", what, backend.ErrConflict, err)
	}
	return fmt.Errorf("%s: %w", what, err)
}

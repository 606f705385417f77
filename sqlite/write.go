package sqlite

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"

	"github.com/wfstore/wfstore/backend"
	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"
)

// noStmt marks an operation a record kind does not accept. backend.Changes
// has no slice for it, so no write ever uses it.
const noStmt stmtID = -1

// kind is how one record kind R, with primary key K, is stored. The write
// path is generic over it: which operations a kind accepts is settled at
// compile time by the shape of backend.Changes, so no write can name an
// operation or a record type this adapter does not handle.
type kind[R any, K comparable] struct {
	// field names the kind's slices in backend.Changes ("Runs", ...).
	field string
	tb    *table
	// ins, rep and del are the kind's write statements (noStmt when the
	// kind has no such operation). rep also names the kind's row images.
	ins, rep, del stmtID
	key           func(*R) K
	// args appends the column values, in table column order, as bound,
	// to out, reusing like's boxes (see argList): they share no memory
	// with the record (byte slices are bound as strings or freshly
	// encoded), and no caller changes them.
	args func(out []any, r *R, like []any) []any
	// keyArgs appends the key column values to out, reusing like's boxes
	// (the values of another key of the kind; see argList).
	keyArgs func(out []any, k K, like []any) []any
	// clone returns a copy sharing no memory with its argument; nil for
	// kinds without row images (those that cannot be replaced).
	clone func(R) R
	// uniqueMask: the bits (in changedMask's mask) of the non-key
	// columns with a unique index. SQLite checks a unique index row by
	// row, so a many-row UPDATE that moves such values between its rows
	// would conflict or not depending on the order it reaches them:
	// records changing them are written one by one (see replaceMany).
	uniqueMask uint64
}

var (
	runK = &kind[backend.Run, string]{
		field: "Runs", tb: &runsT, ins: sRunIns, rep: sRunRep, del: noStmt,
		key:     func(r *backend.Run) string { return r.ID },
		args:    runArgs,
		keyArgs: stringKeyArgs,
		clone:   cloneRun,
	}
	linkK = &kind[backend.RunLink, string]{
		field: "Links", tb: &linksT, ins: sLinkIns, rep: noStmt, del: noStmt,
		key:     func(l *backend.RunLink) string { return l.ChildRunID },
		args:    linkArgs,
		keyArgs: stringKeyArgs,
	}
	activationK = &kind[backend.Activation, backend.ActivationKey]{
		field: "Activations", tb: &activationsT, ins: sActIns, rep: sActRep, del: noStmt,
		key:     func(a *backend.Activation) backend.ActivationKey { return a.Key },
		args:    activationArgs,
		keyArgs: activationKeyArgs,
		clone:   cloneActivation,
	}
	groupK = &kind[backend.FanOutGroup, backend.ActivationKey]{
		field: "Groups", tb: &groupsT, ins: sGroupIns, rep: sGroupRep, del: noStmt,
		key:     func(g *backend.FanOutGroup) backend.ActivationKey { return g.Controller },
		args:    groupArgs,
		keyArgs: activationKeyArgs,
		clone:   identity[backend.FanOutGroup],
	}
	attemptK = &kind[backend.Attempt, backend.AttemptKey]{
		field: "Attempts", tb: &attemptsT, ins: sAttIns, rep: sAttRep, del: sAttDel,
		key:  func(a *backend.Attempt) backend.AttemptKey { return a.Key },
		args: attemptArgs,
		keyArgs: func(out []any, k backend.AttemptKey, like []any) []any {
			l := newArgList(out, like)
			l.str(k.RunID)
			l.str(k.NodeID)
			l.str(k.ActivationID)
			l.int(int64(k.Attempt))
			return l.out
		},
		clone:      cloneAttempt,
		uniqueMask: 1 << 0, // identity, the first non-key column
	}
	leaseK = &kind[backend.Lease, backend.LeaseKey]{
		field: "Leases", tb: &leasesT, ins: sLeaseIns, rep: sLeaseRep, del: sLeaseDel,
		key:  func(l *backend.Lease) backend.LeaseKey { return l.Key },
		args: leaseArgs,
		keyArgs: func(out []any, k backend.LeaseKey, like []any) []any {
			l := newArgList(out, like)
			l.str(k.RunID)
			l.str(k.NodeID)
			l.str(k.ActivationID)
			l.int(int64(k.Attempt))
			l.str(k.Resource)
			l.str(string(k.Mode))
			return l.out
		},
		clone: identity[backend.Lease],
	}
	scheduleK = &kind[backend.RetrySchedule, backend.ActivationKey]{
		field: "Schedules", tb: &schedulesT, ins: sSchedIns, rep: sSchedRep, del: sSchedDel,
		key:     func(s *backend.RetrySchedule) backend.ActivationKey { return s.Key },
		args:    scheduleArgs,
		keyArgs: activationKeyArgs,
		clone:   identity[backend.RetrySchedule],
	}
	eventK = &kind[backend.Event, backend.EventKey]{
		field: "Events", tb: &eventsT, ins: sEventIns, rep: noStmt, del: sEventDel,
		key:  func(e *backend.Event) backend.EventKey { return e.Key() },
		args: eventArgs,
		keyArgs: func(out []any, k backend.EventKey, like []any) []any {
			l := newArgList(out, like)
			l.str(k.RunID)
			l.int(k.Seq)
			return l.out
		},
	}
)

// argsOf returns r's column values (kd.args) in a slice of their own.
func (kd *kind[R, K]) argsOf(r *R, like []any) []any {
	return kd.args(make([]any, 0, len(kd.tb.cols)), r, like)
}

// keyArgsOf returns k's key column values (kd.keyArgs) in a slice of
// their own.
func (kd *kind[R, K]) keyArgsOf(k K) []any {
	return kd.keyArgs(make([]any, 0, kd.tb.nkey), k, nil)
}

func stringKeyArgs(out []any, id string, like []any) []any {
	l := newArgList(out, like)
	l.str(id)
	return l.out
}

func activationKeyArgs(out []any, k backend.ActivationKey, like []any) []any {
	l := newArgList(out, like)
	l.str(k.RunID)
	l.str(k.NodeID)
	l.str(k.ActivationID)
	return l.out
}

func identity[R any](r R) R { return r }

func cloneRun(r backend.Run) backend.Run {
	if r.Authority != nil {
		a := *r.Authority
		r.Authority = &a
	}
	r.Metadata = bytes.Clone(r.Metadata)
	return r
}

// cloneActivation copies an activation; nil and empty slices stay as they
// are (Expect tells them apart).
func cloneActivation(a backend.Activation) backend.Activation {
	a.Input, a.Output, a.RetryPolicy = bytes.Clone(a.Input), bytes.Clone(a.Output), bytes.Clone(a.RetryPolicy)
	a.Claims, a.Predecessors = slices.Clone(a.Claims), slices.Clone(a.Predecessors)
	a.WaitFor, a.Joins = slices.Clone(a.WaitFor), slices.Clone(a.Joins)
	if a.Group != nil {
		g := *a.Group
		a.Group = &g
	}
	return a
}

func cloneAttempt(a backend.Attempt) backend.Attempt {
	a.Intent, a.Receipt, a.Detail = bytes.Clone(a.Intent), bytes.Clone(a.Receipt), bytes.Clone(a.Detail)
	return a
}

// isUniqueViolation reports a duplicate primary key or unique field.
func isUniqueViolation(err error) bool {
	var se *sqlite.Error
	if !errors.As(err, &se) {
		return false
	}
	c := se.Code()
	return c == sqlite3.SQLITE_CONSTRAINT_PRIMARYKEY || c == sqlite3.SQLITE_CONSTRAINT_UNIQUE
}

// Apply implements backend.Tx in the order backend.Changes fixes: expects,
// deletes (dependent records first), inserts, replaces, each slice in
// slice order through one prepared statement. The first failure is
// returned (wrapping ErrChanged, ErrConflict, ErrNotFound or the driver
// error) and names its slice and index; the writes before it stay applied
// until fn's error rolls the transaction back.
func (t *writeTx) Apply(ctx context.Context, c backend.Changes) error {
	if err := t.ready(ctx); err != nil {
		return err
	}
	a := &applier{ctx: ctx, t: t}
	e, d, in, r := &c.Expect, &c.Delete, &c.Insert, &c.Replace

	expectAll(a, runK, e.Runs)
	expectAll(a, activationK, e.Activations)
	expectAll(a, attemptK, e.Attempts)

	deleteAll(a, eventK, d.Events)
	deleteAll(a, scheduleK, d.Schedules)
	deleteAll(a, leaseK, d.Leases)
	deleteAll(a, attemptK, d.Attempts)

	insertAll(a, runK, in.Runs)
	insertAll(a, linkK, in.Links)
	insertAll(a, activationK, in.Activations)
	insertAll(a, groupK, in.Groups)
	insertAll(a, attemptK, in.Attempts)
	insertAll(a, leaseK, in.Leases)
	insertAll(a, scheduleK, in.Schedules)
	insertAll(a, eventK, in.Events)

	replaceAll(a, runK, r.Runs)
	replaceAll(a, activationK, r.Activations)
	replaceAll(a, groupK, r.Groups)
	replaceAll(a, attemptK, r.Attempts)
	replaceAll(a, leaseK, r.Leases)
	replaceAll(a, scheduleK, r.Schedules)
	return a.err
}

// applier carries one Apply through its steps. Once a step has failed,
// err holds its error and every later step does nothing.
type applier struct {
	ctx context.Context
	t   *writeTx
	err error
}

// failed records the error of element i of the slice op.field.
func (a *applier) failed(op, field string, i int, err error) {
	a.err = fmt.Errorf("sqlite: apply %s.%s[%d]: %w", op, field, i, err)
}

// stmt returns the statement for a slice, or records why there is none.
func (a *applier) stmt(id stmtID, op, field string) *sql.Stmt {
	s, err := a.t.stmt(a.ctx, id)
	if err != nil {
		a.failed(op, field, 0, err)
	}
	return s
}

func expectAll[R backend.Expectable, K comparable](a *applier, kd *kind[R, K], recs []R) {
	if a.err != nil {
		return
	}
	for i := range recs {
		if err := expectOne(a.ctx, a.t, kd, &recs[i]); err != nil {
			a.failed("Expect", kd.field, i, err)
			return
		}
	}
}

// expectOne compares *want with the row's image when the transaction has
// one, and reads the row otherwise. want is only read: a pointer to the
// caller's record, so that comparing a hundred of them copies none to the
// heap.
func expectOne[R backend.Expectable, K comparable](ctx context.Context, t *writeTx, kd *kind[R, K], want *R) error {
	if im, ok := imageOf(&t.readTx, kd, kd.key(want)); ok {
		if err := backend.CompareExpected(im.rec, *want); err != nil {
			return err
		}
		touch(&t.readTx, im) // a passed Expect reads the row, as one without an image does
		return nil
	}
	return backend.CheckExpected(ctx, t, *want)
}

func deleteAll[R any, K comparable](a *applier, kd *kind[R, K], keys []K) {
	if a.err != nil || len(keys) == 0 {
		return
	}
	s := a.stmt(kd.del, "Delete", kd.field)
	if a.err != nil {
		return
	}
	for i, k := range keys {
		if err := a.t.exec(a.ctx, s, kd.keyArgsOf(k), backend.ErrNotFound); err != nil {
			a.failed("Delete", kd.field, i, err)
			return
		}
		forget(&a.t.readTx, kd, k)
	}
}

func insertAll[R any, K comparable](a *applier, kd *kind[R, K], recs []R) {
	if a.err != nil || len(recs) == 0 {
		return
	}
	s := a.stmt(kd.ins, "Insert", kd.field)
	if a.err != nil {
		return
	}
	if len(recs) >= manyFrom {
		insertMany(a, kd, s, recs)
		return
	}
	var like []any // the record before, whose values the next mostly shares
	for i := range recs {
		r := &recs[i]
		args := kd.argsOf(r, like)
		if err := a.t.exec(a.ctx, s, args, backend.ErrConflict); err != nil {
			a.failed("Insert", kd.field, i, err)
			return
		}
		rememberArgs(&a.t.readTx, kd, kd.key(r), *r, args)
		like = args
	}
}

func replaceAll[R any, K comparable](a *applier, kd *kind[R, K], recs []R) {
	if a.err != nil || len(recs) == 0 {
		return
	}
	s := a.stmt(kd.rep, "Replace", kd.field)
	if a.err != nil {
		return
	}
	if len(recs) >= manyFrom {
		if ok, i, err := replaceMany(a.ctx, a.t, kd, s, recs); ok {
			if err != nil {
				a.failed("Replace", kd.field, i, err)
			}
			return
		}
	}
	for i := range recs {
		if err := replaceOne(a.ctx, a.t, kd, s, &recs[i]); err != nil {
			a.failed("Replace", kd.field, i, err)
			return
		}
	}
}

// replaceOne updates only the columns that differ from the row's image, or
// every column (through s) when there is none; it writes nothing when no
// column differs (the image proves that the row exists).
func replaceOne[R any, K comparable](ctx context.Context, t *writeTx, kd *kind[R, K], s *sql.Stmt, r *R) error {
	key := kd.key(r)
	prev, ok := imageArgs(&t.readTx, kd, key, nil)
	args := kd.argsOf(r, prev)
	full := args
	if ok {
		mask := changedMask(kd.tb, prev, args)
		if mask == 0 {
			rememberArgs(&t.readTx, kd, key, *r, full)
			return nil
		}
		ps, err := t.w.partialStmt(ctx, kd.rep, kd.tb, mask)
		if err != nil {
			return t.fail(fmt.Errorf("prepare partial update: %w", err))
		}
		if ps != nil {
			s, args = ps, partialArgs(kd.tb, mask, args)
		}
	}
	if err := t.exec(ctx, s, args, backend.ErrNotFound); err != nil {
		return err
	}
	rememberArgs(&t.readTx, kd, key, *r, full)
	return nil
}

// exec runs one write; none is the error when it affects no row
// (ErrConflict for an insert, which does nothing on a conflict, and
// ErrNotFound for a replace or delete).
func (t *writeTx) exec(ctx context.Context, s *sql.Stmt, args []any, none error) error {
	res, err := s.ExecContext(ctx, args...)
	if err != nil {
		if isUniqueViolation(err) {
			return fmt.Errorf("%w: %w", backend.ErrConflict, err)
		}
		return t.fail(err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return t.fail(err)
	}
	if n == 0 {
		return none
	}
	return nil
}

var _ backend.Swapper = (*writeTx)(nil)

// SwapAttempts implements backend.Swapper. The transaction holds the write
// lock, so each swap is a compare and a write in it: Old is compared with
// the row's image when the transaction has one (as Expect compares) and
// read otherwise, and an equal row is updated to New in the columns that
// differ (as Replace writes it). The keys are distinct (CheckSwaps), so
// no swap's compare reads a row another swap writes: a call of at least
// manyFrom swaps compares them all first and then writes the ones it won
// together, as a long Replace slice is written (replaceMany).
func (t *writeTx) SwapAttempts(ctx context.Context, swaps []backend.AttemptSwap) ([]bool, error) {
	if err := t.ready(ctx); err != nil {
		return nil, err
	}
	if err := backend.CheckSwaps(swaps); err != nil {
		return nil, fmt.Errorf("sqlite: %w", err)
	}
	out := make([]bool, len(swaps))
	many := len(swaps) >= manyFrom
	var (
		s     *sql.Stmt
		won   []backend.Attempt // many: the New of each swap won, in order
		wonAt []int             // and its index in swaps
	)
	for i := range swaps {
		err := expectOne(ctx, t, attemptK, &swaps[i].Old)
		if errors.Is(err, backend.ErrChanged) {
			continue
		}
		if err == nil && s == nil {
			s, err = t.stmt(ctx, attemptK.rep)
		}
		if err == nil && !many {
			err = replaceOne(ctx, t, attemptK, s, &swaps[i].New)
		}
		if err != nil {
			return nil, fmt.Errorf("sqlite: swap attempt[%d]: %w", i, err)
		}
		out[i] = true
		if many {
			won, wonAt = append(won, swaps[i].New), append(wonAt, i)
		}
	}
	if len(won) > 0 {
		ok, j, err := replaceMany(ctx, t, attemptK, s, won)
		if !ok { // never: CheckSwaps found the keys distinct
			return nil, fmt.Errorf("sqlite: swap attempts: keys not distinct: %w", backend.ErrInvalidSwap)
		}
		if err != nil {
			return nil, fmt.Errorf("sqlite: swap attempt[%d]: %w", wonAt[j], err)
		}
	}
	return out, nil
}

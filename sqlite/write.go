package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/wfstore/wfstore/backend"
	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"
)

// isUniqueViolation reports a duplicate primary key or unique field.
func isUniqueViolation(err error) bool {
	var se *sqlite.Error
	if !errors.As(err, &se) {
		return false
	}
	c := se.Code()
	return c == sqlite3.SQLITE_CONSTRAINT_PRIMARYKEY || c == sqlite3.SQLITE_CONSTRAINT_UNIQUE
}

// Apply implements backend.Tx: writes run in order; the first failure is
// returned (ErrConflict, ErrNotFound, ErrUnsupported or a wrapped driver
// error) and the writes before it stay applied until fn's error rolls the
// transaction back.
func (t *writeTx) Apply(ctx context.Context, writes ...backend.Write) error {
	if err := t.ready(ctx); err != nil {
		return err
	}
	for i, w := range writes {
		if err := t.apply(ctx, w); err != nil {
			kind := "<nil>"
			if w.Record != nil {
				kind = w.Record.Kind()
			}
			return fmt.Errorf("sqlite: write %d (%s %s): %w", i, w.Op, kind, err)
		}
	}
	return nil
}

func (t *writeTx) apply(ctx context.Context, w backend.Write) error {
	if w.Op == backend.Expect {
		if adapterMutated("expect-ignored") {
			return nil // the mutant: an Expect never fails
		}
		if stored, ok := t.image(w.Record); ok {
			if err := backend.CompareExpected(stored, w.Record); err != nil {
				return err
			}
			t.remember(stored) // a passed Expect reads the row, as one without an image does
			return nil
		}
		return backend.CheckExpected(ctx, t, w.Record)
	}
	var ins, rep, del stmtID = -1, -1, -1
	var args []any
	var nkey int
	switch r := w.Record.(type) {
	case backend.Run:
		ins, rep, args, nkey = sRunIns, sRunRep, runArgs(&r), runsT.nkey
	case backend.RunLink:
		ins, args, nkey = sLinkIns, linkArgs(&r), linksT.nkey
	case backend.Activation:
		ins, rep, args, nkey = sActIns, sActRep, activationArgs(&r), activationsT.nkey
	case backend.FanOutGroup:
		ins, rep, args, nkey = sGroupIns, sGroupRep, groupArgs(&r), groupsT.nkey
	case backend.Attempt:
		ins, rep, del, args, nkey = sAttIns, sAttRep, sAttDel, attemptArgs(&r), attemptsT.nkey
	case backend.Lease:
		ins, rep, del, args, nkey = sLeaseIns, sLeaseRep, sLeaseDel, leaseArgs(&r), leasesT.nkey
	case backend.RetrySchedule:
		ins, rep, del, args, nkey = sSchedIns, sSchedRep, sSchedDel, scheduleArgs(&r), schedulesT.nkey
	case backend.Event:
		ins, del, args, nkey = sEventIns, sEventDel, eventArgs(&r), eventsT.nkey
	default:
		return fmt.Errorf("record type %T: %w", w.Record, backend.ErrUnsupported)
	}
	id := stmtID(-1)
	switch w.Op {
	case backend.Insert:
		id = ins
	case backend.Replace:
		id = rep
	case backend.Delete:
		id, args = del, args[:nkey]
	}
	if id < 0 {
		return backend.ErrUnsupported
	}
	if w.Op == backend.Replace {
		return t.replace(ctx, w.Record, id, args)
	}
	s, err := t.stmt(ctx, id)
	if err != nil {
		return err
	}
	if err := t.exec(ctx, s, w.Op, args); err != nil {
		return err
	}
	if w.Op == backend.Delete {
		t.forget(w.Record)
	} else {
		t.remember(w.Record)
	}
	return nil
}

// replace updates only the columns that differ from the row's image, or
// every column when there is none; it writes nothing when no column differs
// (the image proves that the row exists).
func (t *writeTx) replace(ctx context.Context, r backend.Record, id stmtID, args []any) error {
	s, err := t.stmt(ctx, id)
	if err != nil {
		return err
	}
	if mask, ok := t.changed(r, args); ok {
		if mask == 0 {
			t.remember(r)
			return nil
		}
		_, tb, _ := rowOf(r)
		ps, err := t.w.partialStmt(ctx, id, tb, mask)
		if err != nil {
			return t.fail(fmt.Errorf("prepare partial update: %w", err))
		}
		if ps != nil {
			s, args = ps, partialArgs(tb, mask, args)
		}
	}
	if err := t.exec(ctx, s, backend.Replace, args); err != nil {
		return err
	}
	t.remember(r)
	return nil
}

// exec runs one write and maps its outcome.
func (t *writeTx) exec(ctx context.Context, s *sql.Stmt, op backend.Op, args []any) error {
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
		if op == backend.Insert {
			return backend.ErrConflict
		}
		return backend.ErrNotFound
	}
	return nil
}

package sqlite

import (
	"context"
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
		ins, rep, args, nkey = sAttIns, sAttRep, attemptArgs(&r), attemptsT.nkey
	case backend.Lease:
		ins, rep, args, nkey = sLeaseIns, sLeaseRep, leaseArgs(&r), leasesT.nkey
	case backend.RetrySchedule:
		ins, rep, del, args, nkey = sSchedIns, sSchedRep, sSchedDel, scheduleArgs(&r), schedulesT.nkey
	case backend.Event:
		ins, args, nkey = sEventIns, eventArgs(&r), eventsT.nkey
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
	s, err := t.stmt(ctx, id)
	if err != nil {
		return err
	}
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
		if w.Op == backend.Insert {
			return backend.ErrConflict
		}
		return backend.ErrNotFound
	}
	return nil
}

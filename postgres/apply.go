package postgres

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/wfstore/wfstore/backend"
)

// stmt is one write translated to SQL.
type stmt struct {
	w    backend.Write
	sql  string
	args []any
	// unique: the statement can fail with a unique violation (an Attempt
	// Replace moving to an Identity another attempt has).
	unique bool
}

// prepareWrite translates w, or fails with ErrUnsupported.
func (q *queries) prepareWrite(w backend.Write) (stmt, error) {
	s := stmt{w: w}
	var ws writeSQL
	var args []any
	var nkey int
	ok := map[backend.Op]bool{backend.Insert: true}
	switch r := w.Record.(type) {
	case backend.Run:
		ws, args, nkey = q.runs, runArgs(r), tRuns.nkey
		ok[backend.Replace] = true
	case backend.RunLink:
		ws, args, nkey = q.links, linkArgs(r), tLinks.nkey
	case backend.Activation:
		ws, args, nkey = q.activations, activationArgs(r), tActivations.nkey
		ok[backend.Replace] = true
	case backend.FanOutGroup:
		ws, args, nkey = q.groups, groupArgs(r), tGroups.nkey
		ok[backend.Replace] = true
	case backend.Attempt:
		ws, args, nkey = q.attemptsW, attemptArgs(r), tAttempts.nkey
		ok[backend.Replace] = true
		s.unique = w.Op == backend.Replace
	case backend.Lease:
		ws, args, nkey = q.leases, leaseArgs(r), tLeases.nkey
		ok[backend.Replace] = true
	case backend.RetrySchedule:
		ws, args, nkey = q.schedules, scheduleArgs(r), tSchedules.nkey
		ok[backend.Replace], ok[backend.Delete] = true, true
	case backend.Event:
		ws, args, nkey = q.eventsW, eventArgs(r), tEvents.nkey
	case nil:
		return s, fmt.Errorf("postgres: apply %s of a nil record: %w", w.Op, backend.ErrUnsupported)
	default:
		return s, fmt.Errorf("postgres: apply %s of %T (records are backend values, not pointers): %w", w.Op, w.Record, backend.ErrUnsupported)
	}
	if !ok[w.Op] {
		return s, fmt.Errorf("postgres: %s of a %s record: %w", w.Op, w.Record.Kind(), backend.ErrUnsupported)
	}
	switch w.Op {
	case backend.Insert:
		s.sql, s.args = ws.insert, args
	case backend.Replace:
		s.sql, s.args = ws.replace, args
	case backend.Delete:
		s.sql, s.args = ws.delete, args[:nkey]
	}
	return s, nil
}

// missing is the error of a write that matched no row as it should have.
func (s stmt) missing() error {
	if s.w.Op == backend.Insert {
		return fmt.Errorf("postgres: insert %s %s: %w", s.w.Record.Kind(), keyOf(s.w.Record), backend.ErrConflict)
	}
	return fmt.Errorf("postgres: %s %s %s: %w", s.w.Op, s.w.Record.Kind(), keyOf(s.w.Record), backend.ErrNotFound)
}

func keyOf(r backend.Record) string {
	switch r := r.(type) {
	case backend.Run:
		return fmt.Sprintf("%q", r.ID)
	case backend.RunLink:
		return fmt.Sprintf("%q", r.ChildRunID)
	case backend.Activation:
		return fmt.Sprintf("%+v", r.Key)
	case backend.FanOutGroup:
		return fmt.Sprintf("%+v", r.Controller)
	case backend.Attempt:
		return fmt.Sprintf("%+v (identity %q)", r.Key, r.Identity)
	case backend.Lease:
		return fmt.Sprintf("%+v", r.Key)
	case backend.RetrySchedule:
		return fmt.Sprintf("%+v", r.Key)
	case backend.Event:
		return fmt.Sprintf("%q seq %d", r.RunID, r.Seq)
	}
	return "?"
}

const savepoint = "wfstore_apply"

// Apply implements backend.Tx. All writes go to the server in one batch
// (one round trip) and every result is checked. The writes act as if
// applied one by one: when write i fails, writes before it stay applied and
// writes after it do not. With more than one write the batch opens a
// savepoint first, so a failure in the middle is undone to exactly that
// point (one more round trip, on failure only).
func (t *txn) Apply(ctx context.Context, writes ...backend.Write) error {
	if t.readOnly {
		return errors.New("postgres: Apply in a read-only View")
	}
	if len(writes) == 0 {
		return nil
	}
	stmts := make([]stmt, 0, len(writes))
	var unsupported error
	for _, w := range writes {
		s, err := t.b.q.prepareWrite(w)
		if err != nil {
			unsupported = err
			break
		}
		stmts = append(stmts, s)
	}
	if len(stmts) > 0 {
		if err := t.applyStmts(ctx, stmts); err != nil {
			return err
		}
	}
	return unsupported
}

func (t *txn) applyStmts(ctx context.Context, stmts []stmt) error {
	useSP := len(stmts) > 1 || stmts[0].unique
	failAt := -1
	var sqlErr error // the server's error for stmts[failAt], if it raised one
	err := t.exchange(ctx,
		func(b *pgx.Batch) {
			if useSP {
				b.Queue("SAVEPOINT " + savepoint)
			}
			for _, s := range stmts {
				b.Queue(s.sql, s.args...)
			}
		},
		func(br pgx.BatchResults) error {
			if useSP {
				if _, err := br.Exec(); err != nil {
					return err
				}
			}
			for i := range stmts {
				tag, err := br.Exec()
				if err != nil {
					if failAt < 0 {
						failAt, sqlErr = i, err
					}
					return err
				}
				if tag.RowsAffected() != 1 && failAt < 0 {
					failAt = i
				}
			}
			return nil
		})
	if err != nil && (!useSP || failAt < 0 || t.retryErr != nil || !recoverable(sqlErr)) {
		// The transaction is aborted (exchange marked it), or the failure
		// was before any write.
		if failAt >= 0 && pgCode(sqlErr) == "23505" {
			return fmt.Errorf("postgres: %s %s %s: %w: %w", stmts[failAt].w.Op, stmts[failAt].w.Record.Kind(), keyOf(stmts[failAt].w.Record), backend.ErrConflict, err)
		}
		return fmt.Errorf("postgres: apply: %w", err)
	}
	if failAt < 0 {
		return nil
	}
	var result error
	if sqlErr != nil {
		if pgCode(sqlErr) == "23505" {
			result = fmt.Errorf("postgres: %s %s %s: %w: %w", stmts[failAt].w.Op, stmts[failAt].w.Record.Kind(), keyOf(stmts[failAt].w.Record), backend.ErrConflict, sqlErr)
		} else {
			result = fmt.Errorf("postgres: %s %s %s: %w", stmts[failAt].w.Op, stmts[failAt].w.Record.Kind(), keyOf(stmts[failAt].w.Record), sqlErr)
		}
	} else {
		result = stmts[failAt].missing()
	}
	if !useSP || (sqlErr == nil && failAt == len(stmts)-1) {
		// Nothing after the failed write ran.
		return result
	}
	// Undo the batch to its savepoint and redo the writes before failAt.
	if err := t.rewind(ctx, stmts[:failAt]); err != nil {
		return fmt.Errorf("postgres: apply: undoing writes after a failed one: %w (the failed write: %w)", err, result)
	}
	return result
}

// recoverable: a statement error that leaves the transaction usable after
// ROLLBACK TO SAVEPOINT (not a serialization failure, deadlock or lost
// connection).
func recoverable(err error) bool {
	var pe *pgconn.PgError
	if !errors.As(err, &pe) {
		return false
	}
	switch pe.Code {
	case "40001", "40P01":
		return false
	}
	return pe.Severity == "ERROR"
}

// rewind rolls back to the Apply savepoint and re-applies prefix, which
// succeeded a moment ago in the same transaction and must again. The
// ROLLBACK TO SAVEPOINT goes alone over the simple protocol: an aborted
// transaction refuses to even parse (prepare) anything else.
func (t *txn) rewind(ctx context.Context, prefix []stmt) error {
	t.mu.Lock()
	if t.done || t.conn == nil {
		t.mu.Unlock()
		return errors.New("postgres: transaction ended")
	}
	octx, stop := t.opCtx(ctx)
	_, err := t.conn.Exec(octx, "ROLLBACK TO SAVEPOINT "+savepoint)
	t.rts++
	if err != nil {
		err = t.fail(octx, err)
		stop()
		t.mu.Unlock()
		return err
	}
	stop()
	t.broken = nil // the transaction is usable again
	t.mu.Unlock()
	if len(prefix) == 0 {
		return nil
	}
	bad := -1
	err = t.exchange(ctx,
		func(b *pgx.Batch) {
			for _, s := range prefix {
				b.Queue(s.sql, s.args...)
			}
		},
		func(br pgx.BatchResults) error {
			for i := range prefix {
				tag, err := br.Exec()
				if err != nil {
					return err
				}
				if tag.RowsAffected() != 1 && bad < 0 {
					bad = i
				}
			}
			return nil
		})
	if err != nil {
		return err
	}
	if bad >= 0 {
		t.mu.Lock()
		t.broken = fmt.Errorf("postgres: apply: write %d gave a different result when re-applied", bad)
		t.mu.Unlock()
		return t.broken
	}
	return nil
}

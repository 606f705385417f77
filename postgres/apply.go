package postgres

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/wfstore/wfstore/backend"
)

// stmt is one write translated to SQL.
type stmt struct {
	w    backend.Write
	sql  string
	args []any
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
		ok[backend.Replace], ok[backend.Expect] = true, true
	case backend.RunLink:
		ws, args, nkey = q.links, linkArgs(r), tLinks.nkey
	case backend.Activation:
		ws, args, nkey = q.activations, activationArgs(r), tActivations.nkey
		ok[backend.Replace], ok[backend.Expect] = true, true
	case backend.FanOutGroup:
		ws, args, nkey = q.groups, groupArgs(r), tGroups.nkey
		ok[backend.Replace] = true
	case backend.Attempt:
		ws, args, nkey = q.attemptsW, attemptArgs(r), tAttempts.nkey
		ok[backend.Replace], ok[backend.Delete], ok[backend.Expect] = true, true, true
	case backend.Lease:
		ws, args, nkey = q.leases, leaseArgs(r), tLeases.nkey
		ok[backend.Replace], ok[backend.Delete] = true, true
	case backend.RetrySchedule:
		ws, args, nkey = q.schedules, scheduleArgs(r), tSchedules.nkey
		ok[backend.Replace], ok[backend.Delete] = true, true
	case backend.Event:
		ws, args, nkey = q.eventsW, eventArgs(r), tEvents.nkey
		ok[backend.Delete] = true
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
	case backend.Expect:
		s.sql, s.args = ws.expect, args
	}
	return s, nil
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

// Apply implements backend.Tx. It sends nothing: it checks and encodes the
// writes and queues them in the transaction. The next read sends them ahead
// of its own statements in the same batch, or, when fn returns nil, the
// commit sends them ahead of COMMIT (see deferred). A queued write that
// fails then fails that read, or Update, with the error Apply would have
// returned (backend.ErrConflict, backend.ErrNotFound), and nothing commits.
// A write Apply refuses at once (backend.ErrUnsupported), or an Apply whose
// ctx is done, queues none of its writes and dooms the transaction: every
// later call fails and Update does not commit.
func (t *txn) Apply(ctx context.Context, writes ...backend.Write) error {
	if t.readOnly {
		return errors.New("postgres: Apply in a read-only View")
	}
	if len(writes) == 0 {
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
	err := octx.Err()
	if err != nil {
		err = ctxWrap(octx, fmt.Errorf("postgres: apply: %w", err))
	}
	stop()
	stmts := make([]stmt, 0, len(writes))
	for _, w := range writes {
		if err != nil {
			break
		}
		var s stmt
		if s, err = t.b.q.prepareWrite(w); err == nil {
			s.args = detach(s.args)
			stmts = append(stmts, s)
		}
	}
	if err != nil {
		t.broken = err
		return err
	}
	t.pending = append(t.pending, stmts...)
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
func queueWrites(b *pgx.Batch, writes []stmt) {
	for _, s := range writes {
		b.Queue(s.sql, s.args...)
	}
}

// readWrites reads the results of writes queued by queueWrites and returns
// the first failure as that write's error. Every write statement is guarded
// (see guardWrite): one that matches no row raises division_by_zero
// (22012), which makes the server abort the transaction and skip the rest
// of the batch (later writes, the read, COMMIT); the adapter reports it as
// backend.ErrConflict (Insert), backend.ErrNotFound (Replace, Delete) or
// backend.ErrChanged (Expect, whose row must also hold every value). A
// unique violation (23505: a Replace onto another attempt's Identity) is
// backend.ErrConflict too. The errors wrap the server's, so that a
// serialization failure keeps its SQLSTATE. raw is the error as pgx
// returned it.
func readWrites(br pgx.BatchResults, writes []stmt) (mapped, raw error) {
	for _, s := range writes {
		if _, err := br.Exec(); err != nil {
			return s.failure(err), err
		}
	}
	return nil, nil
}

// failure maps the server's error for s.
func (s stmt) failure(err error) error {
	what := fmt.Sprintf("deferred %s %s %s", s.w.Op, s.w.Record.Kind(), keyOf(s.w.Record))
	switch pgCode(err) {
	case "22012":
		switch s.w.Op {
		case backend.Insert:
			return fmt.Errorf("%s: %w", what, backend.ErrConflict)
		case backend.Expect:
			return fmt.Errorf("%s: missing or different: %w", what, backend.ErrChanged)
		}
		return fmt.Errorf("%s: %w", what, backend.ErrNotFound)
	case "23505":
		return fmt.Errorf("%s: %w: %w", what, backend.ErrConflict, err)
	}
	return fmt.Errorf("%s: %w", what, err)
}

package bolt

import (
	"fmt"

	"github.com/wfstore/wfstore/backend"
	"github.com/wfstore/wfstore/internal/groupcommit"
)

// Group commit: concurrent Updates share one bbolt write transaction and
// one fsync (the model of bbolt's db.Batch, written here rather than used:
// db.Batch waits MaxBatchDelay on a timer to collect work, cannot be left
// by a ctx while a call waits, always commits, even when nothing was
// written, and sets its batch size on the caller's *bbolt.DB).
//
// The first Update to get the writer leads: it takes what is queued (at
// most maxGroup calls, its own among them) and runs their fns one after
// another in one transaction, each with its own Tx, so each sees the
// writes of those before it. bbolt cannot undo part of a transaction, so:
//
//   - a fn that fails (error or panic) without having written anything
//     leaves the transaction as the fns before it left it; its outcome is
//     kept and the others go on;
//   - a fn that fails after writing (or whose write failed part-way) forces
//     a rollback. If no fn before it succeeded, it ran on the committed
//     state exactly as it would alone, so its outcome stands; otherwise the
//     fns before it and after it run again without it, in a new
//     transaction, and it runs afterwards alone, in a transaction of its
//     own, whose outcome is its caller's.
//
// So every outcome a caller gets comes from the run whose transaction is
// the one that committed (or, for a failure, whose state the committed
// transaction starts from), a failing fn's writes never commit, and each
// succeeding fn's writes commit once. A group whose fns wrote nothing is
// rolled back, not committed, as a single Update is.

// maxGroup is the most Updates that share one commit.
const maxGroup = 64

type call = groupcommit.Call[func(backend.Tx) error]

// lead runs one batch holding the writer.
func (b *Backend) lead(batch []*call) {
	if b.db.NoSync && !b.cfg.noSyncHandle {
		for _, c := range batch {
			c.Finish(fmt.Errorf("bolt: update: %w", ErrNoSync))
		}
		return
	}
	var solo []*call
	for pending := batch; len(pending) > 0; {
		if len(pending) == 1 {
			pending[0].FinishWith(b.runAlone(pending[0]))
			break
		}
		var again *call
		pending, again = b.runGroup(pending)
		if again != nil {
			solo = append(solo, again)
		}
	}
	for _, c := range solo {
		c.FinishWith(b.runAlone(c))
	}
}

// runAlone runs one call in a transaction of its own, as Update without
// group commit does.
func (b *Backend) runAlone(c *call) groupcommit.Outcome {
	btx, err := b.db.Begin(true)
	if err != nil {
		return groupcommit.Outcome{Err: beginError("update", err)}
	}
	t := &tx{readTx: readTx{b: b, btx: btx}}
	ended := false
	defer func() {
		t.done = true
		if !ended { // runtime.Goexit in fn
			_ = btx.Rollback()
		}
	}()
	o := c.Invoke(func() error { return c.Fn(t) })
	t.done = true
	ended = true
	switch {
	case o.Failed():
		_ = btx.Rollback()
		return o
	case t.broken != nil:
		_ = btx.Rollback()
		return groupcommit.Outcome{Err: fmt.Errorf("bolt: update rolled back because a write failed part-way: %w", t.broken)}
	case !t.wrote:
		return groupcommit.Outcome{Err: btx.Rollback()}
	}
	if err := btx.Commit(); err != nil {
		return groupcommit.Outcome{Err: fmt.Errorf("bolt: commit: %w", err)}
	}
	b.commits.Add(1)
	return groupcommit.Outcome{}
}

// runGroup runs calls (two or more) in one transaction and finishes them,
// unless one fails after writing: then it finishes what may be finished
// and returns the calls to run again as a group (rest) and the failed one
// to run alone (again).
func (b *Backend) runGroup(calls []*call) (rest []*call, again *call) {
	btx, err := b.db.Begin(true)
	if err != nil {
		for _, c := range calls {
			c.Finish(beginError("update", err))
		}
		return nil, nil
	}
	ended := false
	defer func() {
		if !ended { // runtime.Goexit in a fn
			_ = btx.Rollback()
		}
	}()
	type ran struct {
		c *call
		o groupcommit.Outcome
	}
	rs := make([]ran, 0, len(calls))
	wrote, succeeded := false, false
	for i, c := range calls {
		t := &tx{readTx: readTx{b: b, btx: btx}}
		o := c.Invoke(func() error { return c.Fn(t) })
		t.done = true
		if !o.Failed() && t.broken != nil {
			o.Err = fmt.Errorf("bolt: update rolled back because a write failed part-way: %w", t.broken)
		}
		if !o.Failed() || (!t.wrote && t.broken == nil) {
			rs = append(rs, ran{c, o})
			wrote = wrote || (!o.Failed() && t.wrote)
			succeeded = succeeded || !o.Failed()
			continue
		}
		// c failed after writing: only a rollback removes its writes.
		ended = true
		_ = btx.Rollback()
		if !succeeded { // everything before c failed without writing
			for _, r := range rs {
				r.c.FinishWith(r.o)
			}
			c.FinishWith(o)
			return calls[i+1:], nil
		}
		for _, r := range rs {
			rest = append(rest, r.c)
		}
		return append(rest, calls[i+1:]...), c
	}
	ended = true
	b.grouped.Add(int64(len(rs)))
	var cerr error
	if wrote {
		if err := btx.Commit(); err != nil {
			cerr = fmt.Errorf("bolt: commit: %w", err)
		} else {
			b.commits.Add(1)
		}
	} else {
		_ = btx.Rollback()
	}
	for _, r := range rs {
		if !r.o.Failed() {
			r.o.Err = cerr
		}
		r.c.FinishWith(r.o)
	}
	return nil, nil
}

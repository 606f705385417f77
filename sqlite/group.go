package sqlite

import (
	"context"
	"fmt"

	"github.com/wfstore/wfstore/backend"
	"github.com/wfstore/wfstore/internal/groupcommit"
)

// Group commit (on by default; WithoutGroupCommit): concurrent Updates of one Backend share
// one physical commit on the writer connection.
//
// The first Update to get the writer lock leads: it takes what is queued
// (at most maxGroup calls, its own among them; nobody sleeps to collect
// work) and, when there are two or more, runs them in one BEGIN IMMEDIATE
// transaction, each fn inside SAVEPOINT wf_group with a Tx of its own, so
// each sees the writes of the fns before it. A fn that returns an error or
// panics is undone alone (ROLLBACK TO wf_group) and gets its own outcome;
// the others RELEASE theirs and all commit with one COMMIT, after which
// each caller gets nil (or the commit's error).
//
// A storage error inside a fn (Tx poisoned: SQLite may have rolled the
// whole transaction back, for example an interrupt from a cancelled ctx),
// a failing SAVEPOINT statement, or a busy BEGIN or COMMIT (another process
// holds the lock) abandons the group: everything is rolled back and no
// outcome of it is kept; the other fns run again as a group and the
// offending ones alone, through the single-Update path with their own ctx
// and busy handling.
//
// Row images (image.go) pass from one fn to the next while fns succeed: a
// RELEASE keeps exactly the rows the fn's image map says. A fn that is
// rolled back may have changed images of rows it then undid, so the next
// fn starts with none, and only the images of the fns after the last
// rollback are carried past the commit: the rows the commit wrote.

// maxGroup is the most Updates that share one commit.
const maxGroup = 64

type call = groupcommit.Call[func(backend.Tx) error]

// lead runs one batch holding the writer lock.
func (b *Backend) lead(batch []*call) {
	var alone []*call
	for pending := batch; len(pending) > 0; {
		if len(pending) == 1 {
			alone = append(alone, pending[0])
			break
		}
		var again []*call
		pending, again = b.runGroup(pending)
		alone = append(alone, again...)
	}
	for _, c := range alone {
		c.FinishWith(c.Invoke(func() error { return b.updateLocked(c.Ctx, c.Fn) }))
	}
}

// exec runs a statement of the group's own on the writer connection.
func (w *writer) exec(q string) error {
	_, err := w.conn.ExecContext(context.Background(), q)
	return err
}

// runGroup runs calls (two or more) in one transaction and finishes them,
// or abandons the group and returns the calls to run again as a group
// (rest) and alone (alone).
func (b *Backend) runGroup(calls []*call) (rest, alone []*call) {
	w := b.w
	if w.broken {
		return nil, calls // the single path reconnects, with its caller's ctx
	}
	if err := w.exec("BEGIN IMMEDIATE"); err != nil {
		w.rollback()
		return nil, calls
	}
	img, version, carry := w.takeImages()
	var touched []rowKey
	ended := false
	defer func() {
		if !ended { // runtime.Goexit in a fn
			w.rollback()
		}
	}()
	abandon := func() {
		ended = true
		w.rollback()
		b.stats.reruns.Add(int64(len(calls) - 1))
	}
	type ran struct {
		c *call
		o groupcommit.Outcome
	}
	rs := make([]ran, 0, len(calls))
	for i, c := range calls {
		if err := w.exec("SAVEPOINT wf_group"); err != nil {
			abandon()
			return nil, calls
		}
		t := &writeTx{readTx{b: b, w: w, writable: true, img: img}}
		o := c.Invoke(func() error { return c.Fn(t) })
		t.done = true
		if t.poison != nil {
			abandon()
			for _, r := range rs {
				rest = append(rest, r.c)
			}
			return append(rest, calls[i+1:]...), []*call{c}
		}
		if o.Failed() {
			if w.exec("ROLLBACK TO wf_group") != nil || w.exec("RELEASE wf_group") != nil {
				abandon()
				return nil, calls
			}
			img, touched = nil, nil
		} else {
			if w.exec("RELEASE wf_group") != nil {
				abandon()
				return nil, calls
			}
			img, touched = t.img, append(touched, t.touched...)
		}
		rs = append(rs, ran{c, o})
	}
	err := w.exec("COMMIT")
	ended = true
	if err != nil {
		w.rollback()
		if isBusy(err) {
			b.stats.reruns.Add(int64(len(calls)))
			return nil, calls
		}
		err = fmt.Errorf("sqlite: update: commit: %w", err)
	} else {
		b.stats.sharedCommits.Add(1)
		b.stats.sharedUpdates.Add(int64(len(rs)))
		if carry && img != nil {
			w.keepImages(img, touched, version)
		}
	}
	for _, r := range rs {
		if !r.o.Failed() {
			r.o.Err = err
			if err == nil {
				b.stats.commits.Add(1)
			}
		}
		r.c.FinishWith(r.o)
	}
	return nil, nil
}

// Package groupcommit is the leader/follower queue that lets concurrent
// Updates on one single-writer store share a physical commit.
//
// An Update enqueues its call, then waits for one of three things: its call
// finished (a leader ran it), the writer lock (it becomes the leader), or its
// ctx (if no leader has taken the call yet, it leaves the queue and returns
// the ctx error; once taken, it waits for the outcome, since its writes may
// be committing). A leader takes what is queued at that moment, up to a
// cap, runs it through the adapter's Lead function, finishes every call it
// took, and releases the writer. Nobody sleeps to collect work: a batch is
// whatever queued while the previous commit was running.
//
// fns run on the leader's goroutine. A panic is recovered there and
// re-raised in the caller's goroutine with the same value. fn must not call
// runtime.Goexit (t.FailNow): if it does, the leader's goroutine ends; the
// queue then hands the calls it had not finished back to the queue, so that
// nobody waits forever, and the fn's own caller exits with runtime.Goexit.
package groupcommit

import (
	"context"
	"runtime"
	"sync"
)

// Call is one queued Update.
type Call[F any] struct {
	// Ctx is the caller's context; Fn its function.
	Ctx context.Context
	Fn  F

	done    chan struct{}
	taken   bool // under Queue.mu: a leader has it
	running bool // Invoke is inside Fn (leader's goroutine only)

	err      error
	panicked bool
	pv       any
	goexit   bool
}

// Finish records the outcome of a call that returned (err may be nil).
// Finishing a call twice is a bug of the adapter and panics.
func (c *Call[F]) Finish(err error) {
	c.err = err
	close(c.done)
}

// FinishPanic records that the call's fn panicked with v; its caller
// re-raises the panic with v.
func (c *Call[F]) FinishPanic(v any) {
	c.panicked, c.pv = true, v
	close(c.done)
}

// Outcome is what one run of a fn did.
type Outcome struct {
	Err      error
	Panicked bool
	Value    any // the panic value
}

// Failed reports whether the run returned an error or panicked.
func (o Outcome) Failed() bool { return o.Err != nil || o.Panicked }

// FinishWith records o as the call's outcome.
func (c *Call[F]) FinishWith(o Outcome) {
	if o.Panicked {
		c.FinishPanic(o.Value)
		return
	}
	c.Finish(o.Err)
}

// Invoke runs f (which calls c.Fn) and recovers a panic into the outcome.
func (c *Call[F]) Invoke(f func() error) (o Outcome) {
	c.running = true
	normal := false
	defer func() {
		if normal {
			c.running = false
			return
		}
		v := recover()
		if v == nil { // runtime.Goexit: running stays set for recoverBatch
			return
		}
		c.running = false
		o = Outcome{Panicked: true, Value: v}
	}()
	err := f()
	normal = true
	return Outcome{Err: err}
}

// Queue is the group-commit queue of one Backend.
type Queue[F any] struct {
	mu      sync.Mutex
	pending []*Call[F]
	// Lock is the adapter's writer lock: a channel of capacity 1 that the
	// holder has sent on. The queue's leader holds it while it leads.
	Lock chan struct{}
	// Max is the most calls one leader takes (at least 1).
	Max int
}

// Do queues fn and returns its outcome: the error, or it re-raises the
// panic of fn in this goroutine. lead runs a batch: it must finish every
// call it is given (Finish, FinishPanic or FinishWith) before it returns.
// closing, when it is closed, is treated like a cancelled ctx for a call
// not yet taken, with closedErr as its error; a call that leaves the queue
// because of its ctx returns ctxErr(ctx.Err()).
func (q *Queue[F]) Do(ctx context.Context, fn F, closing <-chan struct{}, closedErr error, ctxErr func(error) error, lead func(batch []*Call[F])) error {
	c := &Call[F]{Ctx: ctx, Fn: fn, done: make(chan struct{})}
	q.mu.Lock()
	if len(q.pending) == 0 {
		select {
		case q.Lock <- struct{}{}: // nobody waits and the writer is free
			c.taken = true
			q.mu.Unlock()
			q.leadBatch([]*Call[F]{c}, lead)
			return c.result()
		default:
		}
	}
	q.pending = append(q.pending, c)
	q.mu.Unlock()
	ctxDone := ctx.Done()
	for {
		select {
		case <-c.done:
			return c.result()
		case q.Lock <- struct{}{}:
			select {
			case <-c.done: // finished by the leader that just released the lock
				<-q.Lock
				return c.result()
			default:
			}
			q.leadOnce(lead)
		case <-ctxDone:
			if q.leave(c) {
				return ctxErr(ctx.Err())
			}
			ctxDone = nil // taken: wait for the outcome
		case <-closing:
			if q.leave(c) {
				return closedErr
			}
			closing = nil
		}
	}
}

// Len returns the number of calls waiting for a leader.
func (q *Queue[F]) Len() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return len(q.pending)
}

// leave removes c from the queue if no leader has taken it.
func (q *Queue[F]) leave(c *Call[F]) bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	if c.taken {
		return false
	}
	for i, p := range q.pending {
		if p == c {
			q.pending = append(q.pending[:i], q.pending[i+1:]...)
			break
		}
	}
	return true
}

// leadOnce runs one batch while holding the lock, then releases it.
func (q *Queue[F]) leadOnce(lead func(batch []*Call[F])) {
	q.mu.Lock()
	n := min(len(q.pending), max(q.Max, 1))
	batch := make([]*Call[F], n)
	copy(batch, q.pending[:n])
	q.pending = append(q.pending[:0], q.pending[n:]...)
	for _, c := range batch {
		c.taken = true
	}
	q.mu.Unlock()
	q.leadBatch(batch, lead)
}

// leadBatch runs batch, whose calls are taken, while holding the lock,
// then releases it.
func (q *Queue[F]) leadBatch(batch []*Call[F], lead func(batch []*Call[F])) {
	normal := false
	defer func() {
		if !normal {
			q.recoverBatch(batch)
		}
		<-q.Lock
	}()
	if len(batch) > 0 {
		lead(batch)
	}
	normal = true
}

// recoverBatch runs when lead did not return normally (a fn called
// runtime.Goexit, or lead itself panicked): the call inside its fn exits
// too, the others go back to the front of the queue.
func (q *Queue[F]) recoverBatch(batch []*Call[F]) {
	var back []*Call[F]
	for _, c := range batch {
		select {
		case <-c.done:
			continue
		default:
		}
		if c.running {
			c.running = false
			c.goexit = true
			close(c.done)
			continue
		}
		back = append(back, c)
	}
	q.mu.Lock()
	for _, c := range back {
		c.taken = false
	}
	q.pending = append(back, q.pending...)
	q.mu.Unlock()
}

func (c *Call[F]) result() error {
	switch {
	case c.panicked:
		panic(c.pv)
	case c.goexit:
		runtime.Goexit()
	}
	return c.err
}

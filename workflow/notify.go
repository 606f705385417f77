package workflow

import (
	"context"
	"sync"

	"github.com/wfstore/wfstore/backend"
)

// workSignal wakes in-process waiters when work arrives through a Store.
// A waiter takes the current channel before it looks for work; the next
// arrival closes it, so an arrival during the look is never missed.
// Listeners (ListenWork) are sent a value on every arrival instead, during
// notify itself, so that the value is there before the call that made the
// work available returns, as the closing is.
type workSignal struct {
	mu        sync.Mutex
	ch        chan struct{}
	listeners map[chan struct{}]struct{}
}

func (w *workSignal) wait() <-chan struct{} {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.ch == nil {
		w.ch = make(chan struct{})
	}
	return w.ch
}

func (w *workSignal) notify() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.ch != nil {
		close(w.ch)
		w.ch = nil
	}
	for l := range w.listeners {
		offer(l)
	}
}

// listen registers l for a value on every arrival until the returned
// function is called.
func (w *workSignal) listen(l chan struct{}) (stop func()) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.listeners == nil {
		w.listeners = map[chan struct{}]struct{}{}
	}
	w.listeners[l] = struct{}{}
	return func() {
		w.mu.Lock()
		defer w.mu.Unlock()
		delete(w.listeners, l)
	}
}

// offer sends a value on l (buffered) unless one is waiting already.
func offer(l chan struct{}) {
	select {
	case l <- struct{}{}:
	default:
	}
}

// signalWork tells a transaction whose backend can carry the news to
// other processes (backend.WorkSignaler) that it makes work available;
// the backend delivers it if and when the transaction commits.
func signalWork(tx backend.Tx) {
	if ws, ok := tx.(backend.WorkSignaler); ok {
		ws.SignalWork()
	}
}

// WorkArrived returns a channel that is closed the next time work may have
// become available through this Store: a run created, an activation or
// fan-out added, an observation applied (which may schedule a retry,
// add successors, free capacity or settle a run), a retry scheduled
// (ScheduleRetry) or requeued (RetryFailedNode), a run resumed, an
// allowance increased, or a cancellation requested (work to stop). Take the channel before looking for work, then wait
// on it: an arrival after the call is never missed. It is an in-process
// hint only: work added through another Store or process does not close
// it; ListenWork hears those too where the backend can deliver them.
func (s *Store) WorkArrived() <-chan struct{} { return s.work.wait() }

// ListenWork returns a channel that receives a value whenever work may have
// become available, until ctx ends: on every arrival WorkArrived reports,
// and, when the backend implements backend.WorkListener (Postgres does),
// on every commit that makes work available through any Store over the
// same store, in any process. Over any other backend it hears this Store's
// arrivals only, and waiters in other processes keep finding work by
// polling.
//
// Values coalesce (the channel has a buffer of one) and the channel is
// never closed. Start listening before looking for work: every arrival
// after ListenWork returns is followed by a value, so a waiter that looks,
// then waits for a value, never misses work; it may sometimes wake and
// find nothing. ListenWork fails only when the backend's listener cannot
// start (ctx done, or the backend closed: backend.ErrClosed); the
// listener stops and releases what it holds when ctx ends.
func (s *Store) ListenWork(ctx context.Context) (<-chan struct{}, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	var remote <-chan struct{}
	if l, ok := s.b.(backend.WorkListener); ok {
		ch, err := l.ListenWork(ctx)
		if err != nil {
			return nil, err
		}
		remote = ch
	}
	out := make(chan struct{}, 1)
	stop := s.work.listen(out) // from now on no arrival is missed
	if remote == nil {
		context.AfterFunc(ctx, stop)
		return out, nil
	}
	go func() {
		defer stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-remote:
				offer(out)
			}
		}
	}()
	return out, nil
}

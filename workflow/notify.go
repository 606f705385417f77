package workflow

import "sync"

// workSignal wakes in-process waiters when work arrives through a Store.
// A waiter takes the current channel before it looks for work; the next
// arrival closes it, so an arrival during the look is never missed.
type workSignal struct {
	mu sync.Mutex
	ch chan struct{}
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
}

// WorkArrived returns a channel that is closed the next time work may have
// become available through this Store: a run created, an activation or
// fan-out added, or an observation applied (which may schedule a retry,
// add successors or settle a run). Take the channel before looking for
// work, then wait on it: an arrival after the call is never missed. It is
// an in-process hint only: work added through another Store or process
// does not close it, so a waiter still polls.
func (s *Store) WorkArrived() <-chan struct{} { return s.work.wait() }

package runner

import (
	"context"
	"log/slog"
)

// waker is what an idle runner waits on besides its timer: the Store's
// ListenWork channel, which hears this Store's arrivals and, over a
// backend that can deliver them (Postgres), commits of other processes;
// or, when listening could not start, WorkArrived, which hears this
// Store's arrivals only (other processes' work is then found by polling).
type waker struct {
	heard   <-chan struct{} // ListenWork's channel; nil when listening failed
	arrived <-chan struct{} // WorkArrived's channel, taken by arm
	r       *Runner
}

// listen starts listening for the duration of ctx.
func (r *Runner) listen(ctx context.Context) *waker {
	w := &waker{r: r}
	heard, err := r.store.ListenWork(ctx)
	if err != nil {
		r.log.LogAttrs(ctx, slog.LevelWarn, "cannot listen for work; waking on this Store's work and polling",
			slog.String("error", err.Error()))
		return w
	}
	w.heard = heard
	return w
}

// arm is called before each look for work: whatever was heard until now
// is covered by the look, and only what arrives after arm wakes the wait.
func (w *waker) arm() {
	if w.heard == nil {
		w.arrived = w.r.store.WorkArrived()
		return
	}
	select {
	case <-w.heard:
	default:
	}
}

// c returns the channel that tells an idle runner work may have arrived.
func (w *waker) c() <-chan struct{} {
	if w.heard == nil {
		return w.arrived
	}
	return w.heard
}

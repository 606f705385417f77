package workflow

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"
)

// TransactionInfo describes one transaction a Store ran on its backend.
type TransactionInfo struct {
	// Write is true for an Update, false for a View.
	Write bool
	// Duration runs from the call to the backend to its return, so it
	// includes every re-run of the transaction the backend made.
	Duration time.Duration
	// Err is what the backend returned (nil on commit). A transaction a
	// Store aborts on purpose because it had nothing to write reports nil.
	Err error
}

// txHooks holds the functions OnTransaction registered.
type txHooks struct {
	mu   sync.Mutex
	list atomic.Pointer[[]*txHook]
}

type txHook struct {
	fn func(context.Context, TransactionInfo)
}

// OnTransaction registers fn to be called after every transaction the
// Store runs, on the goroutine that ran it, until the returned function is
// called. fn must be quick and safe for concurrent use; it observes, it
// cannot change the outcome. Without a registered function a transaction
// pays one atomic load for this.
func (s *Engine) OnTransaction(fn func(ctx context.Context, info TransactionInfo)) (remove func()) {
	h := &txHook{fn: fn}
	s.hooks.mu.Lock()
	defer s.hooks.mu.Unlock()
	var list []*txHook
	if p := s.hooks.list.Load(); p != nil {
		list = append(list, *p...)
	}
	list = append(list, h)
	s.hooks.list.Store(&list)
	var once sync.Once
	return func() {
		once.Do(func() {
			s.hooks.mu.Lock()
			defer s.hooks.mu.Unlock()
			var kept []*txHook
			for _, o := range *s.hooks.list.Load() {
				if o != h {
					kept = append(kept, o)
				}
			}
			if len(kept) == 0 {
				s.hooks.list.Store(nil)
				return
			}
			s.hooks.list.Store(&kept)
		})
	}
}

// timed runs tx and reports it to the registered functions, if any.
func (s *Store) timed(ctx context.Context, write bool, tx func() error) error {
	p := s.hooks.list.Load()
	if p == nil {
		return tx()
	}
	start := time.Now()
	err := tx()
	info := TransactionInfo{Write: write, Duration: time.Since(start), Err: err}
	if errors.Is(err, errNoop) {
		info.Err = nil
	}
	for _, h := range *p {
		h.fn(ctx, info)
	}
	return err
}

package workflow

import (
	"context"
	"errors"

	"github.com/wfstore/wfstore/backend"
)

// Store is the admission store. All decisions live here; the Backend only
// stores records. A Store is safe for concurrent use, and any number of
// Stores (in any number of processes, where the backend allows) may share
// one backend store.
type Store struct {
	b         backend.Backend
	disc      discoveryCursor // where the next Dispatch over all runs resumes
	claims    claimSet        // activations this Store's passes are admitting
	observing observingSet    // attempts this Store's receipt-backed passes are asking about
	batchSize int             // the BatchSize of a Dispatch that sets none
	work      workSignal      // closed when work arrives (WorkArrived)
	hooks     txHooks         // OnTransaction's functions
}

// Option configures a Store.
type Option func(*Store)

// WithBatchSize sets the BatchSize a Dispatch uses when its
// DispatchOptions.BatchSize is 0 (see DispatchOptions.BatchSize). A value
// outside 0 to MaxPageLimit makes such a Dispatch fail with
// ErrInvalidInput.
func WithBatchSize(n int) Option { return func(s *Store) { s.batchSize = n } }

// New returns a Store over b. The caller keeps ownership of b. A nil b (or
// an interface holding a nil pointer) is a programming error, not a
// runtime condition: New panics at once with a message saying so, rather
// than returning a Store that fails on its first call.
func New(b backend.Backend, opts ...Option) *Store {
	if isNil(b) {
		panic("workflow: New called with a nil backend.Backend")
	}
	s := &Store{b: b}
	for _, o := range opts {
		o(s)
	}
	return s
}

// Backend returns the underlying backend.
func (s *Store) Backend() backend.Backend { return s.b }

// update runs fn in a backend Update with a fresh write batch that is
// applied when fn returns nil. When the run of fn that commits said that
// work arrives (batch.workArrives), the transaction signals it to the
// backend's listeners and, after the commit, to in-process waiters.
func (s *Store) update(ctx context.Context, fn func(tx backend.Tx, w *batch) error) error {
	arrived := false
	err := s.timed(ctx, true, func() error {
		return s.b.Update(ctx, func(tx backend.Tx) error {
			arrived = false // a re-run decides afresh
			w := &batch{}
			if err := fn(tx, w); err != nil {
				return err
			}
			if err := completeSettledRuns(ctx, tx, w); err != nil {
				return err
			}
			if w.arrived {
				signalWork(tx)
			}
			arrived = w.arrived
			return w.apply(ctx, tx)
		})
	})
	if err == nil && arrived {
		s.work.notify()
	}
	return err
}

func (s *Store) view(ctx context.Context, fn func(r backend.ReadTx) error) error {
	return s.timed(ctx, false, func() error { return s.b.View(ctx, fn) })
}

// errNoop aborts an Update whose outcome needs no write.
var errNoop = errors.New("workflow: no-op")

package workflow

import (
	"context"
	"time"

	"github.com/wfstore/wfstore/backend"
	"github.com/wfstore/wfstore/workflow/internal/state"
)

// Store is the admission store. All decisions live here; the Backend only
// stores records. A Store is safe for concurrent use, and any number of
// Stores (in any number of processes, where the backend allows) may share
// one backend store.
//
// Its methods are the calls an application makes: create work (CreateRun,
// AddActivation, AddFanOut, CreateChildRun), admit it (Dispatch), report
// what happened (ApplyObservation), cancel, pause and retry it, inspect it
// (GetRun, GetActivation, GetAttempt, RunSummary, Events, Attempts,
// FanOutMembers, Retries, WorkCounts), and repair, prune and verify the store. The
// protocol's single steps and the passes an engine drives are on Engine.
//
// Return convention: a call that reads or makes one record returns it by
// value, and a record that does not exist is an error matching
// ErrNotFound. A pointer result means the answer may be "none", and nil
// says so (Authority: the run has none; Engine.PreparePending: nothing was
// admissible; Engine.ScheduleRetryFromObservation: not a failure;
// Engine.ConsumeNextDueRetry: nothing due).
type Store struct {
	b          backend.Backend
	disc       discoveryCursor // where the next Dispatch over all runs resumes
	claims     claimSet        // activations this Store's passes are admitting
	observing  observingSet    // attempts this Store's receipt-backed passes are asking about
	foreign    foreignSet      // work found claimed by other Stores, for a while
	spread     spreader        // runs the next pass over all runs passes over first
	claimLease time.Duration   // how long a pass's shared claims last (WithClaimLease)
	batchSize  int             // the BatchSize of a Dispatch that sets none
	work       workSignal      // closed when work arrives (WorkArrived)
	hooks      txHooks         // OnTransaction's functions
	engine     *Engine         // what Engine returns
}

// Engine is the engine-facing half of a Store: the admission protocol's
// steps one at a time (PreparePending, Handoff, PersistReceipt), the
// low-level bypass (PrepareAttempt), the recovery passes
// (ReconcilePrepared, ReconcileReceiptBacked, Redispatch), the scans and
// settlements a runner drives (cancellations, retries, timeouts, stuck
// attempts, fan-out retirement), what an owner checks before accepting
// work (CheckOwnerAdmission, DispatchIntent, DispatchReceipt), the
// transaction hook and the backend itself.
//
// An application needs none of it: Store.Dispatch runs the protocol, and
// the runner package drives the passes. Use an Engine to write an engine
// or runner of your own, or a test that stops between two protocol
// steps. An Engine is a view of its Store (Store.Engine): it holds no
// state of its own, is safe for concurrent use, and every guarantee the
// Store states holds for the calls made through it.
type Engine struct{ *store }

// store names Store inside Engine without exporting a field.
type store = Store

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
	s.engine = &Engine{s}
	for _, o := range opts {
		o(s)
	}
	return s
}

// Engine returns the Store's engine-facing calls (see Engine). It returns
// the same *Engine on every call and allocates nothing.
func (s *Store) Engine() *Engine { return s.engine }

// Backend returns the underlying backend.
func (s *Engine) Backend() backend.Backend { return s.b }

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
			if err := settleJoins(ctx, tx, w); err != nil {
				return err
			}
			if err := completeSettledRuns(ctx, tx, w); err != nil {
				return err
			}
			if w.Arrived {
				signalWork(tx)
			}
			arrived = w.Arrived
			return w.Apply(ctx, tx)
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
var errNoop = state.ErrNoop

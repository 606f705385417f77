// Package memstore provides an in-memory backend.Backend for unit tests:
// those of an application built on package workflow, and wfstore's own. It
// needs no file, server or setup, and passes the same conformance suite as
// every other adapter, so a test over it exercises the same semantics:
//
//	func TestApproval(t *testing.T) {
//		b := memstore.New()
//		t.Cleanup(func() { b.Close() })
//		s := workflow.New(b)
//		// ... create runs, dispatch, assert ...
//	}
//
// Guarantees, in the terms of the backend contract:
//
//   - Update is serializable: Updates on one store run one at a time (every
//     Backend over the store shares one write lock), each on a private copy
//     of the committed state that it publishes only when fn returns nil.
//   - View reads a snapshot: the state committed when it began, unaffected
//     by Updates that commit while it runs. A View never waits for an
//     Update.
//   - Not durable: the data lives in this process's memory only, and is
//     gone once no Backend over the store is reachable.
//   - MultiInstance: Open returns another Backend over the same store
//     (Capabilities.MultiInstance is true).
//   - Not MultiProcess: another process cannot reach the store
//     (Capabilities.MultiProcess is false).
//
// There is no global registry: every store is the one New made, reachable
// only through the Backend values over it.
//
// memstore is written to be obviously correct, not fast: every scan reads
// and sorts the rows it could return, and an Update copies each table it
// writes. It suits the small stores of unit tests.
package memstore

import (
	"context"
	"sync"
	"sync/atomic"

	"github.com/wfstore/wfstore/backend"
)

// store is the shared state behind every Backend opened over it.
type store struct {
	mu  sync.Mutex // held by one Update at a time
	gen uint64     // the generation of the last Update's state, under mu
	cur atomic.Pointer[state]
	// claims are advisory and outside the state: no Update reads them.
	claims claims
}

// Backend is one Backend value over an in-memory store. It is safe for
// concurrent use.
type Backend struct {
	s      *store
	closed atomic.Bool
}

var _ backend.Backend = (*Backend)(nil)

// New returns a Backend over a new, empty store.
func New() *Backend {
	s := &store{}
	s.cur.Store(newState())
	return &Backend{s: s}
}

// Open returns another Backend over b's store: what is committed through
// either is visible through both, and Updates through both are serializable
// with each other. Closing one does not close the other. b may be closed
// already: the store outlives its Backends' Close (it is discarded only
// when no Backend over it is reachable), so Open after Close is how a test
// reopens a store.
func (b *Backend) Open() *Backend {
	return &Backend{s: b.s}
}

// Capabilities reports MultiInstance and not MultiProcess: the data lives
// in this process.
func (b *Backend) Capabilities() backend.Capabilities {
	return backend.Capabilities{MultiInstance: true}
}

// Info describes memstore.
func (b *Backend) Info() backend.Info {
	return backend.Info{Name: "memstore", Version: "1", Settings: map[string]string{"durability": "none (memory)"}}
}

// Close closes this Backend: its later calls, and the reads of a
// transaction still running on it, fail with backend.ErrClosed. Other
// Backends over the store are unaffected and the data is kept (see Open).
// A second Close returns nil.
func (b *Backend) Close() error {
	b.closed.Store(true)
	return nil
}

func (b *Backend) check(ctx context.Context) error {
	if b.closed.Load() {
		return backend.ErrClosed
	}
	return ctx.Err()
}

// View runs fn on the state committed when View starts.
func (b *Backend) View(ctx context.Context, fn func(rtx backend.ReadTx) error) error {
	if err := b.check(ctx); err != nil {
		return err
	}
	r := &reader{b: b, st: b.s.cur.Load()}
	defer func() { r.done = true }()
	return fn(r)
}

// Update runs fn on a private copy of the committed state and publishes the
// copy if fn returns nil. fn runs once: memstore never reports a transient
// conflict.
func (b *Backend) Update(ctx context.Context, fn func(tx backend.Tx) error) error {
	if err := b.check(ctx); err != nil {
		return err
	}
	b.s.mu.Lock()
	defer b.s.mu.Unlock()
	if err := b.check(ctx); err != nil {
		return err
	}
	b.s.gen++
	w := &writer{reader: reader{b: b, st: b.s.cur.Load().next(b.s.gen)}}
	// A panic in fn unwinds through the deferred Unlock without publishing.
	err := func() error {
		defer func() { w.done = true }()
		return fn(w)
	}()
	if err != nil {
		return err
	}
	if err := b.check(ctx); err != nil {
		return err
	}
	b.s.cur.Store(w.st)
	return nil
}

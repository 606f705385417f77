// Package memstore is a simple, obviously correct in-memory backend.Backend
// for testing the conformance suite and the workflow layer without a
// database.
//
// Every committed state is an immutable value. Update holds one store-wide
// write lock, works on a copy of the committed state (maps are copied when
// first written) and publishes the copy on commit, so Updates are serial and
// a View reads the state that was committed when it began, even while an
// Update commits. Scans sort what they find on every call; nothing is
// indexed. Stores live in a process-wide registry keyed by locator, so
// several Backend values opened on one locator share one store
// (MultiInstance) and a store outlives Close until Drop.
package memstore

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/wfstore/wfstore/backend"
)

var (
	registryMu sync.Mutex
	registry   = map[string]*store{}
	nextID     atomic.Int64
)

// NewLocator returns a locator naming a new, empty store.
func NewLocator() string {
	return fmt.Sprintf("mem:%d", nextID.Add(1))
}

// Drop forgets the store at locator (its data is lost).
func Drop(locator string) {
	registryMu.Lock()
	defer registryMu.Unlock()
	delete(registry, locator)
}

// Open opens a Backend over the store at locator, creating it empty on first
// use.
func Open(ctx context.Context, locator string) (backend.Backend, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if locator == "" {
		return nil, errors.New("memstore: empty locator")
	}
	registryMu.Lock()
	defer registryMu.Unlock()
	s, ok := registry[locator]
	if !ok {
		s = &store{}
		s.cur.Store(newState())
		registry[locator] = s
	}
	return &Backend{s: s}, nil
}

type store struct {
	mu  sync.Mutex // held by one Update at a time
	cur atomic.Pointer[state]
}

// Backend is one opened instance.
type Backend struct {
	s      *store
	closed atomic.Bool
}

var _ backend.Backend = (*Backend)(nil)

// Capabilities reports MultiInstance (not MultiProcess: the data lives in
// this process).
func (b *Backend) Capabilities() backend.Capabilities {
	return backend.Capabilities{MultiInstance: true}
}

// Info describes memstore.
func (b *Backend) Info() backend.Info {
	return backend.Info{Name: "memstore", Version: "1", Settings: map[string]string{"durability": "none (memory)"}}
}

// Close marks this instance closed; the store itself stays until Drop.
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

// View reads the state committed when it starts.
func (b *Backend) View(ctx context.Context, fn func(rtx backend.ReadTx) error) error {
	if err := b.check(ctx); err != nil {
		return err
	}
	r := &reader{b: b, st: b.s.cur.Load()}
	defer func() { r.done = true }()
	return fn(r)
}

// Update runs fn on a private copy of the state and publishes it if fn
// returns nil.
func (b *Backend) Update(ctx context.Context, fn func(tx backend.Tx) error) error {
	if err := b.check(ctx); err != nil {
		return err
	}
	b.s.mu.Lock()
	defer b.s.mu.Unlock()
	if err := b.check(ctx); err != nil {
		return err
	}
	w := &writer{reader: reader{b: b, st: b.s.cur.Load().clone()}}
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

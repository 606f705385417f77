// Package custombackend shows a backend of your own proving itself with the
// conformance suite (conformance_test.go runs it; `go test
// ./examples/custombackend` is the whole proof).
//
// A real adapter implements backend.Backend over its own storage; see
// docs/backend-authors.md. To stay short, this one delegates the storage to
// memstore and adds what an adapter of your own might add: it counts the
// transactions it runs, by kind. The suite checks the semantics the Store
// relies on (atomicity, isolation, scans, closing, reopening), whatever the
// code underneath.
package custombackend

import (
	"context"
	"sync/atomic"

	"github.com/wfstore/wfstore/backend"
	"github.com/wfstore/wfstore/memstore"
)

// Backend is a backend.Backend that counts its transactions.
type Backend struct {
	*memstore.Backend
	views, updates atomic.Int64
}

var _ backend.Backend = (*Backend)(nil)

// New returns an empty store.
func New() *Backend { return &Backend{Backend: memstore.New()} }

// Reopen returns another Backend over the same store, as opening the same
// file or database again would (the suite opens a store several times).
func (b *Backend) Reopen() *Backend { return &Backend{Backend: b.Backend.Open()} }

// View implements backend.Backend.
func (b *Backend) View(ctx context.Context, fn func(backend.ReadTx) error) error {
	b.views.Add(1)
	return b.Backend.View(ctx, fn)
}

// Update implements backend.Backend.
func (b *Backend) Update(ctx context.Context, fn func(backend.Tx) error) error {
	b.updates.Add(1)
	return b.Backend.Update(ctx, fn)
}

// Info implements backend.Backend.
func (b *Backend) Info() backend.Info {
	return backend.Info{Name: "custombackend", Version: "1", Settings: map[string]string{"storage": "memstore"}}
}

// Transactions returns how many read and read-write transactions this
// Backend value ran.
func (b *Backend) Transactions() (views, updates int64) { return b.views.Load(), b.updates.Load() }

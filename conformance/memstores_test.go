package conformance

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/wfstore/wfstore/backend"
	"github.com/wfstore/wfstore/memstore"
)

// memStores gives memstore stores the locators a Harness deals in: New
// makes a store, Open opens another Backend over it. A locator this value
// did not make (in a child process, which starts with none) opens a new,
// empty store: memstore cannot share a store between processes.
type memStores struct {
	mu sync.Mutex
	n  int
	m  map[string]*memstore.Backend
}

func (s *memStores) New(t testing.TB) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.n++
	loc := fmt.Sprintf("mem-%d", s.n)
	s.store(loc)
	t.Cleanup(func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		delete(s.m, loc)
	})
	return loc
}

func (s *memStores) Open(ctx context.Context, loc string) (backend.Backend, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.store(loc).Open(), nil
}

// store returns the store of loc, making it when new; s.mu is held.
func (s *memStores) store(loc string) *memstore.Backend {
	if s.m == nil {
		s.m = map[string]*memstore.Backend{}
	}
	b, ok := s.m[loc]
	if !ok {
		b = memstore.New()
		s.m[loc] = b
	}
	return b
}

package memstore

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/wfstore/wfstore/backend"
)

var _ backend.Claimer = (*Backend)(nil)

// claims are the advisory claims of one store (backend.Claimer), shared by
// every Backend over it and timed by this process's monotonic clock.
type claims struct {
	mu   sync.Mutex
	held map[string]claim
}

type claim struct {
	holder  string
	expires time.Time
}

// Claim implements backend.Claimer.
func (b *Backend) Claim(ctx context.Context, holder string, keys []string, ttl time.Duration) ([]bool, error) {
	if err := b.claimable(ctx, holder, keys); err != nil {
		return nil, err
	}
	if ttl <= 0 {
		return nil, fmt.Errorf("memstore: claim ttl %v is not positive", ttl)
	}
	c := &b.s.claims
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.held == nil {
		c.held = map[string]claim{}
	}
	now := time.Now()
	out := make([]bool, len(keys))
	for i, k := range keys {
		if cur, ok := c.held[k]; ok && cur.holder != holder && now.Before(cur.expires) {
			continue
		}
		c.held[k] = claim{holder: holder, expires: now.Add(ttl)}
		out[i] = true
	}
	return out, nil
}

// Release implements backend.Claimer.
func (b *Backend) Release(ctx context.Context, holder string, keys []string) error {
	if err := b.claimable(ctx, holder, keys); err != nil {
		return err
	}
	c := &b.s.claims
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, k := range keys {
		if cur, ok := c.held[k]; ok && cur.holder == holder {
			delete(c.held, k)
		}
	}
	return nil
}

func (b *Backend) claimable(ctx context.Context, holder string, keys []string) error {
	if b.closed.Load() {
		return backend.ErrClosed
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	if holder == "" {
		return fmt.Errorf("memstore: claim holder is empty")
	}
	return nil
}

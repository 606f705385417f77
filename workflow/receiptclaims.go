package workflow

import "sync"

// observingSet holds the attempts that receipt-backed passes of one Store
// are asking their owner about now, so that concurrent passes of the Store
// spread over different attempts instead of asking the owner twice about
// each. A pass selects past the attempts another pass holds, and claims
// what it selected before asking; one claimed by another pass in between
// is left to that pass. Claims only spread work: what is applied is still
// decided by the transaction that applies the observations.
type observingSet struct {
	mu   sync.Mutex
	held map[string]struct{}
}

// has reports whether some pass holds the attempt with this identity.
func (c *observingSet) has(identity string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	_, ok := c.held[identity]
	return ok
}

// claim claims the identities of ids that no other pass holds and returns
// whether each was claimed; release gives back what this call claimed.
func (c *observingSet) claim(ids []string) (mine []bool, release func()) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.held == nil {
		c.held = map[string]struct{}{}
	}
	mine = make([]bool, len(ids))
	var got []string
	for i, id := range ids {
		if _, taken := c.held[id]; taken {
			continue
		}
		c.held[id] = struct{}{}
		mine[i] = true
		got = append(got, id)
	}
	return mine, func() {
		c.mu.Lock()
		defer c.mu.Unlock()
		for _, id := range got {
			delete(c.held, id)
		}
	}
}

package workflow

import (
	"sync"

	"github.com/wfstore/wfstore/backend"
)

// claimSet holds the activations that passes of one Store are admitting
// now, so that concurrent passes of the Store spread over different work
// instead of planning the same activations and racing for them.
// Discovery passes over claimed activations and takes activations of runs
// no other pass holds first (two passes admitting one run contend for its
// records), and a pass claims what it discovered before admitting it; a
// candidate claimed by another pass in between is reported raced. Claims
// only spread work: whether an activation is admitted is still decided by
// the prepare transaction.
type claimSet struct {
	mu   sync.Mutex
	held map[backend.ActivationKey]struct{}
	runs map[string]int // claimed activations, by run
}

// runHeld reports whether some pass holds an activation of run.
func (c *claimSet) runHeld(run string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.runs[run] > 0
}

// has reports whether k is claimed by some pass.
func (c *claimSet) has(k backend.ActivationKey) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	_, ok := c.held[k]
	return ok
}

// claim claims the candidates that are not full. A candidate another pass
// holds is turned into a full one (reported raced, not admitted). release
// gives back what this call claimed.
func (c *claimSet) claim(cands []candidate) (out []candidate, release func()) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.held == nil {
		c.held = map[backend.ActivationKey]struct{}{}
		c.runs = map[string]int{}
	}
	var mine []backend.ActivationKey
	for i := range cands {
		if cands[i].full {
			continue
		}
		k := cands[i].act.Key
		if _, taken := c.held[k]; taken {
			cands[i].full = true
			continue
		}
		c.held[k] = struct{}{}
		c.runs[k.RunID]++
		mine = append(mine, k)
	}
	return cands, func() {
		c.mu.Lock()
		defer c.mu.Unlock()
		for _, k := range mine {
			delete(c.held, k)
			if c.runs[k.RunID]--; c.runs[k.RunID] == 0 {
				delete(c.runs, k.RunID)
			}
		}
	}
}

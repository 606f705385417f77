package etcd

import (
	"context"
	"sync/atomic"
	"time"
)

// This file is the commit gate: how a Backend keeps its own Updates from
// racing each other while they conflict.
//
// Updates of one Backend that conflict with each other only waste commits:
// of n racing on the same keys one commits and n-1 send a Txn bound to
// fail, each a raft round with an fsync on every member. So while the
// Backend has seen a failed commit within the last gateWindow, its Updates
// run fn and send their commit one at a time, in the order they arrive;
// Updates of other Backends (other processes) still race them, and the
// compares still decide. Outside such a window the gate is open and
// Updates run concurrently. The gate is held for one run of fn and its
// commit, never across a pause between runs or a wait for the turn.

// gateWindow is how long after a failed commit the gate stays closed.
const gateWindow = 100 * time.Millisecond

// gate is a Backend's commit gate.
type gate struct {
	sem          chan struct{} // holds one token while an Update runs gated
	lastConflict atomic.Int64  // unix nanoseconds of the last failed commit
}

func newGate() *gate { return &gate{sem: make(chan struct{}, 1)} }

// conflicted notes a failed commit.
func (g *gate) conflicted() { g.lastConflict.Store(time.Now().UnixNano()) }

// enter waits for the gate when it is closed, and returns the function
// that leaves it; it returns ctx's error if ctx ends first.
func (g *gate) enter(ctx context.Context) (func(), error) {
	if time.Since(time.Unix(0, g.lastConflict.Load())) >= gateWindow {
		return func() {}, nil
	}
	select {
	case g.sem <- struct{}{}:
		return func() { <-g.sem }, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

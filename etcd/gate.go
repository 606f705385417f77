package etcd

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"
)

// This file is the commit gate: how a Backend keeps its own Updates from
// racing each other while they conflict.
//
// Updates of one Backend that conflict with each other only waste commits:
// of n racing on the same keys one commits and n-1 send a Txn bound to
// fail, each a raft round with an fsync on every member. So a failed
// commit makes the keys its Update read hot for gateWindow, and the
// Backend's Updates that read a hot key run fn and send their commit one
// at a time, through the gate's one token:
//
//   - an Update whose commit failed runs again holding the token, taken
//     before fn runs;
//   - another Update takes the token at its first read of a hot key; when
//     another Update holds it, that read fails (errGateBusy, which fn
//     returns as any read error), nothing is committed, and the Update
//     waits for the token and runs fn again holding it, reading after the
//     holder's commit instead of racing it.
//
// Updates reading no hot key never wait: a conflict in one run does not
// hold back the Backend's Updates of others. An Update whose failed commit
// read more than maxHotKeys keys (a large transaction, whose compares
// cover much of the store) closes the gate to every Update for gateWindow
// instead. Updates of other Backends (other processes) still race the gated
// ones, and the compares still decide. The token is held for one run of fn
// and its commit, never across a pause between runs or a wait for the
// turn; an Update in the turn queue never takes it.

// gateWindow is how long after a failed commit its keys stay hot (or the
// gate stays closed to every Update).
const gateWindow = 100 * time.Millisecond

// maxHotKeys bounds the keys one failed commit makes hot; an Update that
// read more closes the gate to every Update instead.
const maxHotKeys = 256

// maxHotKept bounds the hot keys the gate remembers; past it the expired
// ones are dropped, and when none has expired the map starts afresh.
const maxHotKept = 16384

// errGateBusy fails the read of a hot key by an Update while another
// Update of the Backend holds the gate's token; Update then waits for the
// token and runs fn again. Update never returns it.
var errGateBusy = errors.New("another Update of this Backend is committing what this read needs; the Update runs again after it")

// gate is a Backend's commit gate.
type gate struct {
	sem          chan struct{} // holds one token while an Update runs gated
	lastConflict atomic.Int64  // unix nanoseconds of the last failed commit that closed the gate to all
	hotUntil     atomic.Int64  // unix nanoseconds until which some key is hot
	mu           sync.Mutex
	hot          map[string]int64 // key → unix nanoseconds until which it is hot
}

func newGate() *gate { return &gate{sem: make(chan struct{}, 1), hot: map[string]int64{}} }

// conflicted notes a failed commit of an Update that read keys.
func (g *gate) conflicted(keys map[string]int64) {
	now := time.Now()
	if len(keys) == 0 || len(keys) > maxHotKeys {
		g.lastConflict.Store(now.UnixNano())
		return
	}
	until := now.Add(gateWindow).UnixNano()
	g.mu.Lock()
	defer g.mu.Unlock()
	if len(g.hot)+len(keys) > maxHotKept {
		for k, u := range g.hot {
			if u <= now.UnixNano() {
				delete(g.hot, k)
			}
		}
		if len(g.hot)+len(keys) > maxHotKept {
			g.hot = map[string]int64{}
		}
	}
	for k := range keys {
		g.hot[k] = until
	}
	g.hotUntil.Store(until)
}

// closed reports whether the gate is closed to every Update.
func (g *gate) closed() bool {
	return time.Since(time.Unix(0, g.lastConflict.Load())) < gateWindow
}

// anyHot reports whether one of keys is hot.
func (g *gate) anyHot(keys []string) bool {
	now := time.Now().UnixNano()
	if now >= g.hotUntil.Load() {
		return false
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	for _, k := range keys {
		if g.hot[k] > now {
			return true
		}
	}
	return false
}

// gateHold is an Update's hold of its Backend's gate token.
type gateHold struct {
	g    *gate
	held bool
}

// enter waits for the token; it returns ctx's error if ctx ends first.
func (h *gateHold) enter(ctx context.Context) error {
	if h.held {
		return nil
	}
	select {
	case h.g.sem <- struct{}{}:
		h.held = true
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// try takes the token if it is free, and reports whether h holds it.
func (h *gateHold) try() bool {
	if h.held {
		return true
	}
	select {
	case h.g.sem <- struct{}{}:
		h.held = true
	default:
	}
	return h.held
}

// leave gives the token back if h holds it.
func (h *gateHold) leave() {
	if h.held {
		h.held = false
		<-h.g.sem
	}
}

package etcd

import (
	"context"
	"errors"
	"hash/fnv"
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
// commit makes the keys its Update read hot for gateWindow, as one group
// with a queue of its own, and the Backend's Updates that read a hot key
// run fn and send their commit one at a time per group, through the
// group's token:
//
//   - an Update whose commit failed runs again holding its group's token,
//     taken before fn runs;
//   - another Update takes the token of each hot key's group at its first
//     read of one; when another Update holds it, that read fails
//     (errGateBusy, which fn returns as any read error), nothing is
//     committed, and the Update waits for the tokens it needed and runs fn
//     again holding them, reading after the holder's commit instead of
//     racing it.
//
// Updates reading no hot key never wait, and those reading hot keys wait
// only for the Updates of the same groups: a conflict in one run holds
// back neither the Backend's Updates of other runs nor those queued on
// another run's conflict. The groups' tokens are gateQueues fixed ones
// (a group takes the token its first key hashes to, or the one a key of it
// already hot has), so two groups share a queue rarely, and then only cost
// each other a wait. An Update waiting for several tokens takes them in
// one order, holding none it took otherwise, so waits never deadlock. An
// Update whose failed commit read more than maxHotKeys keys (a large
// transaction, whose compares cover much of the store), or none, closes
// the gate to every Update for gateWindow instead: each then runs holding
// every token. Updates of other Backends (other processes) still race the
// gated ones, and the compares still decide. Tokens are held for one run
// of fn and its commit, never across a pause between runs or a wait for
// the turn; an Update in the turn queue never takes one.

// gateWindow is how long after a failed commit its keys stay hot (or the
// gate stays closed to every Update).
const gateWindow = 100 * time.Millisecond

// maxHotKeys bounds the keys one failed commit makes hot; an Update that
// read more closes the gate to every Update instead. A batch prepare of
// ten activations reads about 300 keys: well under it.
const maxHotKeys = 1024

// maxHotKept bounds the hot keys the gate remembers; past it the expired
// ones are dropped, and when none has expired the map starts afresh.
const maxHotKept = 16384

// gateQueues is how many queues (tokens) the gate's groups of hot keys
// share; a set of them is a bit mask.
const gateQueues = 64

// allQueues is the mask of every queue: what an Update holds while the
// gate is closed to all.
const allQueues = ^uint64(0)

// errGateBusy fails the read of a hot key by an Update while another
// Update of the Backend holds that key's queue; Update then waits for the
// queue and runs fn again. Update never returns it.
var errGateBusy = errors.New("another Update of this Backend is committing what this read needs; the Update runs again after it")

// gate is a Backend's commit gate.
type gate struct {
	sems         [gateQueues]chan struct{} // each holds one token while an Update runs in its queue
	prefix       int                       // the store prefix's length: keys hash without it
	lastConflict atomic.Int64              // unix nanoseconds of the last failed commit that closed the gate to all
	hotUntil     atomic.Int64              // unix nanoseconds until which some key is hot
	mu           sync.Mutex
	hot          map[string]hotKey
}

// hotKey is a hot key's state: until when it is hot, and its group's queue.
type hotKey struct {
	until int64 // unix nanoseconds
	queue uint8
}

func newGate(prefix string) *gate {
	g := &gate{prefix: len(prefix), hot: map[string]hotKey{}}
	for i := range g.sems {
		g.sems[i] = make(chan struct{}, 1)
	}
	return g
}

// queueOf is the queue a group whose first key is k takes when none of its
// keys is hot: a hash of k past the store prefix.
func (g *gate) queueOf(k string) uint8 {
	h := fnv.New32a()
	_, _ = h.Write([]byte(k[min(g.prefix, len(k)):]))
	return uint8(h.Sum32() % gateQueues)
}

// conflicted notes a failed commit of an Update that read keys, and
// returns the queues that Update runs again in: its group's, or all when
// it closed the gate to every Update.
func (g *gate) conflicted(keys map[string]int64) uint64 {
	now := time.Now()
	if len(keys) == 0 || len(keys) > maxHotKeys {
		g.lastConflict.Store(now.UnixNano())
		return allQueues
	}
	until := now.Add(gateWindow).UnixNano()
	g.mu.Lock()
	defer g.mu.Unlock()
	if len(g.hot)+len(keys) > maxHotKept {
		for k, h := range g.hot {
			if h.until <= now.UnixNano() {
				delete(g.hot, k)
			}
		}
		if len(g.hot)+len(keys) > maxHotKept {
			g.hot = map[string]hotKey{}
		}
	}
	// The group joins the queue of its least key already hot (Updates
	// queued there are the ones it conflicts with), else its least key's.
	first, hotFirst := "", ""
	for k := range keys {
		if first == "" || k < first {
			first = k
		}
		if h, ok := g.hot[k]; ok && h.until > now.UnixNano() && (hotFirst == "" || k < hotFirst) {
			hotFirst = k
		}
	}
	q := g.queueOf(first)
	if hotFirst != "" {
		q = g.hot[hotFirst].queue
	}
	for k := range keys {
		g.hot[k] = hotKey{until: until, queue: q}
	}
	g.hotUntil.Store(until)
	return 1 << q
}

// closed reports whether the gate is closed to every Update.
func (g *gate) closed() bool {
	return time.Since(time.Unix(0, g.lastConflict.Load())) < gateWindow
}

// hotQueues returns the queues of the hot keys among keys (0: none is hot).
func (g *gate) hotQueues(keys []string) uint64 {
	now := time.Now().UnixNano()
	if now >= g.hotUntil.Load() {
		return 0
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	var qs uint64
	for _, k := range keys {
		if h, ok := g.hot[k]; ok && h.until > now {
			qs |= 1 << h.queue
		}
	}
	return qs
}

// gateHold is an Update's hold of queues of its Backend's gate.
type gateHold struct {
	g    *gate
	held uint64 // the queues whose tokens it holds
	// want: the queues it runs in next time (those of its failed commits
	// and of the reads that found a queue held).
	want uint64
}

// enter waits for the tokens of the queues in want, in queue order; it
// returns ctx's error if ctx ends first (holding none).
func (h *gateHold) enter(ctx context.Context, want uint64) error {
	for q := range gateQueues {
		bit := uint64(1) << q
		if want&bit == 0 || h.held&bit != 0 {
			continue
		}
		select {
		case h.g.sems[q] <- struct{}{}:
			h.held |= bit
		case <-ctx.Done():
			h.leave()
			return ctx.Err()
		}
	}
	return nil
}

// try takes the tokens of the queues in qs it does not hold if all are
// free, and reports whether h holds every one of qs.
func (h *gateHold) try(qs uint64) bool {
	var took uint64
	for q := range gateQueues {
		bit := uint64(1) << q
		if qs&bit == 0 || h.held&bit != 0 {
			continue
		}
		select {
		case h.g.sems[q] <- struct{}{}:
			took |= bit
		default:
			h.give(took)
			return false
		}
	}
	h.held |= took
	return true
}

// give gives back the tokens of qs (which h took).
func (h *gateHold) give(qs uint64) {
	for q := range gateQueues {
		if qs&(1<<q) != 0 {
			<-h.g.sems[q]
		}
	}
}

// leave gives back every token h holds.
func (h *gateHold) leave() {
	h.give(h.held)
	h.held = 0
}

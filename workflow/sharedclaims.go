package workflow

import (
	"context"
	"slices"
	"sync"
	"time"

	"github.com/wfstore/wfstore/backend"
)

// DefaultClaimLease is how long a pass's claims across processes last
// when it neither finishes nor releases them (see WithClaimLease).
const DefaultClaimLease = time.Minute

// claimReleaseTimeout bounds the release of a pass's claims, which runs on
// a context detached from the pass's own.
const claimReleaseTimeout = 5 * time.Second

// foreignMemory bounds how long a Store remembers the work it found
// claimed by another holder, and passes over it, before asking again.
const foreignMemory = time.Second

// WithClaimLease sets how long the claims of one pass last on a backend
// that shares claims across processes (backend.Claimer), when the pass
// neither finishes nor gives them back (it crashed, or hangs): after
// that, other Stores may take the work it claimed. A pass gives back its
// claims when it returns. A lease shorter than a pass only costs speed:
// the prepare transaction still admits each attempt once, whoever holds
// its claim. d <= 0 means DefaultClaimLease.
func WithClaimLease(d time.Duration) Option { return func(s *Store) { s.claimLease = d } }

// foreignSet remembers, for a short while, the work that passes of this
// Store found claimed by other holders (other Stores, other processes),
// so that discovery and the receipt-backed selection pass over it the way
// they pass over what another pass of this Store holds.
type foreignSet struct {
	mu    sync.Mutex
	acts  map[backend.ActivationKey]time.Time // until when
	runs  map[string]time.Time                // runs with a foreign claim, until when
	obs   map[string]time.Time                // attempt identities, until when
	swept int                                 // entries at the last sweep
}

func (f *foreignSet) hasAct(k backend.ActivationKey) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return time.Now().Before(f.acts[k])
}

func (f *foreignSet) runHeld(run string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return time.Now().Before(f.runs[run])
}

func (f *foreignSet) hasObserving(identity string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return time.Now().Before(f.obs[identity])
}

// addRuns remembers runs until foreignMemory from now.
func (f *foreignSet) addRuns(runs []string) {
	if len(runs) == 0 {
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.acts == nil {
		f.acts, f.runs, f.obs = map[backend.ActivationKey]time.Time{}, map[string]time.Time{}, map[string]time.Time{}
	}
	now := time.Now()
	until := now.Add(foreignMemory)
	for _, r := range runs {
		f.runs[r] = until
	}
	if len(f.runs) > 2*f.swept+1024 {
		sweep(f.runs, now)
	}
}

// add remembers acts (and their runs) and observed identities until
// foreignMemory from now, and forgets what expired once the set has grown.
func (f *foreignSet) add(acts []backend.ActivationKey, obs []string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	now := time.Now()
	until := now.Add(foreignMemory)
	if f.acts == nil {
		f.acts, f.runs, f.obs = map[backend.ActivationKey]time.Time{}, map[string]time.Time{}, map[string]time.Time{}
	}
	for _, k := range acts {
		f.acts[k] = until
		f.runs[k.RunID] = until
	}
	for _, id := range obs {
		f.obs[id] = until
	}
	if n := len(f.acts) + len(f.obs); n > 2*f.swept+1024 {
		sweep(f.acts, now)
		sweep(f.runs, now)
		sweep(f.obs, now)
		f.swept = len(f.acts) + len(f.obs)
	}
}

func sweep[K comparable](m map[K]time.Time, now time.Time) {
	for k, t := range m {
		if !now.Before(t) {
			delete(m, k)
		}
	}
}

// lostRuns records that a pass over all runs found runs another
// dispatcher is admitting (it lost activations of them at the prepare
// transaction): the Store's
// next passes prefer other runs for a while. Stores that lost a run
// together would otherwise all move on to the same next run, as their
// discoveries read the index in the same order, and lose it together
// again; so the next pass also passes over a random number of the free
// runs it meets first (see spreader), and takes them only when it finds
// too little elsewhere.
func (s *Store) lostRuns(runs []string) {
	if len(runs) == 0 {
		return
	}
	s.foreign.addRuns(runs)
	s.spread.lost()
}

// claimer returns the backend's shared claims, if it has them.
func (s *Store) claimer() (backend.Claimer, bool) {
	c, ok := s.b.(backend.Claimer)
	return c, ok
}

func (s *Store) lease() time.Duration {
	if s.claimLease > 0 {
		return s.claimLease
	}
	return DefaultClaimLease
}

// dispatchClaimKey names, among shared claims, the attempt a dispatch
// pass would prepare for act.
func dispatchClaimKey(act backend.Activation) string {
	return dispatchClaimPrefix + DispatchIdentity(act.Key.RunID, act.Key.NodeID, act.Key.ActivationID, act.LastAttempt+1)
}

const dispatchClaimPrefix = "dispatch:"

// observeClaimKey names, among shared claims, asking the owner about the
// attempt with this identity.
func observeClaimKey(identity string) string { return "observe:" + identity }

// claimShared takes for holder, on a backend with shared claims, the
// attempts keys name; it returns which holder holds and the release to
// call when the pass ends, which gives back every claim this call took
// whose key keep does not hold (nil: all of them). Without shared claims,
// or when claiming fails (it is only a hint), the pass holds everything.
func (s *Store) claimShared(ctx context.Context, holder string, keys []string) (won []bool, release func(keep map[string]bool)) {
	won = make([]bool, len(keys))
	for i := range won {
		won[i] = true
	}
	cl, ok := s.claimer()
	if !ok || len(keys) == 0 {
		return won, func(map[string]bool) {}
	}
	got, err := cl.Claim(ctx, holder, keys, s.lease())
	if err != nil || len(got) != len(keys) {
		return won, func(map[string]bool) {}
	}
	var mine []string
	for i, k := range keys {
		if got[i] {
			mine = append(mine, k)
		}
	}
	return got, func(keep map[string]bool) {
		mine := slices.DeleteFunc(mine, func(k string) bool { return keep[k] })
		if len(mine) == 0 {
			return
		}
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), claimReleaseTimeout)
		defer cancel()
		_ = cl.Release(rctx, holder, mine) // an unreleased claim expires
	}
}

// dispatchRunClaimKey names, among shared claims, admitting activations
// of run: a pass over all runs claims the runs it is about to admit in,
// besides the attempts, because every admission of a run writes the run's
// record, so two Stores admitting disjoint activations of one run still
// contend at each other's transactions.
func dispatchRunClaimKey(run string) string { return "dispatch-run:" + run }

// claimCandidates claims for holder, across Stores, the candidates a pass
// is about to plan and, when byRun is set, their runs. It returns the
// full candidates and those it holds, and apart the ones another holder
// claimed (remembered, so that this Store's next discoveries take them
// last): those whose attempt this pass holds but whose run another holder
// claimed (runContested), and those whose attempt another holder claimed
// (taken). Without shared claims the pass holds every candidate: it names
// no claim (the keys cost a hash each) and release is nil.
func (s *Store) claimCandidates(ctx context.Context, holder string, cands []candidate, byRun bool) (mine, runContested, taken []candidate, release func(keep map[string]bool)) {
	if _, ok := s.claimer(); !ok {
		return cands, nil, nil, nil
	}
	var keys []string
	var idx []int
	runKey := map[string]int{} // run → index in keys of its run claim
	for i, c := range cands {
		if !c.full {
			keys = append(keys, dispatchClaimKey(c.act))
			idx = append(idx, i)
		}
	}
	if byRun {
		for _, i := range idx {
			run := cands[i].act.Key.RunID
			if _, ok := runKey[run]; !ok {
				runKey[run] = len(keys)
				keys = append(keys, dispatchRunClaimKey(run))
			}
		}
	}
	got, release := s.claimShared(ctx, holder, keys)
	lost := map[int]bool{}    // the attempt is another holder's
	runLost := map[int]bool{} // the attempt is this pass's, its run another's
	var foreign []backend.ActivationKey
	var foreignRuns []string
	for j, i := range idx {
		if !got[j] {
			lost[i] = true
			foreign = append(foreign, cands[i].act.Key)
			continue
		}
		if run := cands[i].act.Key.RunID; byRun && !got[runKey[run]] {
			runLost[i] = true
			foreignRuns = append(foreignRuns, run)
		}
	}
	if len(foreign) == 0 && len(foreignRuns) == 0 {
		return cands, nil, nil, release
	}
	if len(foreign) > 0 {
		s.foreign.add(foreign, nil)
	}
	// Another holder claimed these runs: prefer others for a while. It may
	// be another pass of this Store (a pass is a holder), so this is no
	// loss to spread from: passes of one Store already read past each
	// other's runs, and hopping on every sibling's claim scattered them.
	s.foreign.addRuns(foreignRuns)
	for i, c := range cands {
		switch {
		case runLost[i]:
			runContested = append(runContested, c)
		case lost[i]:
			taken = append(taken, c)
		default:
			mine = append(mine, c)
		}
	}
	return mine, runContested, taken, release
}

// claimRounds bounds the discoveries of one pass.
const claimRounds = 4

// discoverClaimed discovers the candidates of one pass and claims them,
// from other passes of this Store and, on a backend with shared claims,
// from other Stores; a pass over all runs (runID empty) claims the runs
// of its candidates too, and treats a candidate whose run another Store
// claimed as contested. Claims across Stores are a preference, not an
// exclusion: when other Stores hold some of what it found, the pass looks
// again (up to claimRounds discoveries, each past what it found before)
// for work nobody holds, and only when that leaves it room does it take
// the contested candidates too (first those whose attempt it holds), which
// then race at the prepare transaction as they would without claims. So a pass never comes back empty while
// work is pending. release gives back every claim the pass took, except
// across Stores those of the attempts it admitted: those activations left
// discovery, and their claims expire unread.
func (s *Store) discoverClaimed(ctx context.Context, runID string, limit int, at int64) ([]candidate, func(admitted []AttemptRef), error) {
	var (
		out, runContested, contested []candidate
		local                        []func()
		shared                       []func(map[string]bool)
		seen                         = map[backend.ActivationKey]bool{}
		planned                      int
		holder                       = newHandoffToken() // this pass's, across Stores
	)
	releaseAll := func(admitted []AttemptRef) {
		for _, r := range local {
			r()
		}
		if len(shared) == 0 {
			return // no claim across Stores taken: none to keep
		}
		keep := make(map[string]bool, len(admitted))
		for _, a := range admitted {
			keep[dispatchClaimPrefix+a.Identity] = true
		}
		for _, r := range shared {
			r(keep)
		}
	}
	for round := 1; planned < limit; round++ {
		cands, err := s.discover(ctx, runID, limit-planned, at)
		if err != nil {
			releaseAll(nil)
			return nil, func([]AttemptRef) {}, err
		}
		cands, rel := s.claims.claim(cands)
		local = append(local, rel)
		found := 0
		for _, c := range cands {
			if !c.full && !seen[c.act.Key] {
				found++
			}
		}
		// A pass over all runs claims its runs too, to spread over runs;
		// one restricted to a run has nowhere else to go.
		mine, runLost, lost, srel := s.claimCandidates(ctx, holder, cands, runID == "")
		if srel != nil {
			shared = append(shared, srel)
		}
		if out == nil && len(mine) > 0 {
			out = make([]candidate, 0, len(mine)+len(lost))
		}
		for _, c := range mine {
			if !seen[c.act.Key] {
				seen[c.act.Key] = true
				out = append(out, c)
				if !c.full {
					planned++
				}
			}
		}
		runContested = append(runContested, runLost...)
		contested = append(contested, lost...)
		if len(lost)+len(runLost) == 0 || found == 0 || round == claimRounds || ctx.Err() != nil {
			break
		}
	}
	// Work whose attempt this pass holds, in runs another Store claimed,
	// before work another Store claimed.
	for _, c := range append(runContested, contested...) {
		if planned >= limit {
			break
		}
		if !seen[c.act.Key] {
			seen[c.act.Key] = true
			out = append(out, c)
			planned++
		}
	}
	return out, releaseAll, nil
}

// claimObserving claims, across Stores, asking the owner about the
// attempts of selected that mine marks as this pass's; one another
// holder claimed is unmarked and remembered, so that this Store's next
// selections pass over it.
func (s *Store) claimObserving(ctx context.Context, selected []backend.Attempt, mine []bool) ([]bool, func()) {
	var keys []string
	var idx []int
	for i, a := range selected {
		if mine[i] {
			keys = append(keys, observeClaimKey(a.Identity))
			idx = append(idx, i)
		}
	}
	got, release := s.claimShared(ctx, newHandoffToken(), keys)
	var foreign []string
	for j, i := range idx {
		if !got[j] {
			mine[i] = false
			foreign = append(foreign, selected[i].Identity)
		}
	}
	if len(foreign) > 0 {
		s.foreign.add(nil, foreign)
	}
	return mine, func() { release(nil) }
}

package workflow

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/wfstore/wfstore/backend"
	"github.com/wfstore/wfstore/internal/faultseam"
)

// DispatchOptions selects what one Dispatch call admits.
type DispatchOptions struct {
	// RunID restricts discovery to one run when set.
	RunID string
	// Authority, when set (RunID required), is verified before discovery and
	// required at every boundary: the owned dispatch. When nil, the run's
	// authority is snapshotted at discovery and must not change until the
	// receipt commits.
	Authority *Authority
	// Limit bounds one pass (1 to MaxPageLimit; 0 means DefaultPageLimit):
	// at most Limit activations are planned, at most Limit runs without
	// concurrency room are reported raced, and discovery reads at most
	// 4×Limit pending activations and the runs (and roots) they belong to,
	// however many the store holds. A pass may therefore plan fewer than
	// Limit activations while more are pending; see Dispatch for how later
	// passes reach them.
	Limit int
	// BatchSize selects how a pass commits. 0 or 1 (the default): one
	// activation at a time, three transactions each (intent, handoff,
	// receipt), and the first owner or per-activation error stops the pass.
	// Above 1: up to BatchSize planned activations share each of those
	// three transactions (see Dispatch, "Batch mode"); the pass takes
	// min(Limit, BatchSize) activations per batch, batch after batch, until
	// it has planned Limit. At most MaxPageLimit.
	BatchSize int
	// OwnerConcurrency bounds the owner calls a batch makes at once when
	// the owner is not a BatchOwner (0 or 1, the default: one at a time, in
	// batch order). Above 1 the owner's Dispatch must be safe for
	// concurrent use. Ignored outside batch mode and for a BatchOwner,
	// which receives the whole batch in one call.
	OwnerConcurrency int

	fault faultHook // set by Dispatch from its context (internal/faultseam)
}

// Rejection is one discovered activation that cannot be admitted for a
// reason of its own run (deadline elapsed or retry cap exceeded at
// preparation; run paused, cancelling or no longer running, or its fan-out
// group retiring, at handoff); the batch went on without it. Err matches
// ErrIneligible. A run found paused, cancelling or not running at
// preparation is reported Raced instead: preparation's single-winner gate
// cannot tell it from another dispatcher's win, and such work leaves
// discovery.
type Rejection struct {
	Key ActivationKey
	Err error
}

// DispatchSummary reports one Dispatch call.
type DispatchSummary struct {
	// Admitted lists the attempts admitted (receipt committed).
	Admitted []AttemptRef
	// Unsupported lists activations the owner declined to plan.
	Unsupported []ActivationKey
	// Raced lists activations another dispatcher took first (prepared or
	// handed off), that lost to concurrency capacity or a conflicting
	// resource lease, or whose run preparation found paused, cancelling or
	// not running (or whose fan-out group it found retiring). A run without concurrency room is listed once, by
	// the first activation discovery met, and the rest of it is passed
	// over.
	Raced []ActivationKey
	// Exhausted lists activations blocked by the run's or the root's
	// execution allowance; they stay pending and no attempt exists. The
	// allowance is checked before concurrency capacity, so an exhausted
	// activation is listed here whatever its run's capacity.
	Exhausted []ActivationKey
	// Rejected lists activations refused for a durable reason of their run.
	// One refused at handoff keeps its prepared attempt, handoff pending
	// and provably never dispatched: ReconcilePrepared lists it as
	// NeverDispatched, and CancelNeverDispatched or Redispatch recover it.
	Rejected []Rejection
	// OwnerFailed lists, in batch mode, the attempts whose owner call
	// failed (or whose receipt could not be recorded): each was handed off
	// and may have been dispatched, so it is left for ReconcilePrepared
	// and Redispatch, except one whose receipt the store cannot keep,
	// which is settled as repair_required (Err is an *UnstorableError).
	// The pass stops after that batch and returns the failures. In
	// one-at-a-time mode such a failure stops the pass and is only
	// returned as its error.
	OwnerFailed []OwnerFailure
	// Stale lists the activations at which the pass found the authority
	// changed (the owned authority stale, or the run's authority no longer
	// the one discovery saw), at planning, preparation, handoff or receipt.
	// The pass stops there and returns ErrStaleAuthority.
	Stale []ActivationKey
	// Unoffered lists, in batch mode, the attempts this pass prepared and
	// never offered to the owner because it stopped (an owner, plan or
	// fault-hook error, a stale authority, a storage error or ctx done).
	// Each is prepared with its handoff pending, provably never
	// dispatched: either the pass stopped before its handoff, or it
	// released the handoff it had recorded (see Dispatch, "Batch mode").
	// Redispatch admits it with the same identity.
	Unoffered []AttemptRef
}

// OwnerFailure is one attempt of a batch that was handed off but not
// admitted. Err matches ErrOwner when the owner refused or failed it, and
// otherwise says why its receipt was not recorded.
type OwnerFailure struct {
	Attempt AttemptRef
	Err     error
}

// Dispatch admits pending activations: for each one discovered it plans with
// the owner, commits the attempt intent, records the handoff, calls the
// owner, and commits the receipt. Only storage errors, a stale or changed
// authority, and owner or fault-hook errors (and invalid plans) stop the
// pass, in both modes; they are returned with the summary so far, and
// everything committed before stays durable. A refusal that belongs to one run, at
// preparation or at handoff, is a Rejected entry and the batch goes on.
//
// Each pass reads a bounded part of the pending index (see
// DispatchOptions.Limit). A pass over all runs (RunID empty) that stopped
// on a bound before it saw the whole index leaves its position in the
// Store: the next such pass of the same Store resumes after it and, at the
// end of the index, goes on from the beginning. Every pass moves that
// position forward, so runs without concurrency room, however many, delay
// the work behind them by some passes but never hide it. A new Store, and
// every pass restricted to one run, starts at the beginning. Concurrent
// passes of one Store claim what they discover and pass over what another
// pass of the same Store holds, so they spread over different work
// instead of racing for the same activations. A pass over all runs that
// finds at preparation that another dispatcher took an activation (or its
// run's last concurrency room) learns that the run is being admitted
// elsewhere: one at a time, it leaves the rest of that run's activations
// to later passes (they are in no list of the summary and stay pending),
// and in either mode its Store's next passes prefer other runs for about
// a second, taking that run's work only when nothing else is left. Its
// next pass also passes over a random number of the free runs it meets
// first (one to three after its first loss, up to 63 after later ones,
// counting around from the beginning of the index when fewer are
// pending), so that Stores that lost a run together do not all move on to
// the same next run, and Stores that keep meeting move apart, each then
// draining the runs in front of it. This is how Stores spread over runs
// on a backend without shared claims. On a backend that shares claims
// across processes (backend.Claimer), passes of different Stores prefer
// disjoint work through the backend: a pass
// claims the attempts it is about to prepare (and, over all runs, the runs
// they belong to, since every admission writes its run's record), looks
// past what other Stores claimed for work nobody holds, takes claimed
// work only when that leaves it room (so a pass never comes back empty
// while work is pending), and gives its claims back when it returns (see
// WithClaimLease). Claims only spread work: the prepare transaction alone
// decides which pass admits an activation, so a lost or expired claim
// costs a wasted plan, never a second admission.
//
// # Batch mode
//
// With DispatchOptions.BatchSize above 1, a pass plans up to BatchSize
// candidates with the owner, then commits the intents of all of them in
// one transaction, records all their handoffs in a second, calls the owner
// (one DispatchBatch call for a BatchOwner, otherwise up to
// OwnerConcurrency Dispatch calls at once), and persists every receipt in
// a third. On a backend whose transactions compare and set attempts row
// by row (backend.Swapper), the handoff transaction still expects every
// run and activation unchanged and flips each attempt by a compare-and-set
// from the record its intent committed: only the attempts it changed are
// handed off, and one another transaction changed since is read and
// decided again alone, in the same transaction, without deciding the
// whole batch again. Each candidate is decided on its own in each transaction:
// admitted, raced, exhausted, rejected or unsupported as one at a time
// would decide it, and one candidate's refusal never fails the others.
// Per attempt the order is that of one-at-a-time mode: intent durable,
// then handoff recorded, then the owner called, then the receipt; the
// authority check runs in each of the three transactions, and the fault
// hook fires at each boundary for each attempt. Whatever stops a pass one
// at a time stops a batch where one at a time would stop, and the pass
// returns the same error: a plan error or an invalid plan ends the batch
// at its candidate (the candidates planned before it are admitted); a
// stale authority at planning (an owned pass verifies its authority before
// every plan, as one at a time), preparation or handoff leaves every
// candidate after it unprepared or not handed off; and the first failed
// owner call (or receipt that is not valid JSON) ends the owner calls:
// calls in flight are awaited, no new one starts, and every receipt the
// owner returned is recorded before the pass returns. A receipt refused
// at the receipt step (a stale authority, say) does not keep the batch's
// other receipts from being recorded. The stale activation is listed in
// DispatchSummary.Stale, failed owner calls and refused receipts in
// OwnerFailed, and the attempts the pass prepared and never offered to the
// owner in Unoffered. A BatchOwner's DispatchBatch counts as offering
// every attempt it is given.
//
// Releasing unoffered handoffs. Every handoff write stores a fresh random
// holder token. The decision to call the owner for an attempt is taken
// under one lock, and when a batch stops, exactly the attempts it handed
// off and never marked called are released: in one transaction, after the
// owner calls in flight returned and the receipts were recorded, each
// handoff goes back from recorded to pending (a
// dispatch_handoff_released event) if the attempt is still prepared,
// without a receipt, with the very token this pass wrote. The release is
// fenced by that token, not by the run's authority, and runs on a context
// detached from ctx with its own timeout, so it also happens when the pass
// ends on shutdown or on a stale authority. A recovery pass that
// re-dispatched one of those handoffs since (Redispatch's re-verify of a
// read-only attempt) replaced its token, so the release leaves it
// recorded and reports it in OwnerFailed. The owner is never called for
// an attempt once its release was attempted, whatever the outcome.
//
// A crash mid-batch leaves each attempt of the batch in one of the states
// a crash leaves one attempt in: no attempt (the intent transaction did
// not commit), prepared with its handoff pending (provably never
// dispatched), prepared with its handoff recorded and no receipt (maybe
// dispatched), or admitted. ReconcilePrepared, Redispatch and
// CancelNeverDispatched recover them exactly as after a one-at-a-time
// crash. The cost of batching is the window between the handoff
// transaction and the release: a crash there (during the owner calls, or
// after them and before the release commits) leaves every attempt the
// batch handed off without a receipt maybe dispatched, although the owner
// was called for only some of them. With a plain Owner that is the whole
// handed-off batch (up to BatchSize attempts, where one at a time leaves
// one); with a BatchOwner, which is offered the whole batch in one call,
// it is the batch either way. After the release commits, only the attempts
// the owner was called for remain maybe dispatched. A receipt refused at
// the receipt step because the authority moved leaves its attempt maybe
// dispatched, for the current authority's ReceiptLookup to recover.
func (s *Store) Dispatch(ctx context.Context, owner Owner, opts DispatchOptions, now time.Time) (DispatchSummary, error) {
	var sum DispatchSummary
	if err := requireOwner(owner); err != nil {
		return sum, err
	}
	limit, err := pageLimit("dispatch limit", opts.Limit)
	if err != nil {
		return sum, err
	}
	opts.Limit = limit
	opts.fault = faultseam.From[PreparedDispatch](ctx)
	if opts.RunID != "" {
		if err := ValidateID("run id", opts.RunID); err != nil {
			return sum, err
		}
	}
	if opts.Authority != nil {
		if opts.RunID == "" {
			return sum, invalid("dispatch authority", "requires a run id")
		}
		if err := validateAuthority(opts.Authority); err != nil {
			return sum, err
		}
	}
	if opts.BatchSize == 0 {
		opts.BatchSize = s.batchSize
	}
	if opts.BatchSize < 0 || opts.BatchSize > MaxPageLimit {
		return sum, invalid("dispatch batch size", "must be 0 to %d", MaxPageLimit)
	}
	if opts.OwnerConcurrency < 0 || opts.OwnerConcurrency > MaxPageLimit {
		return sum, invalid("dispatch owner concurrency", "must be 0 to %d", MaxPageLimit)
	}
	if _, err := toMS("now", now); err != nil {
		return sum, err
	}
	if opts.Authority != nil {
		if err := s.VerifyAuthority(ctx, opts.RunID, *opts.Authority); err != nil {
			return sum, err
		}
	}
	at, _ := toMS("now", now)
	cands, release, err := s.discoverClaimed(ctx, opts.RunID, opts.Limit, at)
	if err != nil {
		return sum, err
	}
	defer func() { release(sum.Admitted) }()
	if opts.BatchSize > 1 {
		sum, err = s.dispatchBatches(ctx, owner, cands, opts, now)
		if opts.RunID == "" {
			s.rememberRaced(cands, sum.Raced)
		}
		return sum, err
	}
	lost := map[string]bool{} // runs another dispatcher is admitting
	for _, c := range cands {
		if err := ctx.Err(); err != nil {
			return sum, err
		}
		check := authorityCheck{mode: authSnapshot, want: c.authority}
		if opts.Authority != nil {
			check = ownedBy(copyAuthority(opts.Authority), "")
		}
		if c.full {
			sum.Raced = append(sum.Raced, c.act.Key)
			continue
		}
		if lost[c.act.Key.RunID] {
			// Another dispatcher is admitting this run: leave the rest
			// of it to a later pass rather than race for each activation.
			continue
		}
		ref, outcome, err := s.admitOne(ctx, owner, c, check, opts.fault, now)
		switch outcome {
		case outAdmitted:
			sum.Admitted = append(sum.Admitted, ref)
		case outUnsupported:
			sum.Unsupported = append(sum.Unsupported, c.act.Key)
		case outTaken:
			sum.Raced = append(sum.Raced, c.act.Key)
			if opts.RunID == "" {
				lost[c.act.Key.RunID] = true
				s.lostRuns([]string{c.act.Key.RunID})
			}
		case outRaced:
			sum.Raced = append(sum.Raced, c.act.Key)
		case outExhausted:
			sum.Exhausted = append(sum.Exhausted, c.act.Key)
		case outRejected:
			sum.Rejected = append(sum.Rejected, Rejection{Key: c.act.Key, Err: err})
			err = nil
		}
		if errors.Is(err, ErrStaleAuthority) {
			sum.Stale = append(sum.Stale, c.act.Key)
		}
		if err != nil {
			return sum, err
		}
	}
	return sum, nil
}

// rememberRaced remembers, for a while, the runs of the candidates a
// batch pass planned and found raced (another dispatcher prepared them, or
// their run had no room left), so that this Store's next discoveries
// prefer other runs.
func (s *Store) rememberRaced(cands []candidate, raced []ActivationKey) {
	planned := map[ActivationKey]bool{}
	for _, c := range cands {
		if !c.full {
			planned[ActivationKey(c.act.Key)] = true
		}
	}
	var runs []string
	for _, k := range raced {
		if planned[k] {
			runs = append(runs, k.RunID)
		}
	}
	s.lostRuns(runs)
}

// dispatchBatches admits cands in batch mode, BatchSize planned
// candidates at a time, until a batch stops the pass.
func (s *Store) dispatchBatches(ctx context.Context, owner Owner, cands []candidate, opts DispatchOptions, now time.Time) (DispatchSummary, error) {
	var sum DispatchSummary
	for len(cands) > 0 {
		n, planned := 0, 0
		for n < len(cands) && planned < opts.BatchSize {
			if !cands[n].full {
				planned++
			}
			n++
		}
		if err := s.admitBatch(ctx, owner, cands[:n], opts, now, &sum); err != nil {
			return sum, err
		}
		cands = cands[n:]
	}
	return sum, nil
}

type outcome uint8

const (
	outFailed outcome = iota
	outAdmitted
	outUnsupported
	outRaced
	outTaken // raced: another dispatcher prepared it, or took its run's last room
	outExhausted
	outRejected
)

// admitOne runs the whole admission of one activation.
func (s *Store) admitOne(ctx context.Context, owner Owner, c candidate, check authorityCheck, fault faultHook, now time.Time) (AttemptRef, outcome, error) {
	run, act := c.run, c.act
	if check.mode == authOwned {
		if err := s.VerifyAuthority(ctx, act.Key.RunID, Authority(*check.want)); err != nil {
			return AttemptRef{}, outFailed, err
		}
	}
	plan, err := owner.Plan(ctx, toActivation(act))
	if err != nil {
		return AttemptRef{}, outFailed, fmt.Errorf("%w: plan %v: %w", ErrOwner, act.Key, err)
	}
	if plan == nil {
		return AttemptRef{}, outUnsupported, nil
	}
	if _, err := checkPlan(*plan); err != nil {
		// The owner's plan cannot be stored (an invalid side effect, an
		// intent that is not JSON or past the owner limits): an owner
		// error that still matches its cause (ErrInvalidInput, ErrTooLarge).
		return AttemptRef{}, outFailed, fmt.Errorf("%w: plan %v: %w", ErrOwner, act.Key, err)
	}
	p, kn, err := s.prepare(ctx, act.Key, *plan, check.with("preparation"), hintFrom(run, act), now)
	switch {
	case err == nil && p == nil, errors.Is(err, ErrConcurrencyCapacity):
		return AttemptRef{}, outTaken, nil
	case errors.Is(err, ErrResourceConflict):
		return AttemptRef{}, outRaced, nil
	case errors.Is(err, ErrNodeAllowanceExhausted), errors.Is(err, ErrRootAllowanceExhausted):
		if rerr := s.recordExhaustion(ctx, act.Key.RunID, check.with("exhaustion observation"), now); rerr != nil {
			return AttemptRef{}, outFailed, rerr
		}
		return AttemptRef{}, outExhausted, nil
	case errors.Is(err, ErrIneligible):
		if perr := s.park(ctx, act.Key, now); perr != nil {
			return AttemptRef{}, outFailed, perr
		}
		return AttemptRef{}, outRejected, err
	case err != nil:
		return AttemptRef{}, outFailed, err
	}
	if err := runFault(ctx, fault, faultseam.IntentCommitted, *p); err != nil {
		return AttemptRef{}, outFailed, err
	}
	if kn, err = s.handoff(ctx, p.Key(), check.with("dispatch handoff"), false, now, kn); err != nil {
		switch {
		case errors.Is(err, ErrIneligible):
			// The run (or the attempt) changed since prepare: the attempt
			// stays prepared with its handoff pending, provably never
			// dispatched, for reconciliation to recover.
			return AttemptRef{}, outRejected, err
		case errors.Is(err, ErrConflict):
			// Another caller recorded this attempt's handoff first.
			return AttemptRef{}, outTaken, nil
		}
		return AttemptRef{}, outFailed, err
	}
	receipt, err := owner.Dispatch(ctx, *p)
	if err != nil {
		return AttemptRef{}, outFailed, fmt.Errorf("%w: dispatch %s: %w", ErrOwner, p.Identity, err)
	}
	if err := runFault(ctx, fault, faultseam.OwnerAccepted, *p); err != nil {
		return AttemptRef{}, outFailed, err
	}
	if err := s.persistReceipt(ctx, refOf(*p), receipt, check.with("receipt"), now, kn); err != nil {
		return AttemptRef{}, outFailed, err
	}
	if err := runFault(ctx, fault, faultseam.ReceiptCommitted, *p); err != nil {
		return AttemptRef{}, outFailed, err
	}
	return AttemptRef{Key: p.Key(), Identity: p.Identity}, outAdmitted, nil
}

func runFault(ctx context.Context, f faultHook, b faultseam.Boundary, p PreparedDispatch) error {
	if f == nil {
		return nil
	}
	if err := f(ctx, b, p); err != nil {
		return fmt.Errorf("%w: fault at %s: %w", ErrOwner, b, err)
	}
	return nil
}

// candidate is one discovered activation with the facts the batch needs.
type candidate struct {
	act       backend.Activation
	run       backend.Run        // the run at discovery
	authority *backend.Authority // the run's authority at discovery (snapshot)
	full      bool               // the run had no concurrency room left at discovery
}

// discoveryRowsPerLimit bounds the pending-index rows one pass reads, as a
// multiple of its limit.
const discoveryRowsPerLimit = 4

// pendingPos is a position in the pending index: strictly after after, or
// after every activation of after's run when afterRun is set. The zero
// value is the beginning.
type pendingPos struct {
	after    backend.ActivationKey
	afterRun bool
}

// covers reports whether a pass that began at p has already seen k: k is
// after p in index order.
func (p pendingPos) covers(k backend.ActivationKey) bool {
	if p.afterRun {
		return k.RunID > p.after.RunID
	}
	switch {
	case k.RunID != p.after.RunID:
		return k.RunID > p.after.RunID
	case k.NodeID != p.after.NodeID:
		return k.NodeID > p.after.NodeID
	}
	return k.ActivationID > p.after.ActivationID
}

// discoveryCursor is where the next pass over all runs resumes.
type discoveryCursor struct {
	mu  sync.Mutex
	pos pendingPos
}

func (c *discoveryCursor) load() pendingPos {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.pos
}

func (c *discoveryCursor) save(p pendingPos) {
	c.mu.Lock()
	c.pos = p
	c.mu.Unlock()
}

// maxDiscoveryPresize bounds the candidates discover makes room for up
// front (a pass may take up to twice its limit: those to plan and the
// full runs).
const maxDiscoveryPresize = 1024

// discover reads, in one snapshot, the activations one pass takes: up to
// limit to plan, and up to limit runs without concurrency room, each
// reported once (its first activation, as full) and the rest of it passed
// over, so that one busy run holds one place. A run counts as full only
// when no check that comes before concurrency capacity (deadline, retry
// cap, node and root allowance) would refuse its activation first; such
// an activation is planned like any other and preparation reports the
// refusal. It reads at most discoveryRowsPerLimit*limit index rows and the
// runs (and roots) they name. A pass over all runs starts where the
// previous one of this Store stopped and, at the end of the index, goes on
// from the beginning up to that place; a pass that saw the whole index
// makes the next one start at the beginning.
func (s *Store) discover(ctx context.Context, runID string, limit int, at int64) ([]candidate, error) {
	var start pendingPos
	spread := 0 // runs to pass over first (see lostRuns)
	if runID == "" {
		start = s.disc.load()
		spread = s.spread.take()
	}
	var (
		out  []candidate
		next pendingPos
	)
	err := s.view(ctx, func(r backend.ReadTx) error {
		if out == nil {
			out = make([]candidate, 0, min(max(limit, 0), maxDiscoveryPresize))
		}
		out = out[:0]
		// drawn: the runs this pass is to pass over; spread: those left.
		spread, drawn := spread, spread
		runs := map[string]backend.Run{}
		takenRun := map[string]int64{}  // planned, by run
		takenTree := map[string]int64{} // planned, by root
		planned, reported := 0, 0
		rowsLeft := discoveryRowsPerLimit * limit
		rowsLeft += spread // one row more for each run to pass over: only its first is read
		pos := start
		wrap := start != (pendingPos{}) // the scan may wrap to the beginning
		inWrap := false
		skipped := map[string]bool{} // runs whose remaining activations are passed over
		spreadOver := map[string]bool{}
		q := backend.AdmissibleQuery{RunID: runID, After: start.after, AfterRun: start.afterRun}
		// consider takes act as a candidate, or as its run's full entry,
		// or passes over it; it reports whether act's run is now passed
		// over (the pass's position then moves past the whole run).
		consider := func(act backend.Activation) bool {
			id := act.Key.RunID
			if skipped[id] {
				return true
			}
			run, ok := runs[id]
			if !ok {
				return false
			}
			root, ok := runs[run.RootID]
			refusedFirst := !ok // a missing root: let preparation report it
			if ok {
				refusedFirst = act.LastAttempt == ^uint32(0) ||
					limitsBeforeCapacity(run, root, act.LastAttempt+1, at, takenRun[id], takenTree[run.RootID]) != nil
			}
			room := run.Limits.ConcurrencyCap - run.ActiveCount - takenRun[id]
			switch {
			case refusedFirst || room > 0:
				out = append(out, candidate{act: act, run: run, authority: run.Authority})
				planned++
				if !refusedFirst {
					takenRun[id]++
					takenTree[run.RootID]++
				}
			case reported < limit:
				out = append(out, candidate{act: act, run: run, authority: run.Authority, full: true})
				reported++
				skipped[id] = true
				return true
			default:
				skipped[id] = true
				return true
			}
			return false
		}
		var passed []backend.Activation   // of runs passed over to spread (see lostRuns)
		var deferred []backend.Activation // of runs another pass holds
		var claimed []backend.Activation  // that another Store claimed
	scan:
		for planned < limit && rowsLeft > 0 {
			q.Limit = min(limit-planned, rowsLeft)
			hopping := spread > 0
			if hopping {
				// Passing over runs: one row of each is enough, and its
				// run is loaded only if the pass comes back to it.
				q.Limit = 1
			}
			page, err := r.AdmissibleActivations(ctx, q)
			if err != nil {
				return err
			}
			rowsLeft -= len(page)
			if !hopping {
				if err := loadRuns(ctx, r, runs, page); err != nil {
					return err
				}
			}
			for _, act := range page {
				if inWrap && start.covers(act.Key) {
					// Back where this pass began: the whole index is seen.
					pos = pendingPos{}
					break scan
				}
				pos = pendingPos{after: act.Key}
				switch {
				case s.claims.has(act.Key):
					continue // another pass of this Store is admitting it
				case s.foreign.hasAct(act.Key):
					// Another Store claimed it: last of all.
					claimed = append(claimed, act)
					continue
				case s.claims.runHeld(act.Key.RunID), s.foreign.runHeld(act.Key.RunID):
					// Another pass of this Store (or another Store) is
					// admitting this run: prefer other runs, so that
					// concurrent passes do not contend for one run's
					// records, and read on from the next run rather than
					// spend the pass's rows on this one's.
					deferred = append(deferred, act)
					pos.afterRun = true
					continue
				case spreadOver[act.Key.RunID] || spread > 0 && takenRun[act.Key.RunID] == 0 && !skipped[act.Key.RunID]:
					// Spreading after a lost run: pass over this one.
					if !spreadOver[act.Key.RunID] {
						spreadOver[act.Key.RunID] = true
						spread--
					}
					passed = append(passed, act)
					pos.afterRun = true
					continue
				}
				if consider(act) {
					pos.afterRun = true
				}
			}
			if len(page) < q.Limit {
				if !wrap || inWrap {
					pos = pendingPos{} // the end: the next pass starts over
					break
				}
				// The end of the index: go on from its beginning up to
				// where this pass began.
				inWrap = true
				q = backend.AdmissibleQuery{RunID: runID}
				continue
			}
			q.After, q.AfterRun = pos.after, pos.afterRun
		}
		// The runs this pass passed over to spread, then what it read of
		// runs other passes hold, then what other Stores claimed, when it
		// found too little elsewhere: taking it spreads nothing, but
		// leaves no work idle. When the pass met fewer free runs than it
		// was to pass over, it counts on around them from the first, and
		// takes first the run it would have stopped at.
		if spread > 0 && len(passed) > 0 {
			n := drawn % len(passed)
			passed = append(passed[n:], passed[:n]...)
		}
		took := map[backend.ActivationKey]bool{} // a run met twice (the scan wrapped) is read twice
		for _, act := range passed {
			if planned >= limit {
				break
			}
			if took[act.Key] {
				continue
			}
			took[act.Key] = true
			if err := loadRuns(ctx, r, runs, []backend.Activation{act}); err != nil {
				return err
			}
			if consider(act) {
				continue
			}
			// The rest of the run: only its first row was read.
			q := backend.AdmissibleQuery{RunID: act.Key.RunID, After: act.Key}
			for planned < limit && rowsLeft > 0 {
				q.Limit = min(limit-planned, rowsLeft)
				page, err := r.AdmissibleActivations(ctx, q)
				if err != nil {
					return err
				}
				rowsLeft -= len(page)
				for _, a := range page {
					if took[a.Key] || s.claims.has(a.Key) || s.foreign.hasAct(a.Key) {
						continue
					}
					took[a.Key] = true
					if consider(a) {
						break
					}
				}
				if len(page) < q.Limit || skipped[act.Key.RunID] {
					break
				}
				q.After = page[len(page)-1].Key
			}
		}
		for _, act := range slices.Concat(deferred, claimed) {
			if planned >= limit {
				break
			}
			// Its run was loaded with its page, unless it was read while
			// passing over runs.
			if err := loadRuns(ctx, r, runs, []backend.Activation{act}); err != nil {
				return err
			}
			consider(act)
		}
		next = pos
		return nil
	})
	if err == nil && runID == "" {
		s.disc.save(next)
	}
	return out, err
}

// loadRuns adds to runs the runs of acts, and their roots, not loaded yet.
func loadRuns(ctx context.Context, r backend.ReadTx, runs map[string]backend.Run, acts []backend.Activation) error {
	var ids []string
	for _, a := range acts {
		if _, ok := runs[a.Key.RunID]; !ok {
			ids = append(ids, a.Key.RunID)
			runs[a.Key.RunID] = backend.Run{} // placeholder; replaced below
		}
	}
	if err := loadInto(ctx, r, runs, ids); err != nil {
		return err
	}
	var roots []string
	for _, id := range ids {
		if run, ok := runs[id]; ok {
			if _, loaded := runs[run.RootID]; !loaded {
				roots = append(roots, run.RootID)
				runs[run.RootID] = backend.Run{}
			}
		}
	}
	return loadInto(ctx, r, runs, roots)
}

// loadInto loads the runs ids (placeholders in runs) and deletes the
// placeholders of those that do not exist.
func loadInto(ctx context.Context, r backend.ReadTx, runs map[string]backend.Run, ids []string) error {
	if len(ids) == 0 {
		return nil
	}
	f, err := r.Load(ctx, backend.Lookup{Runs: ids})
	if err != nil {
		return err
	}
	for _, id := range ids {
		if run, ok := f.Runs[id]; ok {
			runs[id] = run
		} else {
			delete(runs, id)
		}
	}
	return nil
}

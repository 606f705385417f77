package workflow

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/wfstore/wfstore/backend"
	"github.com/wfstore/wfstore/internal/faultseam"
)

// Batch mode: one pass admits a batch of candidates in three transactions
// instead of three per candidate. Each step decides every candidate on its
// own, with the same code as one at a time, on records that already carry
// the decisions taken for the candidates before it in the same
// transaction; a refusal undoes only that candidate's writes. The steps
// keep the per-attempt order of one at a time: every attempt's intent
// commits before its handoff, its handoff before the owner is called, and
// the owner's acceptance before its receipt.

// batchSlot is the outcome of one candidate at preparation.
type batchSlot struct {
	out outcome
	err error
}

// prepared is one attempt a batch prepared, with the check that follows it
// through handoff and receipt, and the holder token of the handoff the
// batch recorded for it.
type prepared struct {
	p     PreparedDispatch
	check authorityCheck
	token string
}

// batchPass is what stays the same through one batch admission: its
// options, its time (now, and at: now in unix milliseconds) and the
// summary it reports into.
type batchPass struct {
	opts DispatchOptions
	at   int64
	now  time.Time
	sum  *DispatchSummary
}

// ownerCall is one call of the owner for a batch: the attempts handed off
// to it, and for each whether the owner was called (called[i]) and what it
// returned (receipts[i]).
type ownerCall struct {
	handed   []prepared
	receipts []DispatchResult
	called   []bool
}

// errNotReached marks a candidate a batch step left undecided because the
// step met, before it, a refusal that stops the pass.
var errNotReached = errors.New("workflow: not reached: the pass stopped before it")

// stopsPass reports whether a refusal of one candidate at preparation
// stops the pass, as it does one at a time: every refusal but a race, an
// exhaustion and a refusal that belongs to the candidate's run.
func stopsPass(err error) bool {
	if err == nil {
		return false
	}
	for _, e := range []error{ErrConcurrencyCapacity, ErrResourceConflict, ErrNodeAllowanceExhausted,
		ErrRootAllowanceExhausted, ErrIneligible} {
		if errors.Is(err, e) {
			return false
		}
	}
	return true
}

// admitBatch admits one batch of candidates (full ones are reported raced
// in their place) and reports every outcome in sum. A non-nil error stops
// the pass, as the same error stops it one at a time: a plan error, an
// invalid plan, a stale authority at any boundary, an owner failure, a
// receipt that cannot be recorded, a fault-hook or storage error, or ctx
// done. The batch stops where one at a time would: no candidate after the
// failing plan or the stale authority is planned or prepared, and no owner
// call starts after a failed one; what the batch had already started is
// finished first (the candidates planned before are admitted, in-flight
// owner calls are awaited and every receipt the owner returned is
// recorded), and the attempts it prepared and never offered to the owner
// are reported in sum.Unoffered.
func (s *Store) admitBatch(ctx context.Context, owner Owner, cands []candidate, opts DispatchOptions, now time.Time, sum *DispatchSummary) error {
	at, err := toMS("now", now)
	if err != nil {
		return err
	}
	var (
		stops []error // why the pass stops once this batch is done
		items []prepItem
		index []int // candidate index of each item
		stale *ActivationKey
	)
	slots := make([]batchSlot, len(cands))
	for i, c := range cands {
		if c.full {
			slots[i].out = outRaced
			continue
		}
		err := ctx.Err()
		if check := c.check(opts); err == nil && check.mode == authOwned {
			// As one at a time: an owned pass plans nothing under a stale
			// authority.
			if err = s.VerifyAuthority(ctx, c.act.Key.RunID, Authority(*check.want)); errors.Is(err, ErrStaleAuthority) {
				k := c.act.Key
				stale = &k
			}
		}
		if err == nil {
			var plan *Plan
			plan, err = owner.Plan(ctx, toActivation(c.act))
			switch {
			case err != nil:
				err = fmt.Errorf("%w: plan %v: %w", ErrOwner, c.act.Key, err)
			case plan == nil:
				slots[i].out = outUnsupported
				continue
			default:
				var intent []byte
				if intent, err = checkPlan(*plan); err == nil {
					items = append(items, prepItem{key: c.act.Key, effect: plan.SideEffect, intent: intent,
						check: c.check(opts).with("preparation"), hint: hintFrom(c.run, c.act)})
					index = append(index, i)
					continue
				}
				err = fmt.Errorf("%w: plan %v: %w", ErrOwner, c.act.Key, err)
			}
		}
		// The pass stops at this candidate: the batch is what was planned
		// before it.
		stops = append(stops, err)
		cands, slots = cands[:i], slots[:i]
		break
	}
	var ready []prepared
	var kn *batchKnown
	if len(items) > 0 {
		ready = make([]prepared, 0, len(items))
		var res []prepResult
		res, kn, err = s.prepareBatch(ctx, items, at)
		if err != nil {
			return errors.Join(append(stops, err)...)
		}
		for j, r := range res {
			slot := &slots[index[j]]
			switch {
			case errors.Is(r.err, errNotReached):
				slot.out = outFailed
			case r.err == nil && r.p == nil,
				errors.Is(r.err, ErrConcurrencyCapacity), errors.Is(r.err, ErrResourceConflict):
				slot.out = outRaced
			case errors.Is(r.err, ErrNodeAllowanceExhausted), errors.Is(r.err, ErrRootAllowanceExhausted):
				slot.out = outExhausted
			case errors.Is(r.err, ErrIneligible):
				slot.out, slot.err = outRejected, r.err
			case r.err != nil:
				slot.out = outFailed
				if errors.Is(r.err, ErrStaleAuthority) {
					sum.Stale = append(sum.Stale, items[j].key)
					stale = nil // reported at the preparation that met it
				}
				stops = append(stops, r.err)
			default:
				slot.out = outAdmitted
				ready = append(ready, prepared{p: *r.p, check: items[j].check})
			}
		}
	}
	if stale != nil {
		sum.Stale = append(sum.Stale, *stale)
	}
	// unoffered reports attempts prepared and never handed to the owner.
	unoffered := func(rs []prepared) {
		for _, r := range rs {
			sum.Unoffered = append(sum.Unoffered, refOf(r.p))
		}
	}
	// The follow-up writes of refusals, as one at a time makes them: one
	// exhaustion observation per run, then the parked activations.
	observed := map[string]bool{}
	for i, slot := range slots {
		c := cands[i]
		var err error
		switch {
		case slot.out == outExhausted && !observed[c.act.Key.RunID]:
			observed[c.act.Key.RunID] = true
			err = s.recordExhaustion(ctx, c.act.Key.RunID, c.check(opts).with("exhaustion observation"), now)
		case slot.out == outRejected:
			err = s.park(ctx, c.act.Key, now)
		}
		if err != nil {
			if errors.Is(err, ErrStaleAuthority) {
				sum.Stale = append(sum.Stale, c.act.Key)
			}
			unoffered(ready)
			return errors.Join(append(stops, err)...)
		}
	}
	for i, slot := range slots {
		k := cands[i].act.Key
		switch slot.out {
		case outUnsupported:
			sum.Unsupported = append(sum.Unsupported, k)
		case outRaced:
			sum.Raced = append(sum.Raced, k)
		case outExhausted:
			sum.Exhausted = append(sum.Exhausted, k)
		case outRejected:
			sum.Rejected = append(sum.Rejected, Rejection{Key: k, Err: slot.err})
		}
	}
	if len(ready) == 0 {
		return errors.Join(stops...)
	}
	for _, r := range ready {
		if err := runFault(ctx, opts.fault, faultseam.IntentCommitted, r.p); err != nil {
			unoffered(ready)
			return errors.Join(append(stops, err)...)
		}
	}
	handed, kn, err := s.handoffBatch(ctx, ready, kn, at, sum)
	if err != nil {
		stops = append(stops, err)
	}
	if len(handed) == 0 {
		return errors.Join(stops...)
	}
	receipts, called := s.callOwner(ctx, owner, handed, opts.OwnerConcurrency)
	var held []prepared // handed off, never offered: the pass stopped first
	for i, r := range handed {
		if !called[i] {
			held = append(held, r)
		}
	}
	pass := batchPass{opts: opts, at: at, now: now, sum: sum}
	stops = append(stops, s.admitOffered(ctx, pass, ownerCall{handed: handed, receipts: receipts, called: called}, kn)...)
	if len(held) > 0 {
		stops = append(stops, s.releaseUnoffered(ctx, held, now, sum)...)
	}
	return errors.Join(stops...)
}

// admitOffered records the receipts of the handed-off attempts the owner
// was called for and accepted (receipts[i], called[i]); a failed call or
// an invalid receipt is reported in sum.OwnerFailed, and every error is
// returned.
func (s *Store) admitOffered(ctx context.Context, pass batchPass, call ownerCall, kn *batchKnown) []error {
	handed, receipts, called := call.handed, call.receipts, call.called
	opts, now, sum := pass.opts, pass.now, pass.sum
	var (
		stops    []error
		accepted = make([]prepared, 0, len(handed))
		rcs      = make([][]byte, 0, len(handed))
	)
	for i, r := range handed {
		if !called[i] {
			continue
		}
		rc, err := receipts[i].Receipt, receipts[i].Err
		if err != nil {
			err = fmt.Errorf("%w: dispatch %s: %w", ErrOwner, r.p.Identity, err)
		} else if rc, err = ownerJSON("dispatch receipt", rc); err != nil {
			// A receipt the store cannot keep settles its attempt now.
			err = s.persistReceipt(ctx, refOf(r.p), receipts[i].Receipt, r.check.with("receipt"), now, nil)
			if _, ok := errors.AsType[*UnstorableError](err); !ok && isStorage(err) {
				return append(stops, err)
			}
		}
		if err != nil {
			sum.OwnerFailed = append(sum.OwnerFailed, OwnerFailure{Attempt: refOf(r.p), Err: err})
			stops = append(stops, err)
			continue
		}
		accepted = append(accepted, r)
		rcs = append(rcs, rc)
	}
	for _, r := range accepted {
		if err := runFault(ctx, opts.fault, faultseam.OwnerAccepted, r.p); err != nil {
			return append(stops, err)
		}
	}
	if len(accepted) == 0 {
		return stops
	}
	admitted, errs := s.receiptBatch(ctx, pass, accepted, rcs, kn)
	stops = append(stops, errs...)
	for _, r := range admitted {
		if err := runFault(ctx, opts.fault, faultseam.ReceiptCommitted, r.p); err != nil {
			return append(stops, err)
		}
		sum.Admitted = append(sum.Admitted, refOf(r.p))
	}
	return stops
}

// releaseUnoffered releases the handoffs of held, which this batch
// recorded and never offered to the owner (see releaseHandoffs): each one
// released is reported in sum.Unoffered, provably never dispatched. One
// that is no longer this dispatcher's (a recovery pass re-dispatched it,
// or it settled), or that the release could not reach, keeps its recorded
// handoff and is reported in sum.OwnerFailed, left for reconciliation.
func (s *Store) releaseUnoffered(ctx context.Context, held []prepared, now time.Time, sum *DispatchSummary) []error {
	hs := make([]heldHandoff, len(held))
	for i, r := range held {
		hs[i] = heldHandoff{key: r.p.Key(), token: r.token}
	}
	released, err := s.releaseHandoffs(ctx, hs, now)
	if err != nil {
		err = fmt.Errorf("release of unoffered handoffs: %w", err)
		for _, r := range held {
			sum.OwnerFailed = append(sum.OwnerFailed, OwnerFailure{Attempt: refOf(r.p), Err: err})
		}
		return []error{err}
	}
	var fails []error
	for i, r := range held {
		if released[i] {
			sum.Unoffered = append(sum.Unoffered, refOf(r.p))
			continue
		}
		err := stateErr(ErrConflict, "handoff of %s is no longer this dispatcher's; not released", r.p.Identity)
		sum.OwnerFailed = append(sum.OwnerFailed, OwnerFailure{Attempt: refOf(r.p), Err: err})
		fails = append(fails, err)
	}
	return fails
}

func refOf(p PreparedDispatch) AttemptRef { return AttemptRef{Key: p.Key(), Identity: p.Identity} }

// check returns the authority check a candidate is admitted under: the
// owned authority of an owned dispatch, otherwise the run's authority as
// discovery saw it.
func (c candidate) check(opts DispatchOptions) authorityCheck {
	if opts.Authority != nil {
		return ownedBy(copyAuthority(opts.Authority), "")
	}
	return authorityCheck{mode: authSnapshot, want: c.authority}
}

// batchKnown holds the records a batch step committed, as it wrote them,
// for the next step to expect unchanged (see known). The activations and
// attempts are held by pointer into actv and attv, filled by add (a map
// of values this large would allocate each one on its own); a record they
// point to is never changed.
type batchKnown struct {
	runs map[string]backend.Run
	acts map[backend.ActivationKey]*backend.Activation
	atts map[backend.AttemptKey]*backend.Attempt
	actv []backend.Activation
	attv []backend.Attempt
}

// newBatchKnown returns an empty batchKnown sized for n attempts, so that
// filling it does not grow its maps.
func newBatchKnown(n int) *batchKnown {
	return &batchKnown{runs: map[string]backend.Run{},
		acts: make(map[backend.ActivationKey]*backend.Activation, n), atts: make(map[backend.AttemptKey]*backend.Attempt, n),
		actv: make([]backend.Activation, 0, n), attv: make([]backend.Attempt, 0, n)}
}

// knownFrom returns the records of f as a batchKnown (its runs map is
// f's own).
func knownFrom(f backend.Found) *batchKnown {
	k := &batchKnown{runs: f.Runs, acts: make(map[backend.ActivationKey]*backend.Activation, len(f.Activations)),
		atts: make(map[backend.AttemptKey]*backend.Attempt, len(f.Attempts))}
	for key, a := range f.Activations {
		k.acts[key] = &a
	}
	for key, a := range f.Attempts {
		k.atts[key] = &a
	}
	return k
}

// add records act under ak and att under key. A slot filled past the
// capacity newBatchKnown gave moves the slices, never the records the
// maps already point to.
func (k *batchKnown) add(ak backend.ActivationKey, act backend.Activation, key backend.AttemptKey, att backend.Attempt) {
	k.actv = append(k.actv, act)
	k.acts[ak] = &k.actv[len(k.actv)-1]
	k.attv = append(k.attv, att)
	k.atts[key] = &k.attv[len(k.attv)-1]
}

// act returns the activation known under key, the zero one when none is.
func (k *batchKnown) act(key backend.ActivationKey) backend.Activation {
	if a, ok := k.acts[key]; ok {
		return *a
	}
	return backend.Activation{}
}

// att returns the attempt known under key, and whether one is.
func (k *batchKnown) att(key backend.AttemptKey) (backend.Attempt, bool) {
	if a, ok := k.atts[key]; ok {
		return *a, true
	}
	return backend.Attempt{}, false
}

// expected returns every known record, in key order.
func (k *batchKnown) expected() backend.Expected {
	var e backend.Expected
	for _, id := range slices.Sorted(maps.Keys(k.runs)) {
		e.Runs = append(e.Runs, k.runs[id])
	}
	e.Activations = sortedBy(k.acts, compareActivationKeys)
	e.Attempts = sortedBy(k.atts, func(a, b backend.AttemptKey) int {
		return cmp.Or(compareActivationKeys(a.ActivationKey, b.ActivationKey), cmp.Compare(a.Attempt, b.Attempt))
	})
	return e
}

func compareActivationKeys(a, b backend.ActivationKey) int {
	return cmp.Or(cmp.Compare(a.RunID, b.RunID), cmp.Compare(a.NodeID, b.NodeID), cmp.Compare(a.ActivationID, b.ActivationID))
}

func sortedBy[K comparable, V any](m map[K]*V, cmp func(a, b K) int) []V {
	keys := make([]K, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, cmp)
	out := make([]V, len(keys))
	for i, k := range keys {
		out[i] = *m[k]
	}
	return out
}

// prepResult is one item's preparation: its prepared dispatch, or nil
// with a nil error when it was not admissible now, or the refusal.
type prepResult struct {
	p   *PreparedDispatch
	err error
}

// prepareBatch prepares items in one transaction, each decided on its own
// in order, and returns the records it committed for the handoff. A
// refusal that stops the pass (a stale authority, say) leaves the items
// after it undecided (errNotReached), as one at a time never prepares
// them.
func (s *Store) prepareBatch(ctx context.Context, items []prepItem, at int64) ([]prepResult, *batchKnown, error) {
	var (
		res []prepResult
		kn  *batchKnown
	)
	err := s.update(ctx, func(tx backend.Tx, w *batch) error {
		res, kn = make([]prepResult, len(items)), newBatchKnown(len(items))
		var l backend.Lookup
		runs := map[string]bool{}
		for _, it := range items {
			if !runs[it.key.RunID] {
				runs[it.key.RunID] = true
				l.Runs = append(l.Runs, it.key.RunID)
			}
			l.Activations = append(l.Activations, it.key)
			h := it.hint
			if h.rootID != "" && !runs[h.rootID] {
				runs[h.rootID] = true
				l.Runs = append(l.Runs, h.rootID)
			}
			if h.group != nil {
				l.Groups = append(l.Groups, *h.group)
			}
			for _, c := range h.claims {
				l.Resources = append(l.Resources, backend.ResourceRef{RunID: it.key.RunID, Resource: c.Resource})
			}
		}
		g, err := tx.Load(ctx, l)
		if err != nil {
			return err
		}
		stopped := false
		for i, it := range items {
			if stopped {
				res[i].err = errNotReached
				continue
			}
			m := w.Mark()
			p, k, err := decidePrepare(ctx, tx, w, &g, it, at)
			switch {
			case errors.Is(err, errNoop):
				w.Truncate(m)
			case err != nil && isStorage(err):
				return err
			case err != nil:
				w.Truncate(m)
				res[i].err = err
				stopped = stopsPass(err)
			default:
				res[i].p = p
				kn.add(k.act.Key, k.act, k.att.Key, k.att)
			}
		}
		for _, r := range res {
			if r.p != nil {
				kn.runs[r.p.Activation.Key.RunID] = g.Runs[r.p.Activation.Key.RunID]
			}
		}
		if w.Empty() {
			return errNoop
		}
		return nil
	})
	if err != nil && !errors.Is(err, errNoop) {
		return nil, nil, err
	}
	return res, kn, nil
}

// isStorage reports whether err came from the backend rather than from a
// decision: such an error fails the whole transaction.
func isStorage(err error) bool {
	for _, e := range []error{ErrIneligible, ErrConcurrencyCapacity, ErrResourceConflict, ErrNodeAllowanceExhausted,
		ErrRootAllowanceExhausted, ErrStaleAuthority, ErrNotFound, ErrConflict, ErrInvalidInput} {
		if errors.Is(err, e) {
			return false
		}
	}
	return true
}

// handoffBatch records the handoff of every ready attempt in one
// transaction and returns those handed off, with the records it committed.
// A refused handoff is reported as one at a time reports it (rejected:
// the attempt stays prepared, provably never dispatched; raced: another
// caller recorded it). Any other refusal (a stale authority, say) stops
// the pass, as one at a time: it is returned, and the attempts from it on
// are not handed off and are reported unoffered. On a backend.Swapper
// the attempts are flipped by per-row compare-and-set (see swapKnown).
func (s *Store) handoffBatch(ctx context.Context, ready []prepared, kn *batchKnown, at int64, sum *DispatchSummary) ([]prepared, *batchKnown, error) {
	var (
		errs []error
		next *batchKnown
	)
	// A fresh holder token per attempt, made outside the transaction.
	ready = slices.Clone(ready)
	for i := range ready {
		ready[i].token = newHandoffToken()
	}
	decide := func(tx backend.Tx, w *batch, recs *batchKnown) error {
		runs := recs.runs
		errs, next = make([]error, len(ready)), newBatchKnown(len(ready))
		stopped := false
		// Each item decides on its own copy of its run, in one buffer
		// allocated once per decision of the batch.
		run := new(backend.Run)
		for i, r := range ready {
			if stopped {
				errs[i] = errNotReached
				continue
			}
			k := r.p.Key()
			var ok bool
			*run, ok = runs[k.RunID]
			if !ok {
				errs[i] = stateErr(ErrNotFound, "run %q", k.RunID)
				stopped = true
				continue
			}
			att, found := recs.att(k)
			act := recs.act(k.ActivationKey)
			m := w.Mark()
			kn, err := decideHandoff(ctx, tx, w, handoffInput{
				run: run, act: act, att: att, found: found, key: k,
				check: r.check.with("dispatch handoff"), token: r.token, at: at,
			})
			switch {
			case errors.Is(err, errNoop):
				w.Truncate(m)
				next.add(k.ActivationKey, act, k, att)
			case err != nil && isStorage(err):
				return err
			case err != nil:
				w.Truncate(m)
				errs[i] = err
				stopped = !errors.Is(err, ErrIneligible) && !errors.Is(err, ErrConflict)
			default:
				runs[k.RunID] = *run
				next.add(k.ActivationKey, kn.act, k, kn.att)
			}
		}
		for i, r := range ready {
			if errs[i] == nil {
				next.runs[r.p.Activation.Key.RunID] = runs[r.p.Activation.Key.RunID]
			}
		}
		return nil
	}
	// partial: the known path refused the attempts it could not flip and
	// handed off the others (see swapKnown).
	partial := false
	// swapKnown flips, on the known path of a backend.Swapper, the handoffs
	// the decision on known records made: each attempt by a compare-and-set
	// from its known record to the one decided (an attempt the decision
	// left as it was, to itself), so that the attempts need not be
	// expected unchanged; the run and activation records were. Only the
	// rows this caller changed count as handed off. Each other attempt is
	// read and the batch decided again in the same transaction, on the
	// known records but that one: it is refused (or handed off) as on
	// records read now, without deciding the whole batch again.
	swapKnown := func(tx backend.Tx, sw backend.Swapper, w *batch) error {
		if slices.ContainsFunc(errs, func(e error) bool { return e != nil }) {
			return errReread // refused on known records: decided again on read ones
		}
		swaps := make([]backend.AttemptSwap, len(ready))
		for i, r := range ready {
			k := r.p.Key()
			old, _ := kn.att(k)
			nw, _ := next.att(k)
			swaps[i] = backend.AttemptSwap{Old: old, New: nw}
		}
		won, err := sw.SwapAttempts(ctx, swaps)
		if err != nil {
			return err
		}
		var lost []backend.AttemptKey
		for i, ok := range won {
			if !ok {
				lost = append(lost, swaps[i].Old.Key)
			}
		}
		if len(lost) > 0 {
			f, err := tx.Load(ctx, backend.Lookup{Attempts: lost})
			if err != nil {
				return err
			}
			atts := maps.Clone(kn.atts)
			for _, k := range lost {
				if a, ok := f.Attempts[k]; ok {
					atts[k] = &a
				} else {
					delete(atts, k)
				}
			}
			*w = batch{}
			if err := decide(tx, w, &batchKnown{runs: maps.Clone(kn.runs), acts: kn.acts, atts: atts}); err != nil {
				return err
			}
			partial = true
		}
		for i, ok := range won {
			if !ok {
				continue
			}
			if nw, _ := next.att(swaps[i].Old.Key); errs[i] != nil || backend.CompareExpected(nw, swaps[i].New) != nil {
				// The same decision on the same records: never. Decided
				// again on read records, the swaps rolled back.
				return errReread
			}
			w.Swapped(swaps[i].New)
		}
		return nil
	}
	err := s.decideBatch(ctx, kn, true, func() bool { return partial || !slices.ContainsFunc(errs, func(e error) bool { return e != nil }) },
		func(tx backend.Tx, w *batch, k *batchKnown) error {
			partial = false
			if err := decide(tx, w, k); err != nil {
				return err
			}
			if sw, ok := tx.(backend.Swapper); ok {
				return swapKnown(tx, sw, w)
			}
			return nil
		},
		func(tx backend.Tx, w *batch) error {
			var l backend.Lookup
			for _, r := range ready {
				k := r.p.Key()
				l.Runs = append(l.Runs, k.RunID)
				l.Activations = append(l.Activations, k.ActivationKey)
				l.Attempts = append(l.Attempts, k)
			}
			f, err := tx.Load(ctx, l)
			if err != nil {
				return err
			}
			return decide(tx, w, knownFrom(f))
		})
	if err != nil {
		hs := make([]HeldHandoff, len(ready))
		for i, r := range ready {
			sum.Unoffered = append(sum.Unoffered, refOf(r.p))
			hs[i] = HeldHandoff{Attempt: refOf(r.p), Token: r.token}
		}
		err = handoffOutcomeUnknown(err, hs)
		return nil, nil, err
	}
	var (
		out  []prepared
		stop error
	)
	for i, r := range ready {
		switch err := errs[i]; {
		case err == nil:
			out = append(out, r)
		case errors.Is(err, ErrIneligible):
			sum.Rejected = append(sum.Rejected, Rejection{Key: r.p.Activation.Key, Err: err})
		case errors.Is(err, ErrConflict):
			sum.Raced = append(sum.Raced, r.p.Activation.Key)
		default:
			if errors.Is(err, ErrStaleAuthority) {
				sum.Stale = append(sum.Stale, r.p.Activation.Key)
			}
			if !errors.Is(err, errNotReached) {
				stop = err
			}
			sum.Unoffered = append(sum.Unoffered, refOf(r.p))
		}
	}
	return out, next, stop
}

// errAlone marks an attempt whose receipt is recorded in a transaction of
// its own (see decideReceipt).
var errAlone = errors.New("workflow: recorded alone")

// receiptBatch records the receipts rcs of the accepted attempts in one
// transaction and returns those admitted. Every receipt is decided on its
// own: one refused (a stale authority, say) is reported in
// sum.OwnerFailed (and sum.Stale) and its error returned, to stop the
// pass, and the others are still recorded.
func (s *Store) receiptBatch(ctx context.Context, pass batchPass, accepted []prepared, rcs [][]byte, kn *batchKnown) ([]prepared, []error) {
	at, now, sum := pass.at, pass.now, pass.sum
	var errs []error
	decide := func(tx backend.Tx, w *batch, recs *batchKnown) error {
		runs := recs.runs
		errs = make([]error, len(accepted))
		// Each item decides on its own copy of its run, in one buffer
		// allocated once per decision of the batch.
		run := new(backend.Run)
		for i, r := range accepted {
			k := r.p.Key()
			var ok bool
			*run, ok = runs[k.RunID]
			if !ok {
				errs[i] = stateErr(ErrNotFound, "run %q", k.RunID)
				continue
			}
			att, found := recs.att(k)
			if found && att.Status == backend.AttemptRepairRequired {
				errs[i] = errAlone
				continue
			}
			m := w.Mark()
			err := decideReceipt(ctx, tx, w, receiptInput{
				run: run, att: att, found: found, key: k, identity: r.p.Identity, receipt: rcs[i],
				check: r.check.with("receipt"), at: at,
			})
			switch {
			case errors.Is(err, errNoop):
				w.Truncate(m)
			case err != nil && isStorage(err):
				return err
			case err != nil:
				w.Truncate(m)
				errs[i] = err
			default:
				runs[k.RunID] = *run
			}
		}
		return nil
	}
	err := s.decideBatch(ctx, kn, false, func() bool { return !slices.ContainsFunc(errs, func(e error) bool { return e != nil }) },
		func(tx backend.Tx, w *batch, k *batchKnown) error {
			return decide(tx, w, k)
		},
		func(tx backend.Tx, w *batch) error {
			var l backend.Lookup
			for _, r := range accepted {
				k := r.p.Key()
				l.Runs = append(l.Runs, k.RunID)
				l.Attempts = append(l.Attempts, k)
			}
			f, err := tx.Load(ctx, l)
			if err != nil {
				return err
			}
			return decide(tx, w, knownFrom(f))
		})
	if err != nil {
		return nil, []error{err}
	}
	var (
		out   = make([]prepared, 0, len(accepted))
		fails []error
	)
	for i, r := range accepted {
		err := errs[i]
		if errors.Is(err, errAlone) {
			err = s.persistReceipt(ctx, refOf(r.p), rcs[i], r.check.with("receipt"), now, nil)
			if err != nil && isStorage(err) {
				return out, append(fails, err)
			}
		}
		if err != nil {
			sum.OwnerFailed = append(sum.OwnerFailed, OwnerFailure{Attempt: refOf(r.p), Err: err})
			if errors.Is(err, ErrStaleAuthority) {
				sum.Stale = append(sum.Stale, r.p.Activation.Key)
			}
			fails = append(fails, err)
			continue
		}
		out = append(out, r)
	}
	return out, fails
}

// decideBatch runs one batch step. With known records it first decides on
// them in an Update that expects them unchanged; when they changed, or
// when that decision refused any item (settled reports whether it did
// not) or wrote nothing, it decides again on records read now, so that
// every refusal is made on the state as it is. With swaps, on a backend
// whose Tx is a backend.Swapper, the known attempts are left out of the
// expect: onKnown compares each in its write instead. onKnown may update
// k.runs, a copy, and must leave k.acts and k.atts as they are.
func (s *Store) decideBatch(ctx context.Context, kn *batchKnown, swaps bool, settled func() bool,
	onKnown func(tx backend.Tx, w *batch, k *batchKnown) error, onRead func(tx backend.Tx, w *batch) error) error {
	if kn != nil {
		err := s.update(ctx, func(tx backend.Tx, w *batch) error {
			exp := kn.expected()
			if _, ok := tx.(backend.Swapper); ok && swaps {
				exp.Attempts = nil
			}
			if err := tx.Apply(ctx, backend.Changes{Expect: exp}); err != nil {
				return err
			}
			// Decide on copies of the runs, the only records a decision
			// updates in place: a re-run must start from the known ones.
			// The activations and attempts are only read.
			k := &batchKnown{runs: maps.Clone(kn.runs), acts: kn.acts, atts: kn.atts}
			if err := onKnown(tx, w, k); err != nil {
				return err
			}
			if !settled() || w.Empty() {
				return errReread
			}
			return nil
		})
		switch {
		case err == nil:
			return nil
		case !errors.Is(err, errReread) && !errors.Is(err, backend.ErrChanged):
			return err
		}
	}
	err := s.update(ctx, func(tx backend.Tx, w *batch) error {
		if err := onRead(tx, w); err != nil {
			return err
		}
		if w.Empty() {
			return errNoop
		}
		return nil
	})
	if errors.Is(err, errNoop) {
		return nil
	}
	return err
}

// offers decides, under one lock, which attempts of a batch the owner is
// called for: once the pass stops (an owner failure, ctx done), no call
// starts, and exactly the attempts never marked called were not offered.
type offers struct {
	mu      sync.Mutex
	stopped bool
	called  []bool
}

// take marks attempts ids called and reports true, or reports false and
// marks nothing once the pass stopped.
func (o *offers) take(ctx context.Context, ids ...int) bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.stopped || ctx.Err() != nil {
		o.stopped = true
		return false
	}
	for _, i := range ids {
		o.called[i] = true
	}
	return true
}

// stop makes every later take fail.
func (o *offers) stop() {
	o.mu.Lock()
	o.stopped = true
	o.mu.Unlock()
}

// callOwner asks the owner to accept the handed-off attempts: in one call
// for a BatchOwner (which counts as offering every attempt it is given),
// otherwise with up to concurrency calls at once, in batch order. The
// first failure stops new calls; calls in flight are awaited. It returns
// each attempt's result and whether the owner was called for it.
func (s *Store) callOwner(ctx context.Context, owner Owner, ready []prepared, concurrency int) ([]DispatchResult, []bool) {
	ps := make([]PreparedDispatch, len(ready))
	all := make([]int, len(ready))
	for i, r := range ready {
		ps[i], all[i] = r.p, i
	}
	out := make([]DispatchResult, len(ps))
	o := &offers{called: make([]bool, len(ps))}
	if bo, ok := owner.(BatchOwner); ok {
		if !o.take(ctx, all...) {
			return out, o.called
		}
		rs, err := bo.DispatchBatch(ctx, ps)
		if err == nil && len(rs) != len(ps) {
			err = fmt.Errorf("DispatchBatch returned %d results for %d attempts", len(rs), len(ps))
		}
		if err != nil {
			for i := range out {
				out[i].Err = err
			}
			return out, o.called
		}
		copy(out, rs)
		return out, o.called
	}
	call := func(i int) {
		out[i].Receipt, out[i].Err = owner.Dispatch(ctx, ps[i])
		if out[i].Err != nil {
			o.stop()
		}
	}
	if concurrency <= 1 {
		for i := range ps {
			if !o.take(ctx, i) {
				break
			}
			call(i)
		}
		return out, o.called
	}
	sem := make(chan struct{}, concurrency)
	var wg sync.WaitGroup
	for i := range ps {
		sem <- struct{}{}
		if !o.take(ctx, i) {
			<-sem
			break
		}
		wg.Go(func() {
			defer func() { <-sem }()
			call(i)
		})
	}
	wg.Wait()
	return out, o.called
}

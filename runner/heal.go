package runner

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"time"

	"github.com/wfstore/wfstore/workflow"
)

// Healing without a restart. A dispatch pass that fails part-way (a commit
// whose answer was lost, backend.ErrOutcomeUnknown, or any other error
// that may heal) leaves the attempt it was admitting in doubt: prepared or
// not, handed off or not, its receipt persisted or not. The runner never
// runs such a step again blindly and never sweeps the store for it; it
// remembers the attempts this process planned or handed to the owner, by
// identity, and on each later pass re-reads each one and finishes what
// the re-read shows is left:
//
//   - not prepared at all: nothing happened; discovery finds the activation
//     again;
//   - prepared, handoff pending, never handed to the owner here: it joins
//     the redispatch set (provably never dispatched; the handoff's
//     compare-and-set decides);
//   - prepared, the owner's call returned a receipt here: the same receipt
//     is persisted again (idempotent), with backoff, until it commits or
//     the attempt is settled otherwise;
//   - prepared, handoff recorded, never handed to the owner here: a
//     read-only attempt is handed to the owner by its identity (the owner
//     dedupes); a mutating one only if the handoff write whose answer was
//     lost was this runner's (workflow.HandoffOutcomeUnknownError names its
//     holder token) and the re-read shows the handoff recorded with exactly
//     that token: it is this runner's own, and the owner was never called
//     under it. Any other mutating one (another token: another process
//     handed it off since) is left for start-up reconciliation (or an
//     operator);
//   - receipted or settled: nothing is left.
//
// An attempt whose owner call is still running is not touched, and an
// attempt another process handed off is never in the set.

// doubt is one attempt of this runner whose admission ended in doubt.
type doubt struct {
	ref workflow.AttemptRef
	// token is the holder token of this runner's handoff write whose
	// commit answer was lost, if any.
	token string
	tries int
	next  time.Time
}

// collectDoubts records, after a dispatch pass that returned err, the
// attempts left in doubt: those planned and not accounted for by the
// summary when the pass failed, and every attempt whose owner call
// returned a receipt that this runner has not seen committed.
func (r *Runner) collectDoubts(sum workflow.DispatchSummary, err error) {
	planned := r.shim.takePlanned()
	if err != nil {
		known := map[workflow.ActivationKey]bool{}
		for _, k := range slices.Concat(sum.Raced, sum.Unsupported, sum.Exhausted) {
			known[k] = true
		}
		for _, rj := range sum.Rejected {
			known[rj.Key] = true
		}
		for _, ref := range sum.Admitted {
			known[ref.Key.ActivationKey] = true
		}
		for _, ref := range planned {
			if !known[ref.Key.ActivationKey] {
				r.addDoubt(ref)
			}
		}
	}
	for _, ref := range r.shim.returned() {
		r.addDoubt(ref)
	}
	if hu, ok := errors.AsType[*workflow.HandoffOutcomeUnknownError](err); ok {
		for _, h := range hu.Handoffs {
			r.addDoubt(h.Attempt)
			r.doubt[h.Attempt.Identity].token = h.Token
		}
	}
}

func (r *Runner) addDoubt(ref workflow.AttemptRef) {
	if _, ok := r.doubt[ref.Identity]; !ok {
		r.doubt[ref.Identity] = &doubt{ref: ref}
	}
}

// heal re-reads each attempt in doubt whose backoff has passed and
// finishes it (see above); it returns how many it resolved. A re-read or
// write that fails again is retried on a later pass, after a backoff that
// doubles from the minimum poll interval up to the maximum.
func (r *Runner) heal(ctx context.Context) int {
	if len(r.doubt) == 0 {
		return 0
	}
	ids := make([]string, 0, len(r.doubt))
	for id := range r.doubt {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	resolved := 0
	for _, id := range ids {
		d := r.doubt[id]
		now := r.cfg.clock.Now()
		if now.Before(d.next) || r.stopping.Load() {
			continue
		}
		done, err := r.resolve(ctx, d.ref, d.token)
		if err != nil {
			d.tries++
			wait := min(r.cfg.minPoll<<min(d.tries, 20), r.cfg.maxPoll)
			d.next = now.Add(wait)
			r.log.LogAttrs(ctx, slog.LevelWarn, "attempt in doubt not resolved yet; retrying", slog.String("identity", id),
				slog.Int("tries", d.tries), slog.Duration("backoff", wait), slog.String("error", err.Error()))
			continue
		}
		if done {
			delete(r.doubt, id)
			resolved++
		}
	}
	return resolved
}

// resolve re-reads one attempt in doubt and finishes it; done reports that
// nothing is left to do for it here. token is the holder token of this
// runner's handoff write of it whose answer was lost, if any.
func (r *Runner) resolve(ctx context.Context, ref workflow.AttemptRef, token string) (done bool, err error) {
	a, err := r.store.GetAttempt(ctx, ref.Identity)
	if errors.Is(err, workflow.ErrNotFound) {
		return true, nil // never prepared: the activation is discovered again
	}
	if err != nil {
		return false, fmt.Errorf("re-read %s: %w", ref.Identity, err)
	}
	ans, handed, answered := r.shim.answerOf(ref.Identity)
	if a.Receipt != nil || a.Status != workflow.AttemptPrepared {
		if answered && ans.err == nil && a.Receipt != nil {
			r.total.Admitted++
			r.log.LogAttrs(ctx, slog.LevelInfo, "receipt found committed after an unknown outcome", slog.String("identity", ref.Identity))
		}
		r.shim.admitted([]workflow.AttemptRef{ref})
		return true, nil
	}
	switch {
	case handed && !answered:
		return false, nil // the owner call is still running
	case answered && ans.err == nil && len(ans.receipt) > 0:
		return r.persistAgain(ctx, ref, ans.receipt)
	case answered:
		return true, nil // the owner failed: left for reconciliation, as Summary.Unresolved says
	}
	switch a.Handoff {
	case workflow.HandoffPending:
		r.rejected[ref.Key.RunID] = true
		r.log.LogAttrs(ctx, slog.LevelInfo, "handoff found pending after an unknown outcome; redispatching", slog.String("identity", ref.Identity))
		return true, nil
	case workflow.HandoffRecorded:
		if a.SideEffect == workflow.ReadOnly {
			return r.dispatchAgain(ctx, a)
		}
		if token != "" && a.HandoffToken == token {
			r.log.LogAttrs(ctx, slog.LevelInfo, "own handoff of a mutating attempt found recorded after an unknown outcome; dispatching",
				slog.String("identity", ref.Identity))
			return r.dispatchAgain(ctx, a)
		}
		r.log.LogAttrs(ctx, slog.LevelWarn, "handoff of a mutating attempt found recorded by another holder after an unknown outcome; left for reconciliation",
			slog.String("identity", ref.Identity))
	}
	return true, nil
}

// persistAgain persists the receipt the owner returned for ref once more.
func (r *Runner) persistAgain(ctx context.Context, ref workflow.AttemptRef, rc []byte) (bool, error) {
	err := r.store.Engine().PersistReceipt(ctx, workflow.OwnerReceipt{Key: ref.Key, Receipt: rc, Authority: r.authorityOf(ref.Key.RunID)}, r.cfg.clock.Now())
	if err == nil {
		r.shim.admitted([]workflow.AttemptRef{ref})
		r.shim.spans.admitted([]workflow.AttemptRef{ref})
		r.total.Admitted++
		r.in.admissions.Add(ctx, 1, outcomeAttr(OutcomeAdmitted))
		r.log.LogAttrs(ctx, slog.LevelInfo, "receipt persisted after an unknown outcome", slog.String("identity", ref.Identity))
		return true, nil
	}
	if settledOtherwise(err) {
		r.log.LogAttrs(ctx, slog.LevelWarn, "receipt refused after an unknown outcome", slog.String("identity", ref.Identity),
			slog.String("error", err.Error()))
		return true, nil
	}
	return false, fmt.Errorf("persist receipt of %s: %w", ref.Identity, err)
}

// dispatchAgain hands a prepared attempt whose handoff is recorded (a
// read-only one, or a mutating one under this runner's own handoff) to the
// owner by its identity and intent, then persists the receipt.
func (r *Runner) dispatchAgain(ctx context.Context, a workflow.Attempt) (bool, error) {
	act, err := r.store.GetActivation(ctx, a.Key.ActivationKey)
	if err != nil {
		return false, fmt.Errorf("re-read activation of %s: %w", a.Identity, err)
	}
	p := workflow.PreparedDispatch{Activation: act, Attempt: a.Key.Attempt, Identity: a.Identity, SideEffect: a.SideEffect,
		Intent: a.Intent, PreparedAt: a.PreparedAt}
	rc, err := r.owner.Dispatch(ctx, p)
	if err != nil {
		r.log.LogAttrs(ctx, slog.LevelWarn, "owner failed; attempt left for reconciliation",
			slog.String("identity", a.Identity), slog.String("error", err.Error()))
		return true, nil
	}
	return r.persistAgain(ctx, a.Ref(), rc)
}

// settledOtherwise reports whether a receipt write failed because the
// attempt cannot take it: it was settled otherwise, its authority moved
// on, or the receipt cannot be stored. Retrying cannot change that.
func settledOtherwise(err error) bool {
	for _, target := range []error{workflow.ErrConflict, workflow.ErrIneligible, workflow.ErrNotFound,
		workflow.ErrStaleAuthority, workflow.ErrInvalidInput, workflow.ErrTooLarge} {
		if errors.Is(err, target) {
			return true
		}
	}
	return false
}

// authorityOf is the authority a write to run is fenced by: the runner's,
// for its own run.
func (r *Runner) authorityOf(runID string) *workflow.Authority {
	if runID == r.cfg.runID {
		return r.cfg.authority
	}
	return nil
}

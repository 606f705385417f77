package workflow

import (
	"cmp"
	"context"
	"errors"
	"math"
	"slices"
	"time"

	"github.com/wfstore/wfstore/backend"
	"github.com/wfstore/wfstore/event"
	"github.com/wfstore/wfstore/workflow/internal/state"
)

// RequestCancellation durably records the run's cancellation intent (once;
// it is never cleared) before anything else: from then on nothing is
// admitted or handed off, unstarted activations are cancelled, and the run
// becomes cancelled as soon as no active or repair_required attempt
// remains and every child run it started is completed, failed or
// cancelled. It returns the run's status afterwards. Requesting it again is
// a no-op; a completed or failed run cannot be cancelled (ErrIneligible):
// end a failed run with RequestTreeCancellation of its root (it stays
// failed and loses its retry schedules), or prune it once it has neither
// a retry schedule nor an active attempt.
//
// It cancels this run only, not its child runs: the owner of each
// child-run parent attempt settles its child (an Admitted or Running
// observation of such an attempt makes it cancelling, not cancelled). Use
// RequestTreeCancellation to cancel a whole composition tree at once.
func (s *Store) RequestCancellation(ctx context.Context, runID string, authority *Authority, now time.Time) (RunStatus, error) {
	auth := copyAuthority(authority)
	at, err := runCallArgs(runID, auth, now)
	if err != nil {
		return "", err
	}
	var status backend.RunStatus
	err = s.update(ctx, func(tx backend.Tx, w *batch) error {
		run, err := backend.GetRun(ctx, tx, runID)
		if err != nil {
			return notFoundFrom(err, "run %q", runID)
		}
		if err := ownedBy(auth, "cancellation").verify(run); err != nil {
			return err
		}
		status = run.Status
		if run.CancelRequestedMS != 0 {
			return errNoop
		}
		switch run.Status {
		case backend.RunRunning, backend.RunPaused, backend.RunRepairRequired:
		default:
			return stateErr(ErrIneligible, "run %q is %s and cannot be cancelled", runID, run.Status)
		}
		if err := state.RequestCancellation(w, &run, "", at); err != nil {
			return err
		}
		if err := cancelUnstarted(ctx, tx, w, runID, at); err != nil {
			return err
		}
		if err := finalizeCancellation(ctx, tx, w, &run, at); err != nil {
			return err
		}
		state.Replace(w, run)
		status = run.Status
		return nil
	})
	if errors.Is(err, errNoop) {
		err = nil
	}
	return RunStatus(status), err
}

// cancelUnstarted cancels the run's pending and waiting activations.
func cancelUnstarted(ctx context.Context, tx backend.Tx, w *batch, runID string, at int64) error {
	return cancelActivations(ctx, tx, w, runID, at, backend.ActivationPending, backend.ActivationWaiting)
}

// ActiveAttemptQuery selects a page of one run's active attempts.
type ActiveAttemptQuery struct {
	// RunID is the run whose attempts are listed.
	RunID string
	// After resumes after a previous page (its Next); empty starts at the
	// beginning.
	After Cursor
	// Limit is 1 to MaxPageLimit; 0 means DefaultPageLimit.
	Limit int
}

// activeStatuses are the statuses ActiveAttempts lists, in its order.
var activeStatuses = []backend.AttemptStatus{backend.AttemptPrepared, backend.AttemptAdmitted, backend.AttemptRunning}

// ActiveAttempts returns a page of the run's prepared, admitted and running
// attempts (in that order, each by prepared time and identity), read in one
// snapshot: the work a cancelling engine must signal to its owners
// (attempts already cancelling are not listed, and neither are the
// sibling_cancelling ones a fail-fast fan-out stopped: page those with
// Attempts and Status AttemptSiblingCancelling).
func (s *Engine) ActiveAttempts(ctx context.Context, q ActiveAttemptQuery) (Page[Attempt], error) {
	if err := ValidateID("run id", q.RunID); err != nil {
		return Page[Attempt]{}, err
	}
	limit, err := pageLimit("attempt limit", q.Limit)
	if err != nil {
		return Page[Attempt]{}, err
	}
	start, err := decodeStage(activeCursor, q.After, len(activeStatuses))
	if err != nil {
		return Page[Attempt]{}, err
	}
	var page Page[Attempt]
	err = s.view(ctx, func(r backend.ReadTx) error {
		var out []backend.Attempt
		page = Page[Attempt]{}
		cur := start
		for cur.Stage < len(activeStatuses) && len(out) < limit {
			asked := limit - len(out)
			rows, err := r.Attempts(ctx, backend.AttemptQuery{RunID: q.RunID, Status: activeStatuses[cur.Stage], After: cur.after(), Limit: asked})
			if err != nil {
				return err
			}
			out = append(out, rows...)
			if len(rows) < asked {
				cur = stagePos{Stage: cur.Stage + 1}
			} else {
				last := rows[len(rows)-1]
				cur.Prepared, cur.Identity = last.PreparedMS, last.Identity
			}
		}
		page.Items = toAttempts(out)
		more, err := moreAttempts(ctx, r, q.RunID, activeStatuses, cur, nil)
		if more {
			page.Next = encodeCursor(activeCursor, cur)
		}
		return err
	})
	if err != nil {
		return Page[Attempt]{}, err
	}
	return page, nil
}

// MarkCancellationSignalled records that cancellation was signalled to the
// owner of a prepared, admitted or running attempt: it
// becomes cancelling. A receipt that arrives later for a prepared one is
// stored and the attempt stays cancelling. The run must have cancellation
// requested. For a sibling_cancelling attempt (stopped by a fail-fast
// fan-out sibling's failure; its run needs no cancellation request) it
// records the signal (attempt_cancellation_signalled) and the status stays
// sibling_cancelling: each call records one, so an engine records it once
// per Cancel that returned nil.
func (s *Engine) MarkCancellationSignalled(ctx context.Context, identity string, now time.Time) error {
	return s.attemptTx(ctx, identity, now, func(tx backend.Tx, w *batch, run *backend.Run, act backend.Activation, att *backend.Attempt, at int64) error {
		if att.Status == backend.AttemptSiblingCancelling {
			return state.RecordSiblingSignal(w, run, att, at)
		}
		if run.CancelRequestedMS == 0 {
			return stateErr(ErrIneligible, "run %q has no cancellation requested", run.ID)
		}
		return state.SignalAttemptCancellation(w, run, att, at)
	})
}

// CancelNeverDispatched cancels a prepared attempt that provably never
// reached its owner (handoff pending, no receipt) in a run whose
// cancellation is requested, and finalises the run if nothing else is
// active. It returns false, changing nothing, when the attempt lacks that
// proof. authority, when set, must be the run's current authority.
func (s *Engine) CancelNeverDispatched(ctx context.Context, identity string, authority *Authority, now time.Time) (bool, error) {
	auth := copyAuthority(authority)
	if err := validateAuthority(auth); err != nil {
		return false, err
	}
	done := false
	err := s.attemptTx(ctx, identity, now, func(tx backend.Tx, w *batch, run *backend.Run, act backend.Activation, att *backend.Attempt, at int64) error {
		if att.Status != backend.AttemptPrepared || att.Receipt != nil || att.Handoff != backend.HandoffPending {
			return errNoop
		}
		if err := ownedBy(auth, "cancellation").verify(*run); err != nil {
			return err
		}
		if run.CancelRequestedMS == 0 {
			return stateErr(ErrIneligible, "run %q has no cancellation requested", run.ID)
		}
		if err := state.CancelAttempt(ctx, txn{Tx: tx, W: w, At: at}, run, &act, att, event.AttemptCancelledPayload{Reason: "never_dispatched"}); err != nil {
			return err
		}
		if err := memberSettled(ctx, tx, w, run, act, at); err != nil {
			return err
		}
		done = true
		return finalizeCancellation(ctx, tx, w, run, at)
	})
	return done, err
}

// SettleOrphanedCancellation settles an attempt of a cancelling run whose
// owner is gone. A settled attempt is left alone; a prepared, receipt-less
// attempt whose handoff was recorded (admission possibly in flight, never
// signalled) is left unchanged; otherwise (a cancelling attempt included:
// signalled, its dispatcher gone before any receipt) a mutating attempt
// becomes repair_required (and the run too) and a read-only one
// cancelled. The caller decides when the owner is gone: the runner waits
// for the attempt timeout to pass since the cancellation request. It
// returns the run's status.
func (s *Engine) SettleOrphanedCancellation(ctx context.Context, identity string, now time.Time) (RunStatus, error) {
	var status backend.RunStatus
	err := s.attemptTx(ctx, identity, now, func(tx backend.Tx, w *batch, run *backend.Run, act backend.Activation, att *backend.Attempt, at int64) error {
		status = run.Status
		if run.CancelRequestedMS == 0 {
			return stateErr(ErrIneligible, "run %q has no cancellation requested", run.ID)
		}
		if !isActive(att.Status) {
			return errNoop
		}
		if att.Status == backend.AttemptPrepared && att.Receipt == nil && att.Handoff == backend.HandoffRecorded {
			return errNoop
		}
		if att.SideEffect == backend.Mutating {
			if err := state.RequireAttemptRepair(w, run, att, event.AttemptRepairRequiredPayload{Reason: "cancellation_owner_unavailable"}, at); err != nil {
				return err
			}
			if err := state.HoldRunForRepair(run); err != nil {
				return err
			}
		} else {
			if err := state.CancelAttempt(ctx, txn{Tx: tx, W: w, At: at}, run, &act, att, event.AttemptCancelledPayload{Reason: "cancellation_owner_unavailable"}); err != nil {
				return err
			}
			if err := finalizeCancellation(ctx, tx, w, run, at); err != nil {
				return err
			}
		}
		status = run.Status
		return nil
	})
	return RunStatus(status), err
}

// attemptTx loads an attempt by identity with its run and activation and
// runs fn; the run is replaced afterwards when fn returns nil.
func (s *Store) attemptTx(ctx context.Context, identity string, now time.Time,
	fn func(tx backend.Tx, w *batch, run *backend.Run, act backend.Activation, att *backend.Attempt, at int64) error) error {
	if err := ValidateID("dispatch identity", identity); err != nil {
		return err
	}
	at, err := toMS("now", now)
	if err != nil {
		return err
	}
	err = s.update(ctx, func(tx backend.Tx, w *batch) error {
		att, err := backend.GetAttemptByIdentity(ctx, tx, identity)
		if err != nil {
			return notFoundFrom(err, "attempt %s", identity)
		}
		f, err := tx.Load(ctx, backend.Lookup{Runs: []string{att.Key.RunID}, Activations: []backend.ActivationKey{att.Key.ActivationKey}})
		if err != nil {
			return err
		}
		run, act := f.Runs[att.Key.RunID], f.Activations[att.Key.ActivationKey]
		if err := fn(tx, w, &run, act, &att, at); err != nil {
			return err
		}
		run.UpdatedMS = at
		state.Replace(w, run)
		return nil
	})
	if errors.Is(err, errNoop) {
		return nil
	}
	return err
}

// RequestTreeCancellation cancels a composition root and every run linked
// to it, at any depth, in one transaction: each run that is neither
// completed nor cancelled and has no cancellation requested yet gets the
// durable intent and a cancellation_requested event, and its unstarted
// activations are cancelled; then every run that is already quiescent is
// finalised, children before their parents. A failed run (the root
// included) gets the intent too but stays failed: its retry schedules are
// deleted in the same transaction (automatic_retry_discarded, reason
// cancellation_requested), so no retry can restart work in the tree, and
// once it has no active attempt Prune accepts it. This is how a failed
// root that RequestCancellation refuses is ended. From then on nothing in
// the tree is admitted or handed off. It returns the root's status
// afterwards; calling it again changes nothing.
//
// authority, when set, must be the root's current authority. A run that is not a
// composition root fails with ErrIneligible, as does a completed root. RequestCancellation, by contrast,
// cancels one run only: the owners of its child-run parent attempts
// decide about the children, and the run finalises once they are terminal.
func (s *Store) RequestTreeCancellation(ctx context.Context, rootID string, authority *Authority, now time.Time) (RunStatus, error) {
	auth := copyAuthority(authority)
	at, err := runCallArgs(rootID, auth, now)
	if err != nil {
		return "", err
	}
	var status backend.RunStatus
	err = s.update(ctx, func(tx backend.Tx, w *batch) error {
		root, err := backend.GetRun(ctx, tx, rootID)
		if err != nil {
			return notFoundFrom(err, "run %q", rootID)
		}
		if err := ownedBy(auth, "cancellation").verify(root); err != nil {
			return err
		}
		status = root.Status
		if root.RootID != root.ID {
			return stateErr(ErrIneligible, "run %q is not a composition root (its root is %q)", rootID, root.RootID)
		}
		if root.CancelRequestedMS == 0 {
			switch root.Status {
			case backend.RunRunning, backend.RunPaused, backend.RunRepairRequired, backend.RunFailed:
			default:
				return stateErr(ErrIneligible, "run %q is %s and cannot be cancelled", rootID, root.Status)
			}
		}
		runs := []*backend.Run{&root}
		links, err := treeLinks(ctx, tx, w, rootID)
		if err != nil {
			return err
		}
		ids := make([]string, len(links))
		for i, l := range links {
			ids[i] = l.ChildRunID
		}
		f, err := tx.Load(ctx, backend.Lookup{Runs: ids})
		if err != nil {
			return err
		}
		for _, id := range ids {
			if r, ok := f.Runs[id]; ok {
				runs = append(runs, &r)
			}
		}
		dirty := map[string]bool{}
		for _, r := range runs {
			if r.CancelRequestedMS != 0 || r.Status == backend.RunCompleted || r.Status == backend.RunCancelled {
				continue
			}
			if err := state.RequestCancellation(w, r, rootID, at); err != nil {
				return err
			}
			if err := cancelUnstarted(ctx, tx, w, r.ID, at); err != nil {
				return err
			}
			if r.Status == backend.RunFailed {
				if err := discardSchedules(ctx, tx, w, r, at); err != nil {
					return err
				}
			}
			dirty[r.ID] = true
		}
		// Deepest first, each written before its parent decides, so a
		// parent sees its children's final status.
		slices.SortStableFunc(runs, func(a, b *backend.Run) int { return cmp.Compare(b.Depth, a.Depth) })
		for _, r := range runs {
			done, err := finalizeRun(ctx, tx, w, r, at)
			if err != nil {
				return err
			}
			if done || dirty[r.ID] {
				dirty[r.ID] = true
				state.Replace(w, *r)
			}
		}
		if len(dirty) == 0 {
			return errNoop
		}
		status = root.Status
		return nil
	})
	if errors.Is(err, errNoop) {
		err = nil
	}
	return RunStatus(status), err
}

// Canceller is an optional capability of an Owner: it asks the owner to
// stop the work it holds for one dispatch identity. Cancel must be
// idempotent on the identity, and return nil only once the owner has
// durably taken note of the request (the engine records that the signal
// was sent only after that). Cancel may reach the owner before a Dispatch
// of the same identity that is still in flight: an owner must remember,
// durably, every identity it was asked to cancel, so that a later Dispatch
// of it starts nothing (it may still return a receipt) and its Observer
// reports the work cancelled. The runner package calls it for every
// attempt of a cancelled run whose owner may hold the work.
type Canceller interface {
	Cancel(ctx context.Context, identity string) error
}

// CancelSettlement says how SettleCancelledUnobserved settles an attempt
// its owner cannot be asked about; it is the reason its attempt_cancelled
// event records.
type CancelSettlement string

// Cancel settlements.
const (
	// SignalledNotObserved: the owner was told to cancel (its Canceller
	// returned nil and the signal is recorded) but cannot report on its
	// work (it has no Observer).
	SignalledNotObserved CancelSettlement = "signalled_not_observed"
	// NeitherSignalledNorObserved: the owner can neither be told to cancel
	// nor report on its work. Its work may run on after the attempt is
	// settled and its leases released.
	NeitherSignalledNorObserved CancelSettlement = "not_signalled_not_observed"
)

// UnobservedCancellation asks SettleCancelledUnobserved to settle, as
// cancelled, one attempt whose owner cannot report on it.
type UnobservedCancellation struct {
	// Identity is the attempt's dispatch identity.
	Identity string
	// How says how the attempt is settled unobserved; it is the
	// attempt_cancelled event's reason. A value other than the
	// CancelSettlement constants is refused with ErrInvalidInput.
	How CancelSettlement
	// Authority, when set, must be the run's current authority.
	Authority *Authority
}

// SettleCancelledUnobserved settles, as cancelled, an attempt of a run
// whose cancellation is requested when its owner cannot report on it. With
// SignalledNotObserved the cancellation signal must be recorded (the
// attempt is cancelling, MarkCancellationSignalled); with
// NeitherSignalledNorObserved the attempt may be admitted, running or
// cancelling. Either way it must hold a receipt: a receipt-less attempt
// whose handoff was recorded may still be admitted by its owner and is
// left alone (false). A settled attempt is left alone (false). It
// finalises the run when nothing else is active.
func (s *Engine) SettleCancelledUnobserved(ctx context.Context, req UnobservedCancellation, now time.Time) (bool, error) {
	identity, how := req.Identity, req.How
	auth := copyAuthority(req.Authority)
	if err := validateAuthority(auth); err != nil {
		return false, err
	}
	switch how {
	case SignalledNotObserved, NeitherSignalledNorObserved:
	default:
		return false, invalid("cancel settlement", "unknown settlement %q", how)
	}
	done := false
	err := s.attemptTx(ctx, identity, now, func(tx backend.Tx, w *batch, run *backend.Run, act backend.Activation, att *backend.Attempt, at int64) error {
		if err := ownedBy(auth, "cancellation").verify(*run); err != nil {
			return err
		}
		if run.CancelRequestedMS == 0 {
			return stateErr(ErrIneligible, "run %q has no cancellation requested", run.ID)
		}
		switch att.Status {
		case backend.AttemptCancelling:
		case backend.AttemptAdmitted, backend.AttemptRunning:
			if how == SignalledNotObserved {
				return stateErr(ErrIneligible, "attempt %s is %s: no cancellation signal is recorded", att.Identity, att.Status)
			}
		case backend.AttemptPrepared:
			if how == SignalledNotObserved {
				return stateErr(ErrIneligible, "attempt %s is prepared: no cancellation signal is recorded", att.Identity)
			}
			return errNoop // no receipt: the owner may still admit it
		default:
			return errNoop // settled, or not the owner's to settle (repair, sibling cancellation)
		}
		if att.Receipt == nil {
			return errNoop
		}
		if err := state.CancelAttempt(ctx, txn{Tx: tx, W: w, At: at}, run, &act, att, event.AttemptCancelledPayload{Reason: string(how)}); err != nil {
			return err
		}
		if err := memberSettled(ctx, tx, w, run, act, at); err != nil {
			return err
		}
		done = true
		return finalizeCancellation(ctx, tx, w, run, at)
	})
	return done, err
}

// discardSchedules deletes every retry schedule of a failed run whose
// cancellation is now requested, each with an automatic_retry_discarded
// event: none can ever be consumed again.
func discardSchedules(ctx context.Context, tx backend.Tx, w *batch, run *backend.Run, at int64) error {
	for {
		due, err := tx.DueSchedules(ctx, backend.ScheduleQuery{RunID: run.ID, DueBy: math.MaxInt64, Limit: MaxPageLimit})
		if err != nil {
			return err
		}
		for _, sc := range due {
			state.DiscardSchedule(w, run, sc, discardCancellationRequested, at)
		}
		if len(due) < MaxPageLimit {
			return nil
		}
		if err := flush(ctx, tx, w); err != nil {
			return err
		}
	}
}

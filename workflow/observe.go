package workflow

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/wfstore/wfstore/backend"
	"github.com/wfstore/wfstore/event"
	"github.com/wfstore/wfstore/wftype"
	"github.com/wfstore/wfstore/workflow/internal/state"
)

// ObservationKind is package wftype's ObservationKind.
type ObservationKind = wftype.ObservationKind

// The ObservationKind values, as package wftype defines them.
const (
	ObservedAdmitted         ObservationKind = wftype.ObservedAdmitted
	ObservedRunning          ObservationKind = wftype.ObservedRunning
	ObservedDeferred         ObservationKind = wftype.ObservedDeferred
	ObservedSucceeded        ObservationKind = wftype.ObservedSucceeded
	ObservedFailed           ObservationKind = wftype.ObservedFailed
	ObservedRetryableFailure ObservationKind = wftype.ObservedRetryableFailure
	ObservedPaused           ObservationKind = wftype.ObservedPaused
	ObservedCancelled        ObservationKind = wftype.ObservedCancelled
	ObservedUnknown          ObservationKind = wftype.ObservedUnknown
)

// PauseIdleTimeout is the pause reason that counts as a terminal timeout
// for retry purposes.
const PauseIdleTimeout = "idle_timeout"

// Observation is one owner report.
type Observation struct {
	Kind ObservationKind
	// Output is the result of a Succeeded observation (JSON, required then).
	Output json.RawMessage
	// Detail is optional JSON kept on the attempt (error text, owner data).
	Detail json.RawMessage
	// PauseReason qualifies a Paused observation.
	PauseReason string
	// Successors, on a Succeeded observation, are added in the same
	// transaction that completes the activation.
	Successors []NewActivation
	// FanOuts, on a Succeeded observation, are fan-out groups added in the
	// same transaction, after Successors: each group's Controller is one
	// of Successors, no two groups share one, and the groups hold at most
	// MaxPageLimit members in all (ErrInvalidInput otherwise). A group
	// that cannot be added (see AddFanOut) fails the observation and
	// nothing of it is written.
	FanOuts []NewFanOut
}

// ObservationResult reports what an observation did.
type ObservationResult struct {
	// Status is the attempt's status afterwards.
	Status AttemptStatus
	// Schedule is the automatic retry scheduled by a RetryableFailure, if
	// any (or the identical one already stored).
	Schedule *RetrySchedule
	// NotScheduled says why a RetryableFailure that settled its attempt as
	// failed scheduled nothing (no policy, the policy does not admit the
	// kind, the decision table refused, or a different schedule exists).
	// Exactly one of Schedule and NotScheduled is set when a
	// RetryableFailure observation fails its attempt; both are nil
	// otherwise (a repeated observation of a settled attempt included).
	NotScheduled *RetryRefusal
	// Unresolved: an Unknown observation of a read-only attempt, left as is.
	Unresolved bool
}

// validate checks o and returns its canonical JSON and successor records.
// An output or detail that cannot be stored is returned both as err (an
// *InputError) and as v.unstorable, so that a caller may refuse it (a
// direct ApplyObservation) or settle its attempt (the receipt-backed pass,
// whose observation comes from the owner); every other problem has
// v.unstorable nil.
func (o Observation) validate(at int64) (v validObservation, err error) {
	switch o.Kind {
	case ObservedAdmitted, ObservedRunning, ObservedDeferred, ObservedFailed, ObservedRetryableFailure,
		ObservedPaused, ObservedCancelled, ObservedUnknown:
	case ObservedSucceeded:
		if v.output, err = ownerJSON("observation output", o.Output); err != nil { // required
			v.unstorable = unstorableValue("observation output", o.Output, MaxOwnerJSONBytes, MaxOwnerJSONDepth, err)
			return v, err
		}
	default:
		return v, invalid("observation kind", "unknown kind %q", o.Kind)
	}
	if v.detail, err = optionalJSON("observation detail", o.Detail); err != nil {
		v.unstorable = unstorableValue("observation detail", o.Detail, MaxJSONBytes, MaxJSONDepth, err)
		return v, err
	}
	if (len(o.Successors) > 0 || len(o.FanOuts) > 0) && o.Kind != ObservedSucceeded {
		return v, invalid("observation successors", "only a succeeded observation may carry successors")
	}
	for _, na := range o.Successors {
		rec, err := na.record(at)
		if err != nil {
			return v, err
		}
		v.succ = append(v.succ, rec)
	}
	if v.fanOuts, err = validFanOuts(o.FanOuts, v.succ, at); err != nil {
		return v, err
	}
	return v, nil
}

// compatibleSettled reports whether observing k on an attempt already in
// settled status st is a no-op (true) rather than a conflict.
func compatibleSettled(st backend.AttemptStatus, k ObservationKind) bool {
	switch k {
	case ObservedAdmitted, ObservedRunning, ObservedDeferred:
		return true
	case ObservedSucceeded:
		return st == backend.AttemptSucceeded
	case ObservedFailed, ObservedRetryableFailure:
		return st == backend.AttemptFailed
	case ObservedPaused:
		return st == backend.AttemptPaused
	case ObservedCancelled:
		return st == backend.AttemptCancelled
	case ObservedUnknown:
		return st == backend.AttemptRepairRequired
	}
	return false
}

// ApplyObservation applies an owner observation to an admitted attempt in
// one transaction. A RetryableFailure schedules an
// automatic retry in the same transaction when the activation's policy
// admits it; a Succeeded completes the activation and adds its successors
// and fan-out groups (Observation.FanOuts) atomically; when that completion leaves nothing of the run open (see
// below) the run becomes completed in the same transaction. While the
// run's cancellation is requested, an Admitted or Running observation of a
// child run's parent attempt makes it cancelling (the run waits for the
// owner to settle the child). Otherwise, while the run's cancellation is
// requested, the owner's word decides: an Admitted, Running or Deferred
// observation leaves the work active (a cancelling attempt stays
// cancelling: it holds its concurrency place and leases while the work
// runs), and any other observation settles the attempt as cancelled, its
// attempt_cancelled event recording what the owner observed (and the
// output of a Succeeded one: work that finished anyway stays on record,
// though the activation completes no more). A sibling_cancelling attempt
// (stopped by a fail-fast fan-out sibling's failure) follows the same
// rule: an Admitted, Running or Deferred observation leaves it
// sibling_cancelling and active, any other settles it as cancelled,
// recording what the owner observed. A fan-out member's failure settles by its group's
// policy (see FanOutFailure).
//
// Completion: after every settlement, whatever made it (an observation of
// any kind, a repair, a fan-out member's or retirement's settlement, a
// discarded retry schedule), a running or paused run with no pending,
// waiting or running activation, no active or repair_required attempt and
// no retry schedule left to consume becomes completed and run_completed is
// appended in the same transaction. So the final status never depends on
// the order in which activations settle: a run whose last open activation
// its owner reports cancelled completes as one whose last activation
// succeeded does, and a run left with an activation failed for good (a
// sibling's retry or a repair made it running again) becomes failed, not
// completed. A completed run takes no new work. A child run's completion
// does not settle its parent attempt (that is its owner's report); it only
// lets a cancelling parent finalise.
//
// An observation of an attempt SettleTimedOut settled is recorded as an
// attempt_observed_after_timeout event and never fails: a repair_required
// (mutating) attempt is admitted again and settled by it, as a late
// receipt admits one, when it settles anything (succeeded, failed,
// paused, cancelled); otherwise the attempt keeps its status.
//
// An observation that contradicts a settled attempt fails with
// ErrConflict; one for an attempt without a receipt fails with
// ErrIneligible. An Output is owner JSON (MaxOwnerJSONBytes,
// MaxOwnerJSONDepth) and a Detail is held to MaxJSONBytes and
// MaxJSONDepth: one that is invalid, too large (ErrTooLarge) or too deep
// is refused with ErrInvalidInput before anything is written, and the
// attempt is left as it was. (The receipt-backed pass, whose observation
// comes from the owner, settles the attempt instead.)
func (s *Store) ApplyObservation(ctx context.Context, identity string, obs Observation, now time.Time) (ObservationResult, error) {
	var res ObservationResult
	if err := ValidateID("dispatch identity", identity); err != nil {
		return res, err
	}
	at, err := toMS("now", now)
	if err != nil {
		return res, err
	}
	v, err := obs.validate(at)
	if err != nil {
		return res, err
	}
	err = s.update(ctx, func(tx backend.Tx, w *batch) error {
		var err error
		res, err = applyObservation(ctx, txn{Tx: tx, W: w, At: at}, identity, obs, v, authorityCheck{})
		w.WorkArrives() // settling may add successors, schedule a retry, free capacity or leases
		return err
	})
	if errors.Is(err, errNoop) {
		return res, nil
	}
	return res, err
}

// validObservation is an Observation's validated JSON and successors.
type validObservation struct {
	output, detail []byte
	succ           []backend.Activation
	fanOuts        []validFanOut
	// unstorable, when set, describes an owner's output or detail that
	// cannot be stored: applying the observation settles the attempt as
	// repair_required instead (event.RepairObservationNotStorable).
	unstorable *event.Unstorable
}

// applyObservation applies one validated observation inside tx, after
// check accepts the run's authority. It returns errNoop, having added
// nothing to w, when the observation changes nothing.
func applyObservation(ctx context.Context, t txn, identity string, obs Observation, v validObservation, check authorityCheck) (ObservationResult, error) {
	tx, w, at := t.Tx, t.W, t.At
	var res ObservationResult
	output, detail, succ := v.output, v.detail, v.succ
	err := func() error {
		att, err := backend.GetAttemptByIdentity(ctx, tx, identity)
		if err != nil {
			return notFoundFrom(err, "attempt %s", identity)
		}
		k := att.Key
		f, err := tx.Load(ctx, backend.Lookup{Runs: []string{k.RunID}, Activations: []backend.ActivationKey{k.ActivationKey}})
		if err != nil {
			return err
		}
		run, act := f.Runs[k.RunID], f.Activations[k.ActivationKey]
		if err := check.verify(run); err != nil {
			return err
		}
		res.Status = AttemptStatus(att.Status)
		if timedOut(att) {
			if readmitted, err := observedAfterTimeout(ctx, txn{Tx: tx, W: w, At: at}, &run, &att, obs.Kind); err != nil || !readmitted {
				state.Replace(w, run)
				return err
			}
		}
		if isSettled(att.Status) || att.Status == backend.AttemptRepairRequired {
			if compatibleSettled(att.Status, obs.Kind) {
				return errNoop
			}
			return stateErr(ErrConflict, "terminal workflow attempt observation conflicts with persisted status %s: %s", att.Status, identity)
		}
		if att.Receipt == nil {
			return stateErr(ErrIneligible, "attempt %s has no receipt; observations apply to admitted attempts", identity)
		}
		kind := obs.Kind
		if handled, err := cancellingChildParent(ctx, txn{Tx: tx, W: w, At: at}, &run, &att, kind, detail); handled || err != nil {
			res.Status = AttemptStatus(att.Status)
			state.Replace(w, run)
			return err
		}
		was := run.Status
		var observed ObservationKind // the owner's report, kept on a cancelled run's attempt_cancelled
		switch {
		case att.Status == backend.AttemptSiblingCancelling:
			// A fail-fast group's stopped sibling follows its owner's
			// word, as an attempt of a cancelled run: work it reports
			// still admitted or running stays sibling_cancelling, active;
			// work it reports finished settles as cancelled, its event
			// recording what the owner observed.
			switch kind {
			case ObservedAdmitted, ObservedRunning, ObservedDeferred:
				return errNoop
			default:
				observed, kind = kind, ObservedCancelled
			}
		case run.CancelRequestedMS != 0:
			// The owner's word decides: work it reports still admitted or
			// running stays active (a signalled attempt stays cancelling);
			// work it reports finished, one way or another, settles as
			// cancelled, its event recording what the owner observed.
			switch kind {
			case ObservedAdmitted, ObservedRunning, ObservedDeferred:
				if att.Status == backend.AttemptCancelling {
					return errNoop
				}
			default:
				observed, kind = kind, ObservedCancelled
			}
		}
		if v.unstorable != nil && kind != ObservedCancelled {
			// The owner reported something the store cannot keep: its
			// outcome is for an operator, and never asked again.
			if err := settleUnstorable(ctx, txn{Tx: tx, W: w, At: at}, &run, &att, event.RepairObservationNotStorable, v.unstorable); err != nil {
				return err
			}
			res.Status = AttemptStatus(att.Status)
			state.Replace(w, run)
			return nil
		}
		if detail != nil {
			att.Detail = detail
		}
		switch kind {
		case ObservedAdmitted, ObservedRunning:
			st := backend.AttemptAdmitted
			if kind == ObservedRunning {
				st = backend.AttemptRunning
			}
			if att.Status == st && detail == nil {
				return errNoop
			}
			if err := state.ReportAttemptProgress(w, &run, &att, st, at); err != nil {
				return err
			}
		case ObservedDeferred:
			return errNoop
		case ObservedSucceeded:
			if err := state.SucceedAttempt(ctx, txn{Tx: tx, W: w, At: at}, &run, &act, &att, output); err != nil {
				return err
			}
			if err := memberSettled(ctx, tx, w, &run, act, at); err != nil {
				return err
			}
			if err := flush(ctx, tx, w); err != nil {
				return err
			}
			for _, rec := range succ {
				if _, err := addActivation(ctx, tx, w, &run, rec, at); err != nil {
					return err
				}
				if err := flush(ctx, tx, w); err != nil {
					return err
				}
			}
			for _, fo := range v.fanOuts {
				if _, err := addFanOut(ctx, tx, w, &run, fo, at); err != nil {
					return err
				}
			}
		case ObservedFailed, ObservedRetryableFailure:
			if err := state.FailAttempt(ctx, txn{Tx: tx, W: w, At: at}, &run, &act, &att, kind == ObservedRetryableFailure); err != nil {
				return err
			}
			if kind == ObservedRetryableFailure {
				sched, refusal, err := scheduleFromPolicy(ctx, txn{Tx: tx, W: w, At: at}, &run, act, att)
				if err != nil {
					return err
				}
				res.Schedule, res.NotScheduled = toSchedulePtr(sched), refusal
			}
			if err := activationFailed(ctx, txn{Tx: tx, W: w, At: at}, &run, act, res.Schedule != nil); err != nil {
				return err
			}
			run.UpdatedMS = at
			if err := reindexRun(ctx, tx, w, run); err != nil {
				return err
			}
		case ObservedPaused:
			if err := state.PauseAttempt(ctx, txn{Tx: tx, W: w, At: at}, &run, &act, &att, obs.PauseReason); err != nil {
				return err
			}
			if err := reindexRun(ctx, tx, w, run); err != nil {
				return err
			}
		case ObservedCancelled:
			p := event.AttemptCancelledPayload{Observed: observed}
			if observed == ObservedSucceeded {
				p.Output = json.RawMessage(output)
			}
			if err := state.CancelAttempt(ctx, txn{Tx: tx, W: w, At: at}, &run, &act, &att, p); err != nil {
				return err
			}
			if err := memberSettled(ctx, tx, w, &run, act, at); err != nil {
				return err
			}
			if err := finalizeCancellation(ctx, tx, w, &run, at); err != nil {
				return err
			}
		case ObservedUnknown:
			if att.SideEffect == backend.ReadOnly {
				res.Unresolved = true
				return errNoop
			}
			if err := state.RequireAttemptRepair(w, &run, &att, event.AttemptRepairRequiredPayload{Reason: "unknown_outcome"}, at); err != nil {
				return err
			}
			if err := state.HoldRunForRepair(&run); err != nil {
				return err
			}
			run.UpdatedMS = at
			if err := reindexRun(ctx, tx, w, run); err != nil {
				return err
			}
		}
		if err := failedRunSettled(ctx, tx, w, &run, was, at); err != nil {
			return err
		}
		res.Status = AttemptStatus(att.Status)
		state.Replace(w, run)
		return nil
	}()
	return res, err
}

package workflow

import (
	"context"
	"encoding/json"
	"errors"
	"math"
	"time"

	"github.com/wfstore/wfstore/backend"
	"github.com/wfstore/wfstore/wftype"
	"github.com/wfstore/wfstore/workflow/internal/state"
)

// RetryRequeue reports a failed activation requeued for its next attempt.
type RetryRequeue struct {
	Key             ActivationKey
	PreviousAttempt uint32
	NextAttempt     uint32
}

// buildSchedule decides e and returns the schedule it implies, or
// ErrIneligible / ErrInvalidInput.
func buildSchedule(e RetryEligibility, k backend.ActivationKey, kind FailureKind, backoffMS, at int64) (backend.RetrySchedule, error) {
	if e.Failure != kind {
		return backend.RetrySchedule{}, invalid("retry failure kind", "automatic retry failure kind does not match eligibility facts")
	}
	d := DecideRetry(e)
	if !d.Eligible {
		return backend.RetrySchedule{}, stateErr(ErrIneligible, "automatic retry is ineligible: %s", d.Reason)
	}
	if backoffMS < 0 {
		return backend.RetrySchedule{}, invalid("retry backoff", "must not be negative")
	}
	if at > math.MaxInt64-backoffMS {
		return backend.RetrySchedule{}, invalid("retry backoff", "automatic retry backoff timestamp overflow")
	}
	return backend.RetrySchedule{
		Key: k, FailedAttempt: e.AttemptsCompleted, NextAttempt: d.NextAttempt, FailureKind: string(kind),
		BackoffMS: backoffMS, DueMS: at + backoffMS, ScheduledMS: at,
	}, nil
}

// putSchedule inserts sched unless the activation already has one: an
// identical schedule is kept (no event), a different one fails with
// ErrConflict. The event is appended only on first insert.
func putSchedule(ctx context.Context, tx backend.ReadTx, w *batch, run *backend.Run, sched backend.RetrySchedule, at int64) (backend.RetrySchedule, bool, error) {
	f, err := tx.Load(ctx, backend.Lookup{Schedules: []backend.ActivationKey{sched.Key}, Activations: []backend.ActivationKey{sched.Key}})
	if err != nil {
		return sched, false, err
	}
	if _, ok := f.Activations[sched.Key]; !ok {
		return sched, false, stateErr(ErrNotFound, "activation %v", sched.Key)
	}
	if old, ok := f.Schedules[sched.Key]; ok {
		if old == sched {
			return old, false, nil
		}
		return old, false, stateErr(ErrConflict, "automatic retry schedule identity conflict: %v", sched.Key)
	}
	state.MakeSchedule(w, run, sched, at)
	return sched, true, nil
}

// RefusalReason is package wftype's RefusalReason.
type RefusalReason = wftype.RefusalReason

// The RefusalReason values, as package wftype defines them.
const (
	RefusedNoPolicy        RefusalReason = wftype.RefusedNoPolicy
	RefusedKindNotAdmitted RefusalReason = wftype.RefusedKindNotAdmitted
	RefusedIneligible      RefusalReason = wftype.RefusedIneligible
	RefusedBackoffOverflow RefusalReason = wftype.RefusedBackoffOverflow
	RefusedScheduleExists  RefusalReason = wftype.RefusedScheduleExists
)

// RetryRefusal is why a RetryableFailure observation settled its attempt
// as failed without scheduling an automatic retry. The same reason is
// recorded in an automatic_retry_not_scheduled event in the observation's
// transaction.
type RetryRefusal struct {
	Reason RefusalReason
	// Ineligible is the decision table's reason when Reason is
	// RefusedIneligible, else empty.
	Ineligible IneligibleReason
	// Existing is the schedule kept when Reason is RefusedScheduleExists.
	Existing *RetrySchedule
}

// scheduleFromPolicy decides an automatic retry of a RetryableFailure from
// the activation's own policy, in the failing transaction. It returns the
// schedule made (or the identical one already stored), or the refusal,
// which it records in an automatic_retry_not_scheduled event. An existing
// schedule for an earlier attempt can never be consumed and is replaced
// (with an automatic_retry_discarded event); any other different schedule
// is kept and the new one refused (RefusedScheduleExists).
func scheduleFromPolicy(ctx context.Context, t txn, run *backend.Run, act backend.Activation, failed backend.Attempt) (*backend.RetrySchedule, *RetryRefusal, error) {
	return scheduleForKind(ctx, t, run, act, failed, FailureOwnerReportedRetryable)
}

// scheduleForKind is scheduleFromPolicy for a failure of kind: the policy
// must admit kind and DecideRetry accept it (a terminal kind never is).
func scheduleForKind(ctx context.Context, t txn, run *backend.Run, act backend.Activation, failed backend.Attempt, kind FailureKind) (*backend.RetrySchedule, *RetryRefusal, error) {
	tx, w, at := t.Tx, t.W, t.At
	identity, attempt := failed.Identity, failed.Key.Attempt
	refuse := func(r RetryRefusal) (*backend.RetrySchedule, *RetryRefusal, error) {
		state.RefuseSchedule(w, run, state.Refusal{Failed: backend.AttemptKey{ActivationKey: act.Key, Attempt: attempt}, Identity: identity, Reason: r.Reason, Ineligible: r.Ineligible}, at)
		return nil, &r, nil
	}
	if act.RetryPolicy == nil {
		return refuse(RetryRefusal{Reason: RefusedNoPolicy})
	}
	var p RetryPolicy
	if err := json.Unmarshal(act.RetryPolicy, &p); err != nil {
		return nil, nil, err
	}
	if !p.Admits(kind) {
		return refuse(RetryRefusal{Reason: RefusedKindNotAdmitted})
	}
	e := RetryEligibility{
		Version: RetryPolicyVersion, Effect: Effect(act.Effect), Reconciliation: Reconciliation(act.Reconciliation),
		Failure: kind, AttemptsCompleted: attempt,
		MaxAttempts: p.MaxAttempts, RetryCap: uint32(run.Limits.RetryCap),
	}
	if d := DecideRetry(e); !d.Eligible {
		return refuse(RetryRefusal{Reason: RefusedIneligible, Ineligible: d.Reason})
	}
	backoff, err := p.Backoff(attempt + 1)
	if err != nil {
		return refuse(RetryRefusal{Reason: RefusedBackoffOverflow})
	}
	sched, err := buildSchedule(e, act.Key, kind, backoff.Milliseconds(), at)
	if err != nil {
		return refuse(RetryRefusal{Reason: RefusedBackoffOverflow})
	}
	f, err := tx.Load(ctx, backend.Lookup{Schedules: []backend.ActivationKey{act.Key}})
	if err != nil {
		return nil, nil, err
	}
	if old, ok := f.Schedules[act.Key]; ok {
		switch {
		case old == sched:
			return &old, nil, nil
		case old.FailedAttempt < attempt:
			state.DiscardSchedule(w, run, old, discardAttemptMovedOn, at)
		default:
			return refuse(RetryRefusal{Reason: RefusedScheduleExists, Existing: toSchedulePtr(&old)})
		}
	}
	state.MakeSchedule(w, run, sched, at)
	return &sched, nil, nil
}

// RetryRequest asks for an automatic retry of an activation whose latest
// attempt failed, with the node facts DecideRetry needs.
type RetryRequest struct {
	Key            ActivationKey
	Effect         Effect
	Reconciliation Reconciliation
	// MaxAttempts is the policy's max_attempts (counting the first attempt).
	MaxAttempts uint32
	// Backoff is the delay before the retry is due: a whole, non-negative
	// number of milliseconds (else ErrInvalidInput).
	Backoff time.Duration
}

// RetrySchedulingRequest asks ScheduleRetry to persist an automatic retry
// schedule for one activation from retry facts the caller already holds.
type RetrySchedulingRequest struct {
	// Eligibility holds the facts the retry is decided from; the failure
	// kind is Eligibility.Failure.
	Eligibility RetryEligibility
	// Key names the activation to retry.
	Key ActivationKey
	// Backoff is the delay after now at which the retry falls due: a
	// whole, non-negative number of milliseconds (else ErrInvalidInput).
	Backoff time.Duration
}

// ScheduleRetry persists an automatic retry schedule decided from
// req.Eligibility, due req.Backoff after now. It is idempotent only for an
// identical request (same facts, backoff and now); a different schedule
// for the same activation fails with ErrConflict. The
// automatic_retry_scheduled event is written on first insert only.
func (s *Store) ScheduleRetry(ctx context.Context, req RetrySchedulingRequest, now time.Time) (RetrySchedule, error) {
	e, k, backoff := req.Eligibility, req.Key, req.Backoff
	if err := validateActivationKey(k); err != nil {
		return RetrySchedule{}, err
	}
	at, err := toMS("now", now)
	if err != nil {
		return RetrySchedule{}, err
	}
	backoffMS, err := durationMS("retry backoff", backoff)
	if err != nil {
		return RetrySchedule{}, err
	}
	sched, err := buildSchedule(e, k, e.Failure, backoffMS, at)
	if err != nil {
		return RetrySchedule{}, err
	}
	var out backend.RetrySchedule
	err = s.update(ctx, func(tx backend.Tx, w *batch) error {
		run, err := backend.GetRun(ctx, tx, k.RunID)
		if err != nil {
			return notFoundFrom(err, "run %q", k.RunID)
		}
		stored, inserted, err := putSchedule(ctx, tx, w, &run, sched, at)
		out = stored
		if err != nil {
			return err
		}
		if !inserted {
			return errNoop
		}
		state.Replace(w, run)
		w.WorkArrives() // a runner learns when it falls due
		return nil
	})
	if errors.Is(err, errNoop) {
		err = nil
	}
	if err != nil {
		return RetrySchedule{}, err
	}
	return toSchedule(out), nil
}

// ScheduleRetryForFailedAttempt reads the activation's completed attempts
// and the run's retry cap, then schedules a retry for failure kind as
// ScheduleRetry does. Whether the latest attempt really failed is checked
// at consumption.
func (s *Engine) ScheduleRetryForFailedAttempt(ctx context.Context, req RetryRequest, kind FailureKind, now time.Time) (RetrySchedule, error) {
	k := req.Key
	if err := validateActivationKey(k); err != nil {
		return RetrySchedule{}, err
	}
	if _, err := toMS("now", now); err != nil {
		return RetrySchedule{}, err
	}
	var e RetryEligibility
	err := s.view(ctx, func(r backend.ReadTx) error {
		f, err := r.Load(ctx, backend.Lookup{Runs: []string{k.RunID}, Activations: []backend.ActivationKey{k}})
		if err != nil {
			return err
		}
		run, ok := f.Runs[k.RunID]
		if !ok {
			return stateErr(ErrNotFound, "run %q", k.RunID)
		}
		act, ok := f.Activations[k]
		if !ok {
			return stateErr(ErrNotFound, "activation %v", k)
		}
		e = RetryEligibility{Version: RetryPolicyVersion, Effect: req.Effect, Reconciliation: req.Reconciliation, Failure: kind,
			AttemptsCompleted: act.LastAttempt, MaxAttempts: req.MaxAttempts, RetryCap: uint32(run.Limits.RetryCap)}
		return nil
	})
	if err != nil {
		return RetrySchedule{}, err
	}
	return s.ScheduleRetry(ctx, RetrySchedulingRequest{Eligibility: e, Key: req.Key, Backoff: req.Backoff}, now)
}

// FailureKindOf maps an observation to its retry failure kind; ok is false
// for observations that are not failures (admitted, running, deferred,
// succeeded).
func FailureKindOf(o Observation) (FailureKind, bool) {
	switch o.Kind {
	case ObservedRetryableFailure:
		return FailureOwnerReportedRetryable, true
	case ObservedPaused:
		if o.PauseReason == PauseIdleTimeout {
			return FailureTerminalTimeout, true
		}
		return FailureTerminalFailure, true
	case ObservedFailed:
		return FailureTerminalFailure, true
	case ObservedUnknown:
		return FailureAmbiguousMutation, true
	case ObservedCancelled:
		return FailureCancellation, true
	}
	return "", false
}

// ScheduleRetryFromObservation schedules a retry for an observed failure
// (its kind is FailureKindOf(o)): nil for non-failures, ErrIneligible for
// every kind but RetryableFailure.
func (s *Engine) ScheduleRetryFromObservation(ctx context.Context, req RetryRequest, o Observation, now time.Time) (*RetrySchedule, error) {
	if err := validateActivationKey(req.Key); err != nil {
		return nil, err
	}
	if _, err := toMS("now", now); err != nil {
		return nil, err
	}
	kind, ok := FailureKindOf(o)
	if !ok {
		return nil, nil
	}
	if kind != FailureOwnerReportedRetryable {
		return nil, stateErr(ErrIneligible, "automatic retry is ineligible: %s", kind)
	}
	sched, err := s.ScheduleRetryForFailedAttempt(ctx, req, kind, now)
	if err != nil {
		return nil, err
	}
	return &sched, nil
}

// GetRetrySchedule returns the activation's schedule; when it has none
// (or does not exist) the error matches ErrNotFound.
func (s *Store) GetRetrySchedule(ctx context.Context, key ActivationKey) (RetrySchedule, error) {
	k := key
	if err := validateActivationKey(k); err != nil {
		return RetrySchedule{}, err
	}
	var out backend.RetrySchedule
	err := s.view(ctx, func(r backend.ReadTx) error {
		f, err := r.Load(ctx, backend.Lookup{Schedules: []backend.ActivationKey{k}})
		if err != nil {
			return err
		}
		v, ok := f.Schedules[k]
		if !ok {
			return stateErr(ErrNotFound, "no retry schedule for activation %v", k)
		}
		out = v
		return nil
	})
	if err != nil {
		return RetrySchedule{}, err
	}
	return toSchedule(out), nil
}

// Why a due schedule that can never be consumed is discarded (the reason
// of its automatic_retry_discarded event).
const (
	discardNextAttemptMismatch   = "next_attempt_mismatch"     // next_attempt is not failed_attempt+1
	discardRetryCapExceeded      = "retry_cap_exceeded"        // next_attempt exceeds retry_cap+1
	discardSuccessorsExist       = "successors_exist"          // an activation names this one as predecessor
	discardAttemptMovedOn        = "attempt_moved_on"          // a later attempt exists
	discardLatestNotFailed       = "latest_attempt_not_failed" // the attempt settled otherwise (succeeded, paused, cancelled, abandoned)
	discardActivationNotFailed   = "activation_not_failed"     // the activation left failed (requeued, completed, cancelled)
	discardCancellationRequested = "cancellation_requested"    // tree cancellation reached the failed run
)

// maxSchedulesPassedOver bounds how many waiting due schedules one
// ConsumeNextDueRetry passes over before it reports nothing consumed.
const maxSchedulesPassedOver = MaxPageLimit

type scheduleVerdict int

const (
	scheduleConsumable scheduleVerdict = iota // consumable now
	scheduleWaiting                           // its attempt has not settled yet (or does not exist yet)
	scheduleStale                             // can never be consumed
)

// consumesAttempt reports whether a schedule may consume an attempt in
// status st: only a failed one. An abandoned mutation is retried only
// explicitly (RetryFailedNode).
func consumesAttempt(st backend.AttemptStatus) bool {
	return st == backend.AttemptFailed
}

// judgeSchedule decides, from the activation and its latest attempt (nil
// when the schedule's failed attempt does not exist), whether sched can be
// consumed now, may become consumable, or never can (with the reason). Run
// state (status, cancellation) is judged by the caller.
func judgeSchedule(run backend.Run, act backend.Activation, att *backend.Attempt, sched backend.RetrySchedule) (scheduleVerdict, string) {
	next := sched.FailedAttempt + 1
	switch {
	case sched.FailedAttempt == 0 || sched.NextAttempt != next:
		return scheduleStale, discardNextAttemptMismatch
	case int64(next) > run.Limits.RetryCap+1:
		return scheduleStale, discardRetryCapExceeded
	case act.HasSuccessors:
		return scheduleStale, discardSuccessorsExist
	case act.LastAttempt > sched.FailedAttempt:
		return scheduleStale, discardAttemptMovedOn
	case act.LastAttempt < sched.FailedAttempt || att == nil:
		return scheduleWaiting, ""
	case consumesAttempt(att.Status):
		if act.Status != backend.ActivationFailed || act.Output != nil {
			return scheduleStale, discardActivationNotFailed
		}
		return scheduleConsumable, ""
	case isSettled(att.Status):
		return scheduleStale, discardLatestNotFailed
	}
	return scheduleWaiting, "" // active or repair_required: it may still fail
}

// ConsumeNextDueRetry consumes the run's first consumable due schedule (by
// due time, node, activation) and requeues its activation, all in one
// transaction; it returns nil when nothing was consumed. Racing callers
// never both consume one schedule: exactly one requeues, the others see nil
// and no error.
//
// On the way it discards every due schedule that can never be consumed —
// its next attempt is not failed_attempt+1 or exceeds retry_cap+1, the
// activation has successors, a later attempt exists, the attempt settled
// other than failed (an abandoned mutation is retried only explicitly), or
// the activation is no longer failed — deleting it with an
// automatic_retry_discarded event naming the reason, so a stuck schedule
// never blocks a later one. A due schedule whose attempt has not settled
// yet is left in place and passed over. When the run itself cannot be
// retried (neither failed nor running, or cancellation requested) and a
// schedule is due, it fails with ErrIneligible and changes nothing.
func (s *Engine) ConsumeNextDueRetry(ctx context.Context, runID string, now time.Time) (*RetryRequeue, error) {
	if err := ValidateID("run id", runID); err != nil {
		return nil, err
	}
	at, err := toMS("now", now)
	if err != nil {
		return nil, err
	}
	var out *RetryRequeue
	err = s.update(ctx, func(tx backend.Tx, w *batch) error {
		out = nil
		var run backend.Run
		loaded := false
		for skipped := 0; skipped < maxSchedulesPassedOver; {
			due, err := tx.DueSchedules(ctx, backend.ScheduleQuery{RunID: runID, DueBy: at, Limit: skipped + 1})
			if err != nil {
				return err
			}
			if len(due) <= skipped {
				break
			}
			sched := due[skipped]
			if !loaded {
				if run, err = backend.GetRun(ctx, tx, runID); err != nil {
					return notFoundFrom(err, "run %q", runID)
				}
				if (run.Status != backend.RunFailed && run.Status != backend.RunRunning) || run.CancelRequestedMS != 0 {
					return stateErr(ErrIneligible, "workflow run is not eligible for node retry (%s)", run.Status)
				}
				loaded = true
			}
			ak := backend.AttemptKey{ActivationKey: sched.Key, Attempt: sched.FailedAttempt}
			f, err := tx.Load(ctx, backend.Lookup{Activations: []backend.ActivationKey{sched.Key}, Attempts: []backend.AttemptKey{ak}})
			if err != nil {
				return err
			}
			act, ok := f.Activations[sched.Key]
			if !ok {
				return stateErr(ErrNotFound, "activation %v", sched.Key)
			}
			var att *backend.Attempt
			if a, ok := f.Attempts[ak]; ok {
				att = &a
			}
			verdict, reason := judgeSchedule(run, act, att, sched)
			switch verdict {
			case scheduleWaiting:
				skipped++
			case scheduleStale:
				state.DiscardSchedule(w, &run, sched, reason, at)
				if act.Status == backend.ActivationFailed && len(act.Joins) > 0 {
					// Failed with no retry left: the joins waiting for it settle.
					w.Waits = append(w.Waits, waitSettled{Pred: act.Key, At: at})
				}
				if err := retryDiscarded(ctx, tx, w, &run, act, at); err != nil {
					return err
				}
				run.UpdatedMS = at
				state.Replace(w, run)
				if err := flush(ctx, tx, w); err != nil {
					return err
				}
			case scheduleConsumable:
				rq, err := retryFailedNode(ctx, txn{Tx: tx, W: w, At: at}, sched.Key, sched.FailedAttempt, &sched)
				if err != nil {
					return err
				}
				out = &rq
				return nil
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// ConsumeDueRetry consumes one due schedule exactly once: in one
// transaction it requeues the failed activation (failed→pending, run
// failed→running) and deletes the schedule. A second consumption fails with
// ErrNotFound; a schedule not yet due fails with ErrIneligible, as does a
// run that cannot be retried. A schedule that does not match the latest
// failed attempt (a later attempt exists, the attempt has not failed or was
// abandoned) fails with ErrConflict; this exact form changes nothing on any
// error and so leaves such a schedule in place: ConsumeNextDueRetry is the
// pass that discards schedules that can never be consumed.
func (s *Engine) ConsumeDueRetry(ctx context.Context, key ActivationKey, now time.Time) (RetryRequeue, error) {
	k := key
	if err := validateActivationKey(k); err != nil {
		return RetryRequeue{}, err
	}
	at, err := toMS("now", now)
	if err != nil {
		return RetryRequeue{}, err
	}
	var out RetryRequeue
	err = s.update(ctx, func(tx backend.Tx, w *batch) error {
		f, err := tx.Load(ctx, backend.Lookup{Schedules: []backend.ActivationKey{k}})
		if err != nil {
			return err
		}
		sched, ok := f.Schedules[k]
		if !ok {
			return stateErr(ErrNotFound, "automatic retry schedule does not exist: %v", k)
		}
		if sched.DueMS > at {
			return stateErr(ErrIneligible, "automatic retry schedule is not due: %v", k)
		}
		out, err = retryFailedNode(ctx, txn{Tx: tx, W: w, At: at}, k, sched.FailedAttempt, &sched)
		return err
	})
	return out, err
}

// RetryFailedNode explicitly requeues a failed, output-free activation
// whose latest attempt is failedAttempt (failed or abandoned). It is
// refused (ErrIneligible) when the run is neither failed nor running (a
// sibling's retry may have requeued it already) or has cancellation
// requested, when attempt failedAttempt+1 would exceed RetryCap+1, and when
// any activation already names this one as predecessor or a join waits for
// it (NewActivation.WaitFor: its failure cancelled the join).
func (s *Store) RetryFailedNode(ctx context.Context, key ActivationKey, failedAttempt uint32, now time.Time) (RetryRequeue, error) {
	k := key
	if err := validateActivationKey(k); err != nil {
		return RetryRequeue{}, err
	}
	if failedAttempt == 0 {
		return RetryRequeue{}, invalid("failed attempt", "must be positive")
	}
	at, err := toMS("now", now)
	if err != nil {
		return RetryRequeue{}, err
	}
	var out RetryRequeue
	err = s.update(ctx, func(tx backend.Tx, w *batch) error {
		out, err = retryFailedNode(ctx, txn{Tx: tx, W: w, At: at}, k, failedAttempt, nil)
		w.WorkArrives()
		return err
	})
	return out, err
}

func retryFailedNode(ctx context.Context, t txn, k backend.ActivationKey, failed uint32, sched *backend.RetrySchedule) (RetryRequeue, error) {
	tx, w, at := t.Tx, t.W, t.At
	f, err := tx.Load(ctx, backend.Lookup{
		Runs: []string{k.RunID}, Activations: []backend.ActivationKey{k},
		Attempts: []backend.AttemptKey{{ActivationKey: k, Attempt: failed}},
	})
	if err != nil {
		return RetryRequeue{}, err
	}
	run, ok := f.Runs[k.RunID]
	if !ok {
		return RetryRequeue{}, stateErr(ErrNotFound, "run %q", k.RunID)
	}
	act, ok := f.Activations[k]
	if !ok {
		return RetryRequeue{}, stateErr(ErrNotFound, "activation %v", k)
	}
	// Upstream requires a failed run. A run that a sibling's retry already
	// requeued is running; its other failed activations may be requeued too.
	if err := state.Reopenable(run); err != nil {
		return RetryRequeue{}, err
	}
	if act.Status != backend.ActivationFailed || act.Output != nil {
		return RetryRequeue{}, stateErr(ErrIneligible, "workflow activation is not an output-free failed activation")
	}
	att, ok := f.Attempts[backend.AttemptKey{ActivationKey: k, Attempt: failed}]
	if !ok || act.LastAttempt != failed || (sched != nil && !consumesAttempt(att.Status)) ||
		(att.Status != backend.AttemptFailed && att.Status != backend.AttemptAbandoned) {
		if sched != nil {
			return RetryRequeue{}, stateErr(ErrConflict, "automatic retry schedule next attempt became stale")
		}
		return RetryRequeue{}, stateErr(ErrIneligible, "workflow retry requires the latest failed attempt identity")
	}
	next := failed + 1
	if int64(next) > run.Limits.RetryCap+1 {
		return RetryRequeue{}, stateErr(ErrIneligible, "workflow retry cap exceeded")
	}
	if act.HasSuccessors {
		return RetryRequeue{}, stateErr(ErrIneligible, "workflow retry is unsafe after downstream activation")
	}
	if sched == nil && len(act.Joins) > 0 {
		// A join waiting for it was cancelled by this failure (or, with a
		// retry pending, only an automatic retry may requeue it).
		return RetryRequeue{}, stateErr(ErrIneligible, "workflow retry is unsafe after downstream activation: joins wait for it")
	}
	if sched != nil && (sched.FailedAttempt != failed || sched.NextAttempt != next) {
		return RetryRequeue{}, stateErr(ErrConflict, "automatic retry schedule next attempt became stale")
	}
	if err := state.RequeueActivation(&act, at); err != nil {
		return RetryRequeue{}, err
	}
	if err := memberRequeued(ctx, tx, w, &run, &act, at); err != nil {
		return RetryRequeue{}, err
	}
	state.Replace(w, act)
	if err := state.ReopenRun(&run, at); err != nil {
		return RetryRequeue{}, err
	}
	out := RetryRequeue{Key: k, PreviousAttempt: failed, NextAttempt: next}
	state.RecordNodeRetry(w, &run, k, failed, at)
	if sched != nil {
		state.ConsumeSchedule(w, &run, *sched, at)
	} else if err := supersedeSchedule(ctx, tx, w, &run, k, at); err != nil {
		return RetryRequeue{}, err
	}
	if err := reindexRun(ctx, tx, w, run); err != nil {
		return RetryRequeue{}, err
	}
	state.Replace(w, run)
	return out, nil
}

// supersedeSchedule deletes a schedule an explicit retry made moot, so it
// can never requeue a second time.
func supersedeSchedule(ctx context.Context, tx backend.ReadTx, w *batch, run *backend.Run, k backend.ActivationKey, at int64) error {
	f, err := tx.Load(ctx, backend.Lookup{Schedules: []backend.ActivationKey{k}})
	if err != nil {
		return err
	}
	if old, ok := f.Schedules[k]; ok {
		state.SupersedeStoredSchedule(w, run, old, at)
	}
	return nil
}

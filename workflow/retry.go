package workflow

import (
	"context"
	"encoding/json"
	"math"
	"time"

	"github.com/wfstore/wfstore/backend"
)

// RetryRequeue reports a failed activation requeued for its next attempt.
type RetryRequeue struct {
	Key             ActivationKey
	PreviousAttempt uint32
	NextAttempt     uint32
}

func scheduleJSON(s backend.RetrySchedule) map[string]any {
	return map[string]any{
		"run_id": s.Key.RunID, "node_id": s.Key.NodeID, "activation_id": s.Key.ActivationID,
		"failed_attempt": s.FailedAttempt, "next_attempt": s.NextAttempt, "failure_kind": s.FailureKind,
		"backoff_ms": s.BackoffMS, "next_attempt_at_ms": s.DueMS, "scheduled_at_ms": s.ScheduledMS,
	}
}

// buildSchedule decides e and returns the schedule it implies, or
// ErrIneligible / ErrInvalidInput.
func buildSchedule(e RetryEligibility, k ActivationKey, kind FailureKind, backoffMS, at int64) (backend.RetrySchedule, error) {
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
	w.insert(sched)
	w.event(run, "automatic_retry_scheduled", scheduleJSON(sched), at)
	return sched, true, nil
}

// scheduleFromPolicy schedules an automatic retry of a RetryableFailure
// from the activation's own policy, in the failing transaction. It returns
// nil when the activation has no policy, the policy does not admit the
// kind, or the decision is ineligible.
func scheduleFromPolicy(ctx context.Context, tx backend.ReadTx, w *batch, run *backend.Run, act backend.Activation, attempt uint32, at int64) (*RetrySchedule, error) {
	if act.RetryPolicy == nil {
		return nil, nil
	}
	var p RetryPolicy
	if err := json.Unmarshal(act.RetryPolicy, &p); err != nil {
		return nil, err
	}
	if !p.Admits(FailureOwnerReportedRetryable) {
		return nil, nil
	}
	e := RetryEligibility{
		Version: RetryPolicyVersion, Effect: act.Effect, Reconciliation: act.Reconciliation,
		Failure: FailureOwnerReportedRetryable, AttemptsCompleted: attempt,
		MaxAttempts: p.MaxAttempts, RetryCap: uint32(run.Limits.RetryCap),
	}
	if !DecideRetry(e).Eligible {
		return nil, nil
	}
	backoff, err := p.Backoff(attempt + 1)
	if err != nil {
		return nil, nil
	}
	sched, err := buildSchedule(e, act.Key, FailureOwnerReportedRetryable, backoff, at)
	if err != nil {
		return nil, nil
	}
	stored, _, err := putSchedule(ctx, tx, w, run, sched, at)
	if err != nil {
		return nil, err
	}
	return &stored, nil
}

// ScheduleRetry persists an automatic retry schedule decided from e. It is
// idempotent only for an identical request (same facts, backoff and now);
// a different schedule for the same activation fails with ErrConflict. The
// automatic_retry_scheduled event is written on first insert only.
func (s *Store) ScheduleRetry(ctx context.Context, e RetryEligibility, k ActivationKey, kind FailureKind, backoffMS int64, now time.Time) (RetrySchedule, error) {
	if err := validateActivationKey(k); err != nil {
		return RetrySchedule{}, err
	}
	at, err := toMS("now", now)
	if err != nil {
		return RetrySchedule{}, err
	}
	sched, err := buildSchedule(e, k, kind, backoffMS, at)
	if err != nil {
		return RetrySchedule{}, err
	}
	var out RetrySchedule
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
		w.replace(run)
		return nil
	})
	if err == errNoop {
		err = nil
	}
	return out, err
}

// ScheduleRetryForFailedAttempt reads the activation's completed attempts
// and the run's retry cap, then schedules as ScheduleRetry does. Whether the
// latest attempt really failed is checked at consumption.
func (s *Store) ScheduleRetryForFailedAttempt(ctx context.Context, k ActivationKey, kind FailureKind, effect Effect, recon Reconciliation, maxAttempts uint32, backoffMS int64, now time.Time) (RetrySchedule, error) {
	if err := validateActivationKey(k); err != nil {
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
		e = RetryEligibility{Version: RetryPolicyVersion, Effect: effect, Reconciliation: recon, Failure: kind,
			AttemptsCompleted: act.LastAttempt, MaxAttempts: maxAttempts, RetryCap: uint32(run.Limits.RetryCap)}
		return nil
	})
	if err != nil {
		return RetrySchedule{}, err
	}
	return s.ScheduleRetry(ctx, e, k, kind, backoffMS, now)
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

// ScheduleRetryFromObservation schedules a retry for an observed failure:
// nil for non-failures, ErrIneligible for every kind but RetryableFailure.
func (s *Store) ScheduleRetryFromObservation(ctx context.Context, k ActivationKey, o Observation, effect Effect, recon Reconciliation, maxAttempts uint32, backoffMS int64, now time.Time) (*RetrySchedule, error) {
	kind, ok := FailureKindOf(o)
	if !ok {
		return nil, nil
	}
	if kind != FailureOwnerReportedRetryable {
		return nil, stateErr(ErrIneligible, "automatic retry is ineligible: %s", kind)
	}
	sched, err := s.ScheduleRetryForFailedAttempt(ctx, k, kind, effect, recon, maxAttempts, backoffMS, now)
	if err != nil {
		return nil, err
	}
	return &sched, nil
}

// GetRetrySchedule returns the activation's schedule, nil when none.
func (s *Store) GetRetrySchedule(ctx context.Context, k ActivationKey) (*RetrySchedule, error) {
	if err := validateActivationKey(k); err != nil {
		return nil, err
	}
	var out *RetrySchedule
	err := s.view(ctx, func(r backend.ReadTx) error {
		f, err := r.Load(ctx, backend.Lookup{Schedules: []backend.ActivationKey{k}})
		if err != nil {
			return err
		}
		if v, ok := f.Schedules[k]; ok {
			out = &v
		}
		return nil
	})
	return out, err
}

// ConsumeNextDueRetry consumes the run's first due schedule (by due time,
// node, activation) and requeues its activation; nil when none is due.
func (s *Store) ConsumeNextDueRetry(ctx context.Context, runID string, now time.Time) (*RetryRequeue, error) {
	if err := ValidateID("run id", runID); err != nil {
		return nil, err
	}
	at, err := toMS("now", now)
	if err != nil {
		return nil, err
	}
	var due []backend.RetrySchedule
	err = s.view(ctx, func(r backend.ReadTx) error {
		var err error
		due, err = r.DueSchedules(ctx, backend.ScheduleQuery{RunID: runID, DueBy: at, Limit: 1})
		return err
	})
	if err != nil || len(due) == 0 {
		return nil, err
	}
	rq, err := s.ConsumeDueRetry(ctx, due[0].Key, now)
	if err != nil {
		return nil, err
	}
	return &rq, nil
}

// ConsumeDueRetry consumes one due schedule exactly once: in one
// transaction it requeues the failed activation (failed→pending, run
// failed→running) and deletes the schedule. A second consumption fails with
// ErrNotFound; a stale schedule (the latest attempt moved on) fails with
// ErrConflict; a schedule not yet due fails with ErrIneligible.
func (s *Store) ConsumeDueRetry(ctx context.Context, k ActivationKey, now time.Time) (RetryRequeue, error) {
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
		out, err = retryFailedNode(ctx, tx, w, k, sched.FailedAttempt, &sched, at)
		return err
	})
	return out, err
}

// RetryFailedNode explicitly requeues a failed, output-free activation
// whose latest attempt is failedAttempt (failed or abandoned). It is
// refused (ErrIneligible) when the run is neither failed nor running (a
// sibling's retry may have requeued it already) or has cancellation
// requested, when attempt failedAttempt+1 would exceed RetryCap+1, and when
// any activation already names this one as predecessor.
func (s *Store) RetryFailedNode(ctx context.Context, k ActivationKey, failedAttempt uint32, now time.Time) (RetryRequeue, error) {
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
		out, err = retryFailedNode(ctx, tx, w, k, failedAttempt, nil, at)
		return err
	})
	return out, err
}

func retryFailedNode(ctx context.Context, tx backend.Tx, w *batch, k ActivationKey, failed uint32, sched *backend.RetrySchedule, at int64) (RetryRequeue, error) {
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
	if (run.Status != backend.RunFailed && run.Status != backend.RunRunning) || run.CancelRequestedMS != 0 {
		return RetryRequeue{}, stateErr(ErrIneligible, "workflow run is not eligible for node retry (%s)", run.Status)
	}
	if act.Status != backend.ActivationFailed || act.Output != nil {
		return RetryRequeue{}, stateErr(ErrIneligible, "workflow activation is not an output-free failed activation")
	}
	att, ok := f.Attempts[backend.AttemptKey{ActivationKey: k, Attempt: failed}]
	if !ok || act.LastAttempt != failed || (att.Status != backend.AttemptFailed && att.Status != backend.AttemptAbandoned) {
		if sched != nil {
			return RetryRequeue{}, stateErr(ErrConflict, "automatic retry schedule next attempt became stale")
		}
		return RetryRequeue{}, stateErr(ErrIneligible, "workflow retry requires the latest failed attempt identity")
	}
	next := failed + 1
	if int64(next) > run.Limits.RetryCap+1 {
		return RetryRequeue{}, stateErr(ErrIneligible, "workflow retry cap exceeded")
	}
	if act.HasSuccessors && !mutated("retry-downstream") {
		return RetryRequeue{}, stateErr(ErrIneligible, "workflow retry is unsafe after downstream activation")
	}
	if sched != nil && (sched.FailedAttempt != failed || sched.NextAttempt != next) {
		return RetryRequeue{}, stateErr(ErrConflict, "automatic retry schedule next attempt became stale")
	}
	act.Status = backend.ActivationPending
	act.UpdatedMS = at
	if err := memberRequeued(ctx, tx, w, &run, &act, at); err != nil {
		return RetryRequeue{}, err
	}
	w.replace(act)
	run.Status = backend.RunRunning
	run.UpdatedMS = at
	out := RetryRequeue{Key: k, PreviousAttempt: failed, NextAttempt: next}
	w.event(&run, "node_retry_requested", map[string]any{
		"run_id": k.RunID, "node_id": k.NodeID, "activation_id": k.ActivationID,
		"previous_attempt": failed, "next_attempt": next,
	}, at)
	if sched != nil {
		if !mutated("schedule-consume-twice") {
			w.delete(*sched)
		}
		w.event(&run, "automatic_retry_consumed", scheduleJSON(*sched), at)
	} else if err := supersedeSchedule(ctx, tx, w, &run, k, at); err != nil {
		return RetryRequeue{}, err
	}
	if err := reindexRun(ctx, tx, w, run); err != nil {
		return RetryRequeue{}, err
	}
	w.replace(run)
	return out, nil
}

// supersedeSchedule deletes a schedule an explicit retry made moot, so it
// can never requeue a second time.
func supersedeSchedule(ctx context.Context, tx backend.ReadTx, w *batch, run *backend.Run, k ActivationKey, at int64) error {
	f, err := tx.Load(ctx, backend.Lookup{Schedules: []backend.ActivationKey{k}})
	if err != nil {
		return err
	}
	if old, ok := f.Schedules[k]; ok {
		w.delete(old)
		w.event(run, "automatic_retry_superseded", scheduleJSON(old), at)
	}
	return nil
}

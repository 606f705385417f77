package workflow

import (
	"context"
	"encoding/json"
	"math"
	"time"

	"github.com/wfstore/wfstore/backend"
	"github.com/wfstore/wfstore/event"
	"github.com/wfstore/wfstore/workflow/internal/state"
)

// Attempt timeout bounds. An attempt timeout is 0 (none) or a whole number
// of milliseconds from MinAttemptTimeout to MaxAttemptTimeout.
const (
	MinAttemptTimeout = time.Millisecond
	MaxAttemptTimeout = 30 * 24 * time.Hour
)

// validateAttemptTimeout applies the attempt-timeout bounds to d.
func validateAttemptTimeout(field string, d time.Duration) error {
	if d != 0 && (d < MinAttemptTimeout || d > MaxAttemptTimeout) {
		return invalid(field, "must be 0 (none) or %v to %v, got %v", MinAttemptTimeout, MaxAttemptTimeout, d)
	}
	return nil
}

// activationTimeoutMS is the activation's own attempt timeout in
// milliseconds, 0 when it has none.
func activationTimeoutMS(act backend.Activation) int64 { return act.AttemptTimeoutMS }

// timeoutOf is the timeout that applies to an attempt of act: its own,
// else def (milliseconds; 0 = none).
func timeoutOf(act backend.Activation, def int64) int64 {
	if t := activationTimeoutMS(act); t > 0 {
		return t
	}
	return def
}

// deadlineOf is an admitted attempt's deadline under timeout (ms, > 0),
// saturating.
func deadlineOf(att backend.Attempt, timeout int64) int64 {
	if att.AdmittedMS > math.MaxInt64-timeout {
		return math.MaxInt64
	}
	return att.AdmittedMS + timeout
}

// timedOutDetail is the detail a timeout settlement keeps on its attempt;
// its presence marks the attempt as settled by a timeout.
type timedOutDetail struct {
	TerminalTimeout struct {
		TimeoutMS  int64 `json:"timeout_ms"`
		DeadlineMS int64 `json:"deadline_ms"`
	} `json:"terminal_timeout"`
}

// timedOut reports whether att was settled by SettleTimedOut.
func timedOut(att backend.Attempt) bool {
	if att.Detail == nil || (att.Status != backend.AttemptFailed && att.Status != backend.AttemptRepairRequired) {
		return false
	}
	var d timedOutDetail
	return json.Unmarshal(att.Detail, &d) == nil && d.TerminalTimeout.DeadlineMS > 0
}

// TimeoutOptions are the facts SettleTimedOut and TimedOutAttempts decide
// with.
type TimeoutOptions struct {
	// Default is the attempt timeout of activations that declare none: 0
	// (none) or MinAttemptTimeout to MaxAttemptTimeout.
	Default time.Duration
	// Authority, when set, must be the run's current authority.
	Authority *Authority
}

func (o TimeoutOptions) validate() (int64, *backend.Authority, error) {
	if err := validateAttemptTimeout("default attempt timeout", o.Default); err != nil {
		return 0, nil, err
	}
	a := copyAuthority(o.Authority)
	if err := validateAuthority(a); err != nil {
		return 0, nil, err
	}
	def, err := durationMS("default attempt timeout", o.Default)
	if err != nil {
		return 0, nil, err
	}
	return def, a, nil
}

// TimeoutResult reports what SettleTimedOut did.
type TimeoutResult struct {
	// Status is the attempt's status afterwards: failed for a read-only
	// attempt, repair_required for a mutating one.
	Status AttemptStatus
	// Timeout is the timeout that applied and Deadline the admitted time
	// plus it.
	Timeout  time.Duration
	Deadline time.Time
	// NotScheduled says why no automatic retry was scheduled for a failed
	// read-only attempt: a timeout is a terminal failure no policy admits.
	NotScheduled *RetryRefusal
}

// SettleTimedOut settles an admitted (or running) attempt that was not
// observed terminal by its deadline, its admitted time plus its
// activation's attempt timeout (opts.Default when it declares none), as a
// failure of kind terminal_timeout, in one transaction that checks the
// deadline against now and the attempt's status. A read-only attempt
// becomes failed, its activation failed and its run failed as for an
// observed failure (an automatic retry is never scheduled: the refusal is
// recorded; a caller may retry it explicitly with RetryFailedNode); a
// mutating one becomes repair_required, with its run, since its work may
// still run. Either way an attempt_timed_out event records the timeout,
// and no new attempt starts. A later observation of the attempt is
// recorded as an event (see ApplyObservation).
//
// The deadline is compared with the caller's now: a caller whose clock is
// ahead of the clock that stamped the admission shortens the timeout by
// the difference.
//
// An attempt that is not admitted or running, or whose deadline is after
// now (or that has no timeout), fails with ErrIneligible and nothing is
// written; so does one already settled, by a timeout or otherwise, and one
// whose run has cancellation requested (cancellation settles it).
func (s *Engine) SettleTimedOut(ctx context.Context, identity string, opts TimeoutOptions, now time.Time) (TimeoutResult, error) {
	var res TimeoutResult
	def, auth, err := opts.validate()
	if err != nil {
		return res, err
	}
	err = s.attemptTx(ctx, identity, now, func(tx backend.Tx, w *batch, run *backend.Run, act backend.Activation, att *backend.Attempt, at int64) error {
		if err := ownedBy(auth, "timeout").verify(*run); err != nil {
			return err
		}
		if (att.Status != backend.AttemptAdmitted && att.Status != backend.AttemptRunning) || att.Receipt == nil {
			return stateErr(ErrIneligible, "attempt %s is %s; only admitted work times out", att.Identity, att.Status)
		}
		if run.CancelRequestedMS != 0 {
			return stateErr(ErrIneligible, "run %q has cancellation requested: its attempts settle by cancellation", run.ID)
		}
		timeout := timeoutOf(act, def)
		if timeout <= 0 {
			return stateErr(ErrIneligible, "attempt %s has no attempt timeout", att.Identity)
		}
		deadline := deadlineOf(*att, timeout)
		if at < deadline {
			return stateErr(ErrIneligible, "attempt %s is not due to time out until %d (now %d)", att.Identity, deadline, at)
		}
		var d timedOutDetail
		d.TerminalTimeout.TimeoutMS, d.TerminalTimeout.DeadlineMS = timeout, deadline
		detail, err := json.Marshal(d)
		if err != nil {
			return err
		}
		att.Detail = detail
		res.Timeout, res.Deadline = msToDuration(timeout), fromMS(deadline)
		was := run.Status
		ev := event.AttemptTimedOutPayload{FailureKind: FailureTerminalTimeout, TimeoutMS: event.Millis(timeout), DeadlineMS: event.UnixMS(deadline)}
		if att.SideEffect == backend.ReadOnly {
			if err := state.SettleAttempt(ctx, txn{Tx: tx, W: w, At: at}, run, act, att, backend.AttemptFailed); err != nil {
				return err
			}
			state.Replace(w, *att)
			if err := state.FailActivation(w, &act, at); err != nil {
				return err
			}
			ev.Status = AttemptFailed
			state.RecordTimeout(w, run, att, ev, at)
			sched, refusal, err := scheduleForKind(ctx, txn{Tx: tx, W: w, At: at}, run, act, *att, FailureTerminalTimeout)
			if err != nil {
				return err
			}
			res.NotScheduled = refusal
			if err := activationFailed(ctx, txn{Tx: tx, W: w, At: at}, run, act, sched != nil); err != nil {
				return err
			}
		} else {
			ev.Status = AttemptRepairRequired
			state.RecordTimeout(w, run, att, ev, at)
			if err := state.RequireAttemptRepair(w, run, att, event.AttemptRepairRequiredPayload{Reason: string(FailureTerminalTimeout)}, at); err != nil {
				return err
			}
			if err := state.HoldRunForRepair(run); err != nil {
				return err
			}
		}
		run.UpdatedMS = at
		if err := reindexRun(ctx, tx, w, *run); err != nil {
			return err
		}
		if err := failedRunSettled(ctx, tx, w, run, was, at); err != nil {
			return err
		}
		res.Status = AttemptStatus(att.Status)
		w.WorkArrives() // a failed attempt frees capacity and leases
		return nil
	})
	if err != nil {
		return TimeoutResult{}, err
	}
	return res, nil
}

// TimeoutQuery asks TimedOutAttempts for admitted attempts past their
// deadline.
type TimeoutQuery struct {
	// RunID restricts the listing to one run when set.
	RunID string
	// Default is the timeout of activations that declare none (see
	// TimeoutOptions.Default).
	Default time.Duration
	// After resumes after a previous page (its Next); empty starts at the
	// beginning.
	After Cursor
	// Limit bounds the attempts one call reads, by the page-limit rule.
	Limit int
}

// TimedOutAttempt is an admitted attempt past its deadline.
type TimedOutAttempt struct {
	Attempt  Attempt
	Timeout  time.Duration
	Deadline time.Time
}

// timeoutStatuses are the statuses TimedOutAttempts reads, in order.
var timeoutStatuses = []backend.AttemptStatus{backend.AttemptAdmitted, backend.AttemptRunning}

// TimedOutAttempts returns, from one snapshot, a page of admitted and
// running attempts whose deadline (see SettleTimedOut) is at or before
// now: admitted ones, then running ones, each by (prepared time,
// identity). It writes nothing; SettleTimedOut decides again. One call
// reads at most q.Limit attempts (and their activations). It filters what
// it reads (see Page.Next): a page may hold fewer than Limit items, none
// included, while Next is not empty. A full scan pages until Next is
// empty.
func (s *Engine) TimedOutAttempts(ctx context.Context, q TimeoutQuery, now time.Time) (Page[TimedOutAttempt], error) {
	var page Page[TimedOutAttempt]
	if q.RunID != "" {
		if err := ValidateID("run id", q.RunID); err != nil {
			return page, err
		}
	}
	limit, err := pageLimit("timeout scan limit", q.Limit)
	if err != nil {
		return page, err
	}
	def, _, err := TimeoutOptions{Default: q.Default}.validate()
	if err != nil {
		return page, err
	}
	start, err := decodeStage(timedOutCursor, q.After, len(timeoutStatuses))
	if err != nil {
		return page, err
	}
	at, err := toMS("now", now)
	if err != nil {
		return page, err
	}
	err = s.view(ctx, func(r backend.ReadTx) error {
		page = Page[TimedOutAttempt]{}
		cur := start
		budget := limit
		for cur.Stage < len(timeoutStatuses) && budget > 0 {
			asked := budget
			rows, err := r.Attempts(ctx, backend.AttemptQuery{RunID: q.RunID, Status: timeoutStatuses[cur.Stage], After: cur.after(), Limit: asked})
			if err != nil {
				return err
			}
			budget -= len(rows)
			keys := make([]backend.ActivationKey, 0, len(rows))
			for _, a := range rows {
				keys = append(keys, a.Key.ActivationKey)
			}
			f, err := r.Load(ctx, backend.Lookup{Activations: keys})
			if err != nil {
				return err
			}
			for _, a := range rows {
				cur.Prepared, cur.Identity = a.PreparedMS, a.Identity
				timeout := timeoutOf(f.Activations[a.Key.ActivationKey], def)
				if timeout <= 0 || a.Receipt == nil {
					continue
				}
				if deadline := deadlineOf(a, timeout); deadline <= at {
					page.Items = append(page.Items, TimedOutAttempt{Attempt: toAttempt(a), Timeout: msToDuration(timeout), Deadline: fromMS(deadline)})
				}
			}
			if len(rows) < asked {
				cur = stagePos{Stage: cur.Stage + 1}
			}
		}
		if cur.Stage < len(timeoutStatuses) {
			page.Next = encodeCursor(timedOutCursor, cur)
		}
		return nil
	})
	if err != nil {
		return Page[TimedOutAttempt]{}, err
	}
	return page, nil
}

// observedAfterTimeout records an observation of an attempt a timeout
// settled. It reports whether the attempt was admitted again so that the
// caller applies the observation as for any admitted attempt: a
// repair_required (mutating) one is, by an observation that settles it,
// as a late receipt admits a repair_required attempt; a failed
// (read-only) one keeps its status, and so does a repair_required one on
// an observation that settles nothing. The caller writes run.
func observedAfterTimeout(ctx context.Context, t txn, run *backend.Run, att *backend.Attempt, kind ObservationKind) (bool, error) {
	tx, w, at := t.Tx, t.W, t.At
	state.RecordLateObservation(w, run, att, kind, at)
	if att.Status != backend.AttemptRepairRequired {
		return false, nil
	}
	switch kind {
	case ObservedSucceeded, ObservedFailed, ObservedRetryableFailure, ObservedPaused, ObservedCancelled:
	default:
		return false, nil
	}
	if err := state.AdmitAttempt(run, att, at); err != nil {
		return false, err
	}
	att.TerminalMS = 0
	if err := tx.Apply(ctx, backend.Changes{Replace: backend.Replaces{Attempts: []backend.Attempt{*att}}}); err != nil {
		return false, err
	}
	return true, settleRepairState(ctx, tx, w, run, at)
}

// TimedOut reports whether SettleTimedOut settled the attempt (its status
// is failed or repair_required and its detail records the timeout).
func (a Attempt) TimedOut() bool {
	return timedOut(backend.Attempt{Status: backend.AttemptStatus(a.Status), Detail: a.Detail})
}

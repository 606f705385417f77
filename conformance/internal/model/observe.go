package model

// Owner observations and the retry schedules a failure may leave.

// Observation kinds.
const (
	ObservedAdmitted         = "admitted"
	ObservedRunning          = "running"
	ObservedDeferred         = "deferred"
	ObservedSucceeded        = "succeeded"
	ObservedFailed           = "failed"
	ObservedRetryableFailure = "retryable_failure"
	ObservedPaused           = "paused"
	ObservedCancelled        = "cancelled"
	ObservedUnknown          = "unknown"
)

// ObsResult is what an observation did.
type ObsResult struct {
	Status   string
	Schedule *Schedule
	// NotScheduled is why a retryable failure scheduled nothing: "no_policy",
	// "failure_kind_not_admitted", "ineligible/<decision reason>" or
	// "schedule_exists"; empty otherwise.
	NotScheduled string
	Unresolved   bool
}

func compatible(st, kind string) bool {
	switch kind {
	case ObservedAdmitted, ObservedRunning, ObservedDeferred:
		return true
	case ObservedSucceeded:
		return st == AttemptSucceeded
	case ObservedFailed, ObservedRetryableFailure:
		return st == AttemptFailed
	case ObservedPaused:
		return st == AttemptPaused
	case ObservedCancelled:
		return st == AttemptCancelled
	case ObservedUnknown:
		return st == AttemptRepairRequired
	}
	return false
}

// Observe applies an owner observation to an attempt (by identity).
func (m *Model) Observe(identity, kind string, now int64) (ObsResult, Err) {
	k, ok := m.byID[identity]
	if !ok {
		return ObsResult{}, NotFound
	}
	att, act, run := m.Attempts[k], m.Activations[k.ActivationKey], m.Runs[k.RunID]
	res := ObsResult{Status: att.Status}
	if settled(att.Status) || att.Status == AttemptRepairRequired {
		if compatible(att.Status, kind) {
			return res, OK
		}
		return res, Conflict
	}
	if att.Receipt == "" {
		return res, Ineligible
	}
	if run.Cancel && (kind == ObservedAdmitted || kind == ObservedRunning) && att.Receipt == ReceiptChild && m.startedChild(k) {
		// The owner settles the child run first.
		att.Status = AttemptCancelling
		res.Status = att.Status
		return res, OK
	}
	switch {
	case att.Status == AttemptSiblingCancelling:
		// The owner's word decides, as for a cancelled run.
		switch kind {
		case ObservedAdmitted, ObservedRunning, ObservedDeferred:
			return res, OK
		default:
			kind = ObservedCancelled
		}
	case run.Cancel:
		// The owner's word decides: work still running stays active,
		// finished work settles as cancelled.
		switch kind {
		case ObservedAdmitted, ObservedRunning, ObservedDeferred:
			if att.Status == AttemptCancelling {
				return res, OK
			}
		default:
			kind = ObservedCancelled
		}
	}
	was := run.Status
	switch kind {
	case ObservedAdmitted, ObservedRunning:
		att.Status = map[string]string{ObservedAdmitted: AttemptAdmitted, ObservedRunning: AttemptRunning}[kind]
	case ObservedDeferred:
	case ObservedSucceeded:
		att.Status = AttemptSucceeded
		act.Status = ActivationCompleted
		act.Output = true
		m.memberSettled(run, act)
		m.complete(run)
	case ObservedFailed, ObservedRetryableFailure:
		if kind == ObservedRetryableFailure {
			// The failure always settles. A different schedule left for an
			// earlier attempt is replaced; one for this attempt is kept.
			s, why := m.retrySchedule(run, act, k.Attempt, now)
			old, had := m.Schedules[k.ActivationKey]
			switch {
			case why != "":
				res.NotScheduled = why
			case had && old != s && old.FailedAttempt >= k.Attempt:
				res.NotScheduled = "schedule_exists"
			default:
				m.Schedules[k.ActivationKey] = s
				res.Schedule = &s
			}
		}
		att.Status = AttemptFailed
		act.Status = ActivationFailed
		m.activationFailed(run, act, res.Schedule != nil)
		m.reindex(run)
	case ObservedPaused:
		att.Status = AttemptPaused
		act.Status = ActivationPending
		if run.Status == RunRunning {
			run.Status = RunPaused
		}
		m.reindex(run)
	case ObservedCancelled:
		att.Status = AttemptCancelled
		act.Status = ActivationCancelled
		act.Admissible = false
		m.memberSettled(run, act)
		m.finalize(run)
		m.complete(run)
	case ObservedUnknown:
		if att.Effect == ReadOnly {
			res.Unresolved = true
			return res, OK
		}
		att.Status = AttemptRepairRequired
		run.Status = RunRepairRequired
		m.reindex(run)
	}
	if was != RunFailed && run.Status == RunFailed {
		m.settleParents(run)
	}
	res.Status = att.Status
	return res, OK
}

// retrySchedule decides an observation-driven automatic retry (the decision
// table with the policy's max_attempts and the run's retry_cap); why names
// the refusal when it schedules nothing.
func (m *Model) retrySchedule(run *Run, act *Activation, attempt uint32, now int64) (s Schedule, why string) {
	p := act.Def.Policy
	if p == nil {
		return Schedule{}, "no_policy"
	}
	if !p.Retryable {
		return Schedule{}, "failure_kind_not_admitted"
	}
	if p.MaxAttempts == 0 || run.Limits.RetryCap == 0 {
		return Schedule{}, "ineligible/invalid_limit"
	}
	limit := min(int64(p.MaxAttempts), run.Limits.RetryCap)
	if int64(attempt)+1 > limit {
		return Schedule{}, "ineligible/attempts_exhausted"
	}
	switch {
	case act.Def.Effect == ReadOnly && (act.Def.Reconciliation == IdempotentReplay || act.Def.Reconciliation == ReceiptStatus):
	case act.Def.Effect == Mutating && act.Def.Reconciliation == ReceiptStatus:
	default:
		return Schedule{}, "ineligible/unsafe_effect_or_reconciliation"
	}
	next := attempt + 1
	backoff := p.InitialMS
	for i := uint32(2); i < next; i++ {
		backoff *= p.Multiplier
		if backoff >= p.MaximumMS {
			backoff = p.MaximumMS
			break
		}
	}
	backoff = min(backoff, p.MaximumMS)
	return Schedule{FailedAttempt: attempt, NextAttempt: next, BackoffMS: backoff, DueMS: now + backoff}, ""
}

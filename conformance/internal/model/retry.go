package model

import (
	"cmp"
	"slices"
)

// Retries: explicit, and consumption of due schedules.

// Requeue is a retry's result.
type Requeue struct {
	Key        ActivationKey
	Prev, Next uint32
}

// RetryFailedNode explicitly requeues a failed activation.
func (m *Model) RetryFailedNode(k ActivationKey, failed uint32) (Requeue, Err) {
	return m.retry(k, failed, nil)
}

// ConsumeDueRetry consumes the activation's due schedule.
func (m *Model) ConsumeDueRetry(k ActivationKey, now int64) (Requeue, Err) {
	s, ok := m.Schedules[k]
	if !ok {
		return Requeue{}, NotFound
	}
	if s.DueMS > now {
		return Requeue{}, Ineligible
	}
	return m.retry(k, s.FailedAttempt, &s)
}

// ConsumeNextDueRetry consumes the run's first consumable due schedule (by
// due time, node, activation); ok is false when none was consumed. Due
// schedules that can never be consumed are discarded on the way; those
// whose attempt has not settled are passed over. A run that cannot be
// retried refuses (Ineligible) when any schedule is due.
func (m *Model) ConsumeNextDueRetry(runID string, now int64) (Requeue, bool, Err) {
	var due []ActivationKey
	for k, s := range m.Schedules {
		if k.RunID == runID && s.DueMS <= now {
			due = append(due, k)
		}
	}
	if len(due) == 0 {
		return Requeue{}, false, OK
	}
	slices.SortFunc(due, func(a, b ActivationKey) int {
		return cmp.Or(cmp.Compare(m.Schedules[a].DueMS, m.Schedules[b].DueMS), cmpKey(a, b))
	})
	run := m.Runs[runID]
	if (run.Status != RunFailed && run.Status != RunRunning) || run.Cancel {
		return Requeue{}, false, Ineligible
	}
	for _, k := range due {
		s, act := m.Schedules[k], m.Activations[k]
		att := m.Attempts[AttemptKey{k, s.FailedAttempt}]
		switch {
		case s.FailedAttempt == 0 || s.NextAttempt != s.FailedAttempt+1, int64(s.NextAttempt) > run.Limits.RetryCap+1, act.HasSuccessors, act.LastAttempt > s.FailedAttempt:
			delete(m.Schedules, k) // can never be consumed
		case act.LastAttempt < s.FailedAttempt || att == nil:
			// its attempt does not exist yet: passed over
		case att.Status == AttemptFailed:
			if act.Status != ActivationFailed || act.Output {
				delete(m.Schedules, k)
				continue
			}
			rq, e := m.retry(k, s.FailedAttempt, &s)
			return rq, e == OK, e
		case settled(att.Status):
			delete(m.Schedules, k) // settled other than failed (abandoned included)
		}
	}
	for _, k := range due {
		if _, kept := m.Schedules[k]; !kept && m.Activations[k].Group != nil {
			m.decideFanIn(m.Activations[k].Group, false) // a discarded retry leaves its member failed for good
		}
	}
	m.complete(run) // a discarded schedule may have been all that was open
	return Requeue{}, false, OK
}

func (m *Model) retry(k ActivationKey, failed uint32, sched *Schedule) (Requeue, Err) {
	run, ok := m.Runs[k.RunID]
	if !ok {
		return Requeue{}, NotFound
	}
	act, ok := m.Activations[k]
	if !ok {
		return Requeue{}, NotFound
	}
	if (run.Status != RunFailed && run.Status != RunRunning) || run.Cancel {
		return Requeue{}, Ineligible
	}
	if act.Status != ActivationFailed || act.Output {
		return Requeue{}, Ineligible
	}
	att, ok := m.Attempts[AttemptKey{k, failed}]
	// A schedule consumes only a failed attempt: an abandoned mutation is
	// retried only explicitly.
	if !ok || act.LastAttempt != failed || (sched != nil && att.Status != AttemptFailed) || (att.Status != AttemptFailed && att.Status != AttemptAbandoned) {
		if sched != nil {
			return Requeue{}, Conflict
		}
		return Requeue{}, Ineligible
	}
	next := failed + 1
	if int64(next) > run.Limits.RetryCap+1 || act.HasSuccessors || (sched == nil && m.awaited(k)) {
		return Requeue{}, Ineligible
	}
	if sched != nil && (sched.FailedAttempt != failed || sched.NextAttempt != next) {
		return Requeue{}, Conflict
	}
	if g := act.Group; g != nil && g.FanIn && m.Activations[g.Controller].Status != ActivationWaiting {
		return Requeue{}, Ineligible // the controller settled with its group
	}
	if g := act.Group; g != nil && g.Retired {
		return Requeue{}, Ineligible // a refused retry changes nothing
	}
	act.Status = ActivationPending
	if g := act.Group; g != nil {
		act.Status = ActivationWaiting
		if m.occupied(g) < g.Max {
			act.Status = ActivationPending
		}
	}
	run.Status = RunRunning
	delete(m.Schedules, k) // consumed, or superseded by the explicit retry
	m.reindex(run)
	return Requeue{Key: k, Prev: failed, Next: next}, OK
}

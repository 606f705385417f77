package state

import "github.com/wfstore/wfstore/backend"

// RunTerminal reports whether a run's status ends its work: completed,
// failed or cancelled. A cancelling parent waits for its child runs to
// reach one of these.
func RunTerminal(st backend.RunStatus) bool {
	switch st {
	case backend.RunCompleted, backend.RunFailed, backend.RunCancelled:
		return true
	}
	return false
}

// activationSettled reports whether an activation status is terminal:
// completed, failed or cancelled.
func activationSettled(st backend.ActivationStatus) bool {
	switch st {
	case backend.ActivationCompleted, backend.ActivationFailed, backend.ActivationCancelled:
		return true
	}
	return false
}

// The admissible flag: discovery scans only admissible activations
// (backend.Activation.Admissible), and the transitions keep the flag true
// to the rule below.

// Admissible reports whether discovery may return act.
func Admissible(run backend.Run, act backend.Activation, group *backend.FanOutGroup) bool {
	if act.Status != backend.ActivationPending {
		return false
	}
	if run.Status != backend.RunRunning || run.CancelRequestedMS != 0 || exhaustionHolds(run) {
		return false
	}
	if group != nil && group.Retiring {
		return false
	}
	return true
}

// Arrives reports whether an activation that becomes pending now (added,
// or a fan-out member created or promoted) enters the admissible index:
// when admissible, and also when only its run's recorded exhaustion keeps
// it out. The next pass that meets it then reports it Exhausted and parks
// it, as it parked the run's other work when it met the exhaustion, so
// that work added to an exhausted run is reported rather than in no list.
func Arrives(run backend.Run, act backend.Activation, group *backend.FanOutGroup) bool {
	run.ExhaustionRecorded = false
	return Admissible(run, act, group)
}

// exhaustionHolds reports whether the run's recorded exhaustion still holds
// as far as its own record tells: its attempts fill its node execution cap,
// or (a root run) its tree's attempts fill it. An allowance increase lifts
// it; ExhaustionRecorded itself stays set, since it stands for the one
// execution_allowance_exhausted event. A child run whose root's tree-wide
// cap is full is not told here (its record does not say so): the dispatch
// that meets that exhaustion parks the child's activations (parkPending).
func exhaustionHolds(run backend.Run) bool {
	if !run.ExhaustionRecorded {
		return false
	}
	return run.AttemptCount >= run.Limits.NodeExecutionCap ||
		(run.RootID == run.ID && run.TreeAttemptCount >= run.Limits.NodeExecutionCap)
}

// isActive and isSettled classify an attempt status (see
// wftype.AttemptStatus).
func isActive(s backend.AttemptStatus) bool  { return s.Active() }
func isSettled(s backend.AttemptStatus) bool { return s.Settled() }

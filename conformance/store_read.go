package conformance

import (
	"errors"

	"github.com/stretchr/testify/require"

	"github.com/wfstore/wfstore/workflow"
)

// Readers through the Store's public API: one record, every attempt of a
// run, the event history.

func getRun(e *env, s *workflow.Store, id string) workflow.Run {
	e.T.Helper()
	r, err := s.GetRun(e.Ctx, id)
	require.NoError(e.T, err)
	return r
}

func getAct(e *env, s *workflow.Store, k workflow.ActivationKey) workflow.Activation {
	e.T.Helper()
	a, err := s.GetActivation(e.Ctx, k)
	require.NoError(e.T, err)
	return a
}

func getAttempt(e *env, s *workflow.Store, k workflow.ActivationKey, n uint32) workflow.Attempt {
	e.T.Helper()
	a, err := s.GetAttempt(e.Ctx, identity(k, n))
	require.NoError(e.T, err, "attempt %d of %v", n, k)
	return a
}

func getSchedule(e *env, s *workflow.Store, k workflow.ActivationKey) *workflow.RetrySchedule {
	e.T.Helper()
	sc, err := s.GetRetrySchedule(e.Ctx, k)
	if errors.Is(err, workflow.ErrNotFound) {
		return nil
	}
	require.NoError(e.T, err)
	return &sc
}

func activeLeases(e *env, s *workflow.Store, runID string) []workflow.Lease {
	e.T.Helper()
	page, err := s.Engine().ActiveLeases(e.Ctx, workflow.LeaseQuery{RunID: runID, Limit: workflow.MaxPageLimit})
	require.NoError(e.T, err)
	return page.Items
}

// attemptsOf returns every attempt of a run (any status).
func attemptsOf(e *env, s *workflow.Store, runID string) []workflow.Attempt {
	e.T.Helper()
	var out []workflow.Attempt
	p := workflow.AttemptQuery{RunID: runID, Limit: workflow.MaxPageLimit}
	for {
		page, err := s.Attempts(e.Ctx, p)
		require.NoError(e.T, err)
		out = append(out, page.Items...)
		if page.Next == "" {
			return out
		}
		p.After = page.Next
	}
}

// eventTypes returns the run's event types in order.
func eventTypes(e *env, s *workflow.Store, runID string) []string {
	e.T.Helper()
	evsPage, err := s.Events(e.Ctx, workflow.EventQuery{RunID: runID, Limit: workflow.MaxPageLimit})
	require.NoError(e.T, err)
	evs := evsPage.Items
	out := make([]string, len(evs))
	for i, ev := range evs {
		out[i] = string(ev.Type)
	}
	return out
}

// lastTypes returns the last n event types of the run.
func lastTypes(e *env, s *workflow.Store, runID string, n int) []string {
	e.T.Helper()
	t := eventTypes(e, s, runID)
	if len(t) < n {
		return t
	}
	return t[len(t)-n:]
}

// payloadsOf returns the payloads of the run's events of type typ.
func payloadsOf(e *env, s *workflow.Store, runID, typ string) []string {
	e.T.Helper()
	evsPage, err := s.Events(e.Ctx, workflow.EventQuery{RunID: runID, Limit: workflow.MaxPageLimit})
	require.NoError(e.T, err)
	evs := evsPage.Items
	var out []string
	for _, ev := range evs {
		if string(ev.Type) == typ {
			out = append(out, string(ev.Payload))
		}
	}
	return out
}

func countType(types []string, typ string) int {
	n := 0
	for _, t := range types {
		if t == typ {
			n++
		}
	}
	return n
}

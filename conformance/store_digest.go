package conformance

import (
	"encoding/json"
	"fmt"
	"math"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/wfstore/wfstore/backend"
)

// The digest of a run's durable state, for "state unchanged" checks.

// digest is a comparable rendering of every durable record of the named
// runs (for a root, the links of its whole tree too), read in one snapshot:
// "state unchanged" means equal digests. A run that does not exist renders
// as absent, so naming a run a refused call must not create checks that it
// was not created.
func digest(e *env, runIDs ...string) string {
	e.T.Helper()
	var out string
	err := e.B.View(e.Ctx, func(r backend.ReadTx) error {
		for _, id := range runIDs {
			f, err := r.Load(e.Ctx, backend.Lookup{Runs: []string{id}, Links: []string{id}})
			if err != nil {
				return err
			}
			out += fmt.Sprintf("run %q: %s link %s\n", id, render(f.Runs[id]), render(f.Links[id]))
			acts, err := r.Activations(e.Ctx, backend.ActivationQuery{RunID: id, Limit: 100000})
			if err != nil {
				return err
			}
			for _, a := range acts {
				out += fmt.Sprintf("  act %s\n", render(a))
				g, err := r.Load(e.Ctx, backend.Lookup{Groups: []backend.ActivationKey{a.Key}, Schedules: []backend.ActivationKey{a.Key}})
				if err != nil {
					return err
				}
				if v, ok := g.Groups[a.Key]; ok {
					out += fmt.Sprintf("  group %s\n", render(v))
				}
				if v, ok := g.Schedules[a.Key]; ok {
					out += fmt.Sprintf("  schedule %s\n", render(v))
				}
			}
			atts, err := r.Attempts(e.Ctx, backend.AttemptQuery{RunID: id, Limit: 100000})
			if err != nil {
				return err
			}
			for _, a := range atts {
				out += fmt.Sprintf("  attempt %s\n", render(a))
			}
			evs, err := r.Events(e.Ctx, backend.EventQuery{RunID: id, Limit: 100000})
			if err != nil {
				return err
			}
			for _, ev := range evs {
				out += fmt.Sprintf("  event %d %s %s\n", ev.Seq, ev.Type, ev.Payload)
			}
			ls, err := r.Leases(e.Ctx, backend.LeaseQuery{RunID: id, Limit: 100000})
			if err != nil {
				return err
			}
			for _, l := range ls {
				out += fmt.Sprintf("  lease %s\n", render(l))
			}
			ss, err := r.DueSchedules(e.Ctx, backend.ScheduleQuery{RunID: id, DueBy: math.MaxInt64, Limit: 100000})
			if err != nil {
				return err
			}
			for _, sc := range ss {
				out += fmt.Sprintf("  due %s\n", render(sc))
			}
			links, err := r.ChildRuns(e.Ctx, backend.ChildRunQuery{RootRunID: id, Limit: 100000})
			if err != nil {
				return err
			}
			for _, l := range links {
				out += fmt.Sprintf("  descendant link %s\n", render(l))
			}
		}
		return nil
	})
	require.NoError(e.T, err)
	return out
}

// unchanged asserts the named runs' digest still equals before.
func unchanged(e *env, before string, what string, runIDs ...string) {
	e.T.Helper()
	assert.Equal(e.T, before, digest(e, runIDs...), "state unchanged after: %s", what)
}

// render shows a record with its pointers followed (JSON).
func render(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprintf("%+v", v)
	}
	return string(b)
}

package conformance

import (
	"fmt"

	"github.com/stretchr/testify/require"

	"github.com/wfstore/wfstore/backend"
	"github.com/wfstore/wfstore/workflow"
)

// Backend-level access for the store tier: the durable counters and index
// flags the Store does not expose, and bulk seeding for boundaries the
// Store cannot reach cheaply.

// bkey and battkey name a workflow key as the backend does, for the
// records some cases read or seed through the backend directly.
func bkey(k workflow.ActivationKey) backend.ActivationKey { return backend.ActivationKey(k) }

func battkey(k workflow.AttemptKey) backend.AttemptKey {
	return backend.AttemptKey{ActivationKey: bkey(k.ActivationKey), Attempt: k.Attempt}
}

// rawRun and rawAct read a record through the backend, for the durable
// counters and index flags the Store does not expose.
func rawRun(e *env, id string) backend.Run {
	e.T.Helper()
	f := e.load(e.B, backend.Lookup{Runs: []string{id}})
	r, ok := f.Runs[id]
	require.True(e.T, ok, "run %q exists", id)
	return r
}

func rawAct(e *env, k workflow.ActivationKey) backend.Activation {
	e.T.Helper()
	f := e.load(e.B, backend.Lookup{Activations: []backend.ActivationKey{bkey(k)}})
	a, ok := f.Activations[bkey(k)]
	require.True(e.T, ok, "activation %v exists", k)
	return a
}

// getGroup reads a fan-out group record directly.
func getGroup(e *env, c workflow.ActivationKey) backend.FanOutGroup {
	e.T.Helper()
	f := e.load(e.B, backend.Lookup{Groups: []backend.ActivationKey{bkey(c)}})
	g, ok := f.Groups[bkey(c)]
	require.True(e.T, ok, "fan-out group %v exists", c)
	return g
}

// seedAttempts inserts n settled attempts 1..n of activation k directly
// through the backend (for allowance boundaries the Store cannot reach
// cheaply). Run counters are not touched: the observation counts rows.
func seedAttempts(e *env, k workflow.ActivationKey, n int) {
	e.T.Helper()
	const chunk = 500
	for from := 1; from <= n; from += chunk {
		var ws backend.Changes
		for i := from; i < from+chunk && i <= n; i++ {
			ak := battkey(attemptKey(k, uint32(i)))
			ws.Insert.Attempts = append(ws.Insert.Attempts, backend.Attempt{
				Key: ak, Identity: identity(k, uint32(i)), Status: backend.AttemptFailed,
				SideEffect: backend.ReadOnly, Intent: []byte(`{}`), IntentChecksum: workflow.Checksum([]byte(`{}`)),
				Receipt: []byte(`{}`), Handoff: backend.HandoffRecorded,
				PreparedMS: ms(2).UnixMilli() + int64(i), AdmittedMS: ms(2).UnixMilli() + int64(i), TerminalMS: ms(2).UnixMilli() + int64(i),
			})
		}
		e.apply(e.B, ws)
	}
}

// seedLinks inserts n child links under root directly (children whose run
// records do not exist: the observation only counts links and attempts).
func seedLinks(e *env, root string, parent workflow.AttemptKey, n int) {
	e.T.Helper()
	const chunk = 500
	for from := 0; from < n; from += chunk {
		var ws backend.Changes
		for i := from; i < from+chunk && i < n; i++ {
			ws.Insert.Links = append(ws.Insert.Links, backend.RunLink{
				ChildRunID: fmt.Sprintf("%s-seeded-child-%04d", root, i), RootRunID: root, Parent: battkey(parent),
				Target: []byte(`{}`), Depth: 2, CreatedMS: ms(3).UnixMilli() + int64(i),
			})
		}
		e.apply(e.B, ws)
	}
}

// Package bad is statecheck's fixture: every write below is outside a
// state core, so each must be reported.
package bad

import (
	"github.com/wfstore/wfstore/backend"
	"github.com/wfstore/wfstore/tools/statecheck/testdata/internal/state"
)

type batch struct{ log []any }

func (b *batch) event(run *backend.Run, typ string) {
	run.LastEventSeq++ // the primitive itself is allowed
	insert(b, backend.Event{RunID: run.ID, Seq: run.LastEventSeq, Type: typ})
}

func (b *batch) emit(run *backend.Run, typ string) { b.event(run, typ) }

func insert(b *batch, rec any) { b.log = append(b.log, rec) }

type result struct{ Status string }

func cancelByHand(b *batch, run *backend.Run, act *backend.Activation, att *backend.Attempt, g *backend.FanOutGroup) result {
	act.Status = backend.ActivationCancelled // reported
	act.Admissible = false                   // reported
	att.Status = backend.AttemptCancelled    // reported
	run.ActiveCount--                        // reported
	run.AttemptCount += 1                    // reported
	g.Settled++                              // reported
	b.emit(run, "attempt_cancelled")         // reported
	insert(b, backend.Event{RunID: run.ID})  // reported
	var r result
	r.Status = "cancelled" // not a backend record: allowed
	act.UpdatedMS = 1      // not a guarded field: allowed
	return r
}

// appendThroughCore appends an event through the core's Insert: reported.
func appendThroughCore(w *state.Batch, run *backend.Run) {
	state.Insert(w, backend.Event{RunID: run.ID})                     // reported
	state.Insert(w, backend.Activation{Key: backend.ActivationKey{}}) // not an event: allowed
}

// tooMany takes seven parameters: reported wherever it is.
func tooMany(a, b, c int, d string, e, f bool, g ...int) int {
	six := func(a, b, c, d, e, f int) int { return a + b + c + d + e + f } // allowed
	seven := func(a, b, c, d, e, f, g int) int { return 0 }                // reported
	return six(a, b, c, 0, 0, 0) + seven(0, 0, 0, 0, 0, 0, 0)
}

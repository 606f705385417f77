// Package state is statecheck's fixture of a state core: its directory
// ends in internal/state, so its state changes are allowed, and only its
// parameter lists are held to the limit.
package state

import "github.com/wfstore/wfstore/backend"

// Batch is the core's write set.
type Batch struct{ log []any }

func (b *Batch) emit(run *backend.Run, typ string) {
	run.LastEventSeq++
	Insert(b, backend.Event{RunID: run.ID, Seq: run.LastEventSeq, Type: typ})
}

// Insert adds rec to the batch.
func Insert(b *Batch, rec any) { b.log = append(b.log, rec) }

// CancelActivation is a transition: allowed here.
func CancelActivation(b *Batch, run *backend.Run, act *backend.Activation) {
	act.Status = backend.ActivationCancelled
	act.Admissible = false
	run.ActiveCount--
	b.emit(run, "activation_cancelled")
}

// TooMany takes seven parameters: reported even in the core.
func TooMany(a, b, c int, d string, e, f bool, g ...int) int { return a }

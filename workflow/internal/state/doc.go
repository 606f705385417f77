// Package state is the Store's state core: the only code that changes a
// stored record's status, an activation's admissible flag or a counter
// (a run's attempt and active counts, an activation's open waits, a
// fan-out group's promoted and settled counts), and the only code that
// appends an event. tools/statecheck fails the build when code outside
// this package does any of these.
//
// Each transition is one exported function named for it
// (CancelActivation, AdmitAttempt, ReleaseJoin, ConsumeSchedule, ...).
// It checks its preconditions and refuses with the Store's typed errors
// (a *wftype.StateError wrapping wftype.ErrConflict or
// wftype.ErrIneligible, the values workflow.ErrConflict and
// workflow.ErrIneligible are), makes the change, keeps true what follows
// from it (the run's active count, the admissible flag, the release of the
// attempt's leases, the note that lets the run complete) and appends its
// event (package event) in the same transaction. Callers in package
// workflow decide which transition happens; this package decides what the
// transition is.
//
// The files are named for the record they move: runs.go, activations.go,
// attempts.go, fanout.go, retries.go. A new transition goes in the file of
// its record, and gets a row in tools/statediagram/transitions.go.
//
// Beside the transitions it holds what they need that is not a decision:
//
//   - Batch, the writes one transaction decides, in decision order, with
//     Insert, Replace and Remove; Changes coalesces them into one
//     backend.Changes and Apply applies it. Only this package's emit
//     appends an event to a Batch.
//   - Txn, the transaction a decision is made in (reads, writes, time).
//   - The status classes (ActivationSettled, RunTerminal) and the rule of
//     the admissible flag (Admissible, Arrives).
//   - Errorf, the constructor of the typed errors, and ErrNoop.
package state

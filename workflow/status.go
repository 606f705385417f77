package workflow

import (
	"github.com/wfstore/wfstore/backend"
	"github.com/wfstore/wfstore/wftype"
)

// The statuses and classes below are package wftype's, under the names the
// Store has always used: a workflow.RunStatus is a backend.RunStatus.

// RunStatus is a run's lifecycle status.
type RunStatus = wftype.RunStatus

// Run statuses.
const (
	RunRunning        RunStatus = wftype.RunRunning
	RunPaused         RunStatus = wftype.RunPaused
	RunCompleted      RunStatus = wftype.RunCompleted
	RunFailed         RunStatus = wftype.RunFailed
	RunCancelled      RunStatus = wftype.RunCancelled
	RunRepairRequired RunStatus = wftype.RunRepairRequired
)

// ActivationStatus is an activation's status.
type ActivationStatus = wftype.ActivationStatus

// Activation statuses.
const (
	ActivationPending   ActivationStatus = wftype.ActivationPending
	ActivationWaiting   ActivationStatus = wftype.ActivationWaiting // a fan-out member waiting for a place
	ActivationRunning   ActivationStatus = wftype.ActivationRunning
	ActivationCompleted ActivationStatus = wftype.ActivationCompleted
	ActivationFailed    ActivationStatus = wftype.ActivationFailed
	ActivationCancelled ActivationStatus = wftype.ActivationCancelled
)

// AttemptStatus is an attempt's status; its Active and Settled methods
// classify it.
type AttemptStatus = wftype.AttemptStatus

// Attempt statuses. Prepared, admitted, running, cancelling and
// sibling_cancelling are the active statuses; succeeded, failed, paused,
// cancelled and abandoned are settled; repair_required waits for Repair.
const (
	AttemptPrepared          AttemptStatus = wftype.AttemptPrepared
	AttemptAdmitted          AttemptStatus = wftype.AttemptAdmitted
	AttemptRunning           AttemptStatus = wftype.AttemptRunning
	AttemptCancelling        AttemptStatus = wftype.AttemptCancelling
	AttemptSiblingCancelling AttemptStatus = wftype.AttemptSiblingCancelling
	AttemptSucceeded         AttemptStatus = wftype.AttemptSucceeded
	AttemptFailed            AttemptStatus = wftype.AttemptFailed
	AttemptPaused            AttemptStatus = wftype.AttemptPaused
	AttemptCancelled         AttemptStatus = wftype.AttemptCancelled
	AttemptRepairRequired    AttemptStatus = wftype.AttemptRepairRequired
	AttemptAbandoned         AttemptStatus = wftype.AttemptAbandoned
)

// Effect is whether a node's work may change the world.
type Effect = wftype.Effect

// Effects.
const (
	ReadOnly Effect = wftype.ReadOnly
	Mutating Effect = wftype.Mutating
)

// Reconciliation is how an unknown outcome of a node can be resolved.
type Reconciliation = wftype.Reconciliation

// Reconciliation classes.
const (
	// IdempotentReplay: repeating the same identity is safe. A mutating
	// node may not declare it.
	IdempotentReplay Reconciliation = wftype.IdempotentReplay
	// ReceiptStatus: a durable receipt can be observed after restart.
	ReceiptStatus Reconciliation = wftype.ReceiptStatus
	// RepairRequired: an unknown outcome stops for repair.
	RepairRequired Reconciliation = wftype.RepairRequired
)

// Handoff is the durable dispatch-handoff state of an attempt.
type Handoff = wftype.Handoff

// Handoff states.
const (
	// HandoffUnknown: the attempt was not created by admission (low-level
	// PrepareAttempt, a child run's parent attempt), so it never gains the
	// never-dispatched proof.
	HandoffUnknown Handoff = wftype.HandoffUnknown
	// HandoffPending: intent committed, owner provably not yet called.
	HandoffPending Handoff = wftype.HandoffPending
	// HandoffRecorded: the handoff was recorded; the owner may have been
	// called.
	HandoffRecorded Handoff = wftype.HandoffRecorded
)

// LeaseMode is a resource lease's access mode. Read leases share a
// resource; a write lease excludes every other lease on it.
type LeaseMode = wftype.LeaseMode

// Lease modes.
const (
	LeaseRead  LeaseMode = wftype.LeaseRead
	LeaseWrite LeaseMode = wftype.LeaseWrite
)

func isActive(s backend.AttemptStatus) bool  { return s.Active() }
func isSettled(s backend.AttemptStatus) bool { return s.Settled() }

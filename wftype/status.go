package wftype

// RunStatus is a run's lifecycle status.
type RunStatus string

// Run statuses.
const (
	RunRunning        RunStatus = "running"
	RunPaused         RunStatus = "paused"
	RunCompleted      RunStatus = "completed"
	RunFailed         RunStatus = "failed"
	RunCancelled      RunStatus = "cancelled"
	RunRepairRequired RunStatus = "repair_required"
)

// ActivationStatus is an activation's status.
type ActivationStatus string

// Activation statuses.
const (
	ActivationPending   ActivationStatus = "pending"
	ActivationWaiting   ActivationStatus = "waiting" // a fan-out member waiting for a place
	ActivationRunning   ActivationStatus = "running"
	ActivationCompleted ActivationStatus = "completed"
	ActivationFailed    ActivationStatus = "failed"
	ActivationCancelled ActivationStatus = "cancelled"
)

// AttemptStatus is an attempt's status.
type AttemptStatus string

// Attempt statuses. Prepared, admitted, running, cancelling and
// sibling_cancelling are the active statuses; succeeded, failed, paused,
// cancelled and abandoned are settled; repair_required waits for repair.
const (
	AttemptPrepared          AttemptStatus = "prepared"
	AttemptAdmitted          AttemptStatus = "admitted"
	AttemptRunning           AttemptStatus = "running"
	AttemptCancelling        AttemptStatus = "cancelling"
	AttemptSiblingCancelling AttemptStatus = "sibling_cancelling"
	AttemptSucceeded         AttemptStatus = "succeeded"
	AttemptFailed            AttemptStatus = "failed"
	AttemptPaused            AttemptStatus = "paused"
	AttemptCancelled         AttemptStatus = "cancelled"
	AttemptRepairRequired    AttemptStatus = "repair_required"
	AttemptAbandoned         AttemptStatus = "abandoned"
)

// Active reports whether s is an active status (prepared, admitted,
// running, cancelling, sibling_cancelling).
func (s AttemptStatus) Active() bool {
	switch s {
	case AttemptPrepared, AttemptAdmitted, AttemptRunning,
		AttemptCancelling, AttemptSiblingCancelling:
		return true
	}
	return false
}

// Settled reports whether s is a settled status (succeeded, failed,
// paused, cancelled, abandoned).
func (s AttemptStatus) Settled() bool {
	switch s {
	case AttemptSucceeded, AttemptFailed, AttemptCancelled,
		AttemptPaused, AttemptAbandoned:
		return true
	}
	return false
}

// Effect is whether a node's work may change the world.
type Effect string

// Effects.
const (
	ReadOnly Effect = "read_only"
	Mutating Effect = "mutating"
)

// Reconciliation is how an unknown outcome of a node can be resolved.
type Reconciliation string

// Reconciliation classes.
const (
	// IdempotentReplay: repeating the same identity is safe. A mutating
	// node may not declare it.
	IdempotentReplay Reconciliation = "idempotent_replay"
	// ReceiptStatus: a durable receipt can be observed after restart.
	ReceiptStatus Reconciliation = "receipt_status"
	// RepairRequired: an unknown outcome stops for repair.
	RepairRequired Reconciliation = "repair_required"
)

// Handoff is the durable dispatch-handoff state of an attempt.
type Handoff string

// Handoff states.
const (
	// HandoffUnknown: the attempt was not created by admission (a
	// low-level prepare, a child run's parent attempt), so no handoff
	// was written and the attempt never gains the never-dispatched proof.
	HandoffUnknown Handoff = "unknown"
	// HandoffPending: intent committed, owner provably not yet called.
	HandoffPending Handoff = "pending"
	// HandoffRecorded: the handoff was recorded; the owner may have been
	// called.
	HandoffRecorded Handoff = "recorded"
)

// LeaseMode is a resource lease's access mode. Read leases share a
// resource; a write lease excludes every other lease on it.
type LeaseMode string

// Lease modes.
const (
	LeaseRead  LeaseMode = "read"
	LeaseWrite LeaseMode = "write"
)

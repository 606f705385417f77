package backend

import "github.com/wfstore/wfstore/wftype"

// Times in records are unix milliseconds; 0 means "not set" (the workflow
// layer rejects times at or before the unix epoch). JSON fields hold
// canonical JSON bytes exactly as the workflow layer wrote them; adapters
// store and return them byte for byte. Empty JSON fields (nil) mean absent.

// The shared vocabulary (statuses, classes, keys, authority, limits) is
// defined once in package wftype; the names below are aliases, so a value
// of one is a value of the other.

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
	ActivationWaiting   ActivationStatus = wftype.ActivationWaiting
	ActivationRunning   ActivationStatus = wftype.ActivationRunning
	ActivationCompleted ActivationStatus = wftype.ActivationCompleted
	ActivationFailed    ActivationStatus = wftype.ActivationFailed
	ActivationCancelled ActivationStatus = wftype.ActivationCancelled
)

// AttemptStatus is an attempt's status.
type AttemptStatus = wftype.AttemptStatus

// Attempt statuses.
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

// Effect is whether work may change the world.
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
	IdempotentReplay Reconciliation = wftype.IdempotentReplay
	ReceiptStatus    Reconciliation = wftype.ReceiptStatus
	RepairRequired   Reconciliation = wftype.RepairRequired
)

// Handoff is the durable dispatch-handoff state of an attempt.
type Handoff = wftype.Handoff

// Handoff states (see wftype.HandoffUnknown and the others).
const (
	HandoffUnknown  Handoff = wftype.HandoffUnknown
	HandoffPending  Handoff = wftype.HandoffPending
	HandoffRecorded Handoff = wftype.HandoffRecorded
)

// LeaseMode is a resource lease's access mode.
type LeaseMode = wftype.LeaseMode

// Lease modes.
const (
	LeaseRead  LeaseMode = wftype.LeaseRead
	LeaseWrite LeaseMode = wftype.LeaseWrite
)

// ActivationKey names an activation: (RunID, NodeID, ActivationID).
// Keys order bytewise field by field.
type ActivationKey = wftype.ActivationKey

// AttemptKey names an attempt of an activation.
type AttemptKey = wftype.AttemptKey

// LeaseKey names a lease: one attempt's claim on one resource in one mode.
type LeaseKey = wftype.LeaseKey

// ResourceRef names a resource within a run. Lease conflicts are per run.
type ResourceRef struct {
	RunID    string
	Resource string
}

// Authority is a run's execution authority (fencing value). All four fields
// are set when a run has one.
type Authority = wftype.Authority

// Limits are a run's execution limits.
type Limits = wftype.Limits

// Run is a workflow run, with the durable counters the workflow layer keeps
// on it so that enforcement is O(1).
type Run struct {
	ID       string
	RootID   string // equals ID for a root run
	ParentID string // empty for a root run
	Depth    int64  // 1 for a root run
	Status   RunStatus
	Limits   Limits
	// DeadlineMS: attempts prepared at or after it are rejected; 0 = none.
	DeadlineMS int64
	// CancelRequestedMS: when cancellation was requested; 0 = not requested.
	CancelRequestedMS int64
	// Authority is nil when the run has none (library mode).
	Authority *Authority
	Metadata  []byte // canonical JSON or nil
	CreatedMS int64
	UpdatedMS int64
	// LastEventSeq is the Seq of the run's latest event.
	LastEventSeq int64
	// AttemptCount counts every attempt ever created in this run.
	AttemptCount int64
	// ActiveCount counts attempts in an active status.
	ActiveCount int64
	// TreeAttemptCount (root runs) counts attempts of the root and all its
	// descendants.
	TreeAttemptCount int64
	// DescendantCount (root runs) counts linked child runs at any depth.
	DescendantCount int64
	// ExhaustionRecorded: the one execution_allowance_exhausted event exists.
	ExhaustionRecorded bool
}

// RunLink links a child run to its root and its exact parent attempt.
type RunLink struct {
	ChildRunID string
	RootRunID  string
	Parent     AttemptKey
	Target     []byte // canonical JSON
	Depth      int64
	CreatedMS  int64
}

// ResourceClaim is a declared claim of an activation on a resource.
type ResourceClaim = wftype.ResourceClaim

// NodeRef names an activation within the same run.
type NodeRef = wftype.NodeRef

// GroupMember places an activation in a fan-out group.
type GroupMember struct {
	Controller ActivationKey
	Index      int64
}

// Activation is one node activation of one run.
type Activation struct {
	Key        ActivationKey
	Generation int64
	Status     ActivationStatus
	// Admissible puts the activation in the pending index that
	// AdmissibleActivations scans. The workflow layer sets it only on pending
	// activations that discovery may return.
	Admissible     bool
	Input          []byte // canonical JSON
	Output         []byte // canonical JSON or nil
	Claims         []ResourceClaim
	Effect         Effect
	Reconciliation Reconciliation
	RetryPolicy    []byte // canonical JSON or nil
	Predecessors   []NodeRef
	// HasSuccessors: some activation names this one as a predecessor.
	HasSuccessors bool
	Group         *GroupMember // nil unless a fan-out member
	// LastAttempt is the highest attempt number created (0 = none).
	LastAttempt uint32
	CreatedMS   int64
	UpdatedMS   int64
	// AttemptTimeoutMS is this activation's attempt timeout in
	// milliseconds: how long an admitted attempt may go without being
	// observed terminal. 0 = none set, so the engine's default applies
	// (and every activation stored before the field existed reads as 0).
	AttemptTimeoutMS int64
	// WaitFor makes the activation a join: it names the activations of
	// the same run it waits for, sorted by node id then activation id,
	// without duplicates; nil for an activation that is not a join (and
	// for every activation stored before the field existed).
	WaitFor []NodeRef
	// OpenWaits counts the WaitFor activations not yet completed: a
	// waiting join becomes pending when it reaches 0.
	OpenWaits int64
	// Joins names the joins of the run whose WaitFor names this
	// activation (the reverse edges of WaitFor), in the order they were
	// added; nil when none.
	Joins []NodeRef
}

// FanOutGroup is the durable state of a fan-out controller's members. Member
// i's activation key is derived from the controller key and i.
type FanOutGroup struct {
	Controller     ActivationKey
	Size           int64
	MaxConcurrency int64
	// Promoted counts members not in the waiting state (a retried member
	// may return to waiting), so Promoted-Settled is the number of members
	// pending or running.
	Promoted int64
	// Settled counts members in a terminal status (completed, failed,
	// cancelled); a retried member leaves it again.
	Settled int64
	// Retiring: retirement intent recorded and not yet settled.
	Retiring bool
	// RetiredMS: when the group's unstarted members were cancelled by a
	// settled retirement or a fail-fast failure; 0 = not retired.
	RetiredMS int64
	CreatedMS int64
	// FailFast: a member's terminal failure cancels its siblings at once;
	// false (wait-all) lets every member settle before the group fails.
	FailFast bool
	// FanIn: the store settles the controller activation when its members
	// settle, by the group's policy; false (owner settlement) is every group
	// created before the field existed.
	FanIn bool
}

// Attempt is one prepared attempt of an activation.
type Attempt struct {
	Key            AttemptKey
	Identity       string // dispatch identity, unique
	Status         AttemptStatus
	SideEffect     Effect
	Intent         []byte // canonical JSON
	IntentChecksum string
	Receipt        []byte // canonical JSON or nil
	Handoff        Handoff
	Detail         []byte // canonical JSON or nil: last observation or repair detail
	PreparedMS     int64
	AdmittedMS     int64
	TerminalMS     int64
	// HandoffToken is the holder token of the attempt's last handoff
	// write: a random value of at least 128 bits, hex encoded, generated by
	// the workflow layer outside the transaction function, fresh for every
	// handoff write and never reused. A write fenced on "this dispatcher's
	// own handoff" compares it exactly. "" while the handoff is pending or
	// unknown, and for a handoff recorded before the field existed.
	HandoffToken string
}

// Lease is an attempt's lease on a resource. ReleasedMS 0 = unreleased.
type Lease struct {
	Key        LeaseKey
	AcquiredMS int64
	ReleasedMS int64
}

// RetrySchedule is a durable automatic-retry schedule; at most one per
// activation.
type RetrySchedule struct {
	Key           ActivationKey
	FailedAttempt uint32
	NextAttempt   uint32
	FailureKind   string
	BackoffMS     int64
	DueMS         int64
	ScheduledMS   int64
}

// EventKey names an event: (RunID, Seq).
type EventKey struct {
	RunID string
	Seq   int64
}

// Event is an append-only run event. Seq is per run, starts at 1 and
// strictly increases in commit order.
type Event struct {
	RunID     string
	Seq       int64
	Type      string
	Payload   []byte // canonical JSON
	CreatedMS int64
}

// Key returns the event's key.
func (e Event) Key() EventKey { return EventKey{RunID: e.RunID, Seq: e.Seq} }

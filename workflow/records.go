package workflow

import (
	"encoding/json"
	"time"

	"github.com/wfstore/wfstore/wftype"
)

// The types in this file are what the Store returns: views of its durable
// state, distinct from the backend records they are read from (package
// wftype says why). Times are time.Time in UTC (the zero time means "not set"),
// durations time.Duration, JSON documents canonical json.RawMessage (nil
// means absent). They are copies: changing one changes nothing stored.

// Authority is a run's execution authority, a fencing value: an operation
// that carries one is refused with ErrStaleAuthority unless it equals the
// run's current authority, field for field. All four fields are set when a
// run has one.
//
// Authority in signatures: a call that may be made without authority takes
// *Authority (nil means "none": library mode, or "snapshot the run's
// authority" where the call says so); a call that exists to check or
// replace authority (VerifyAuthority, CheckOwnerAdmission,
// TransferAuthority) takes Authority values.
type Authority = wftype.Authority

// Limits are a run's stored execution limits, all resolved (see
// DefaultRetryCap for what each means).
type Limits = wftype.Limits

// ResourceClaim is a declared claim of an activation on a resource: every
// attempt of the activation leases it in Mode at admission.
type ResourceClaim = wftype.ResourceClaim

// Run is a workflow run.
type Run struct {
	ID       string
	RootID   string // equals ID for a root run
	ParentID string // empty for a root run
	Depth    int    // 1 for a root run
	Status   RunStatus
	Limits   Limits
	// Deadline: no attempt is prepared at or after it. Zero = none.
	Deadline time.Time
	// CancelRequestedAt is when cancellation was requested (zero: never).
	CancelRequestedAt time.Time
	// Authority is nil when the run has none (library mode).
	Authority *Authority
	Metadata  json.RawMessage
	CreatedAt time.Time
	UpdatedAt time.Time
	// The run's durable counters, as of the read: the Store keeps them in
	// the same transaction as the change they count.
	//
	// LastEventSeq is the Seq of the run's latest event (0: none yet).
	LastEventSeq int64
	// AttemptCount counts every attempt ever created in this run (what
	// Limits.NodeExecutionCap bounds).
	AttemptCount int64
	// ActiveCount counts the run's attempts in an active status (what
	// Limits.ConcurrencyCap bounds).
	ActiveCount int64
	// TreeAttemptCount counts, on a root run, the attempts of the root and
	// all its descendants (the tree's execution allowance is spent
	// against it); 0 on a child run.
	TreeAttemptCount int64
	// DescendantCount counts, on a root run, its linked child runs at any
	// depth; 0 on a child run.
	DescendantCount int64
	// AllowanceExhausted: the run's execution allowance ran out once and
	// its one execution_allowance_exhausted event was recorded. It stays
	// set after IncreaseAllowance lifts the exhaustion.
	AllowanceExhausted bool
}

// FanOutMember places an activation in a fan-out group.
type FanOutMember struct {
	// Controller is the activation that owns the group.
	Controller ActivationKey
	// Index is the member's index in the group, from 0.
	Index int64
}

// Activation is one node activation of one run.
type Activation struct {
	Key        ActivationKey
	Generation int64
	Status     ActivationStatus
	Input      json.RawMessage
	Output     json.RawMessage // set once the activation completed
	Claims     []ResourceClaim
	Effect     Effect
	// Reconciliation is the node's reconciliation class.
	Reconciliation Reconciliation
	// RetryPolicy is the canonical JSON of the node's automatic-retry
	// policy, nil when it has none; ParseRetryPolicy decodes it.
	RetryPolicy  json.RawMessage
	Predecessors []NodeRef
	// FanOut is set when the activation is a fan-out member.
	FanOut *FanOutMember
	// LastAttempt is the highest attempt number created (0 = none).
	LastAttempt uint32
	CreatedAt   time.Time
	UpdatedAt   time.Time
	// AttemptTimeout is the activation's own attempt timeout, 0 when it
	// has none (NewActivation.AttemptTimeout).
	AttemptTimeout time.Duration
	// Admissible: the activation is pending and in the index Dispatch
	// discovers work from (its run is running, not cancelling and not
	// held by a spent allowance, and its fan-out group is not retiring).
	// A pending activation that is not admissible waits for that to
	// change.
	Admissible bool
	// HasSuccessors: some activation of the run names this one as a
	// predecessor.
	HasSuccessors bool
	// WaitFor: the activations this join waits for (NewActivation.WaitFor),
	// sorted; nil when it is not a join.
	WaitFor []NodeRef
	// OpenWaits counts the WaitFor activations not yet completed: a
	// waiting join becomes pending when it reaches 0.
	OpenWaits int64
	// Joins names the joins of the run that wait for this activation, in
	// the order they were added; such an activation cannot be retried by
	// RetryFailedNode.
	Joins []NodeRef
}

// Attempt is one prepared attempt of an activation.
type Attempt struct {
	Key AttemptKey
	// Identity is the dispatch identity, the owner's idempotency key.
	Identity   string
	Status     AttemptStatus
	SideEffect Effect
	// Intent is the committed dispatch intent and IntentChecksum its
	// Checksum.
	Intent         json.RawMessage
	IntentChecksum string
	// Receipt is the owner's receipt, nil until one is persisted.
	Receipt json.RawMessage
	Handoff Handoff
	// HandoffToken is the holder token the last handoff write stored
	// (empty while none was written): a caller that knows the token of its
	// own write (HandoffOutcomeUnknownError) proves with it that a
	// recorded handoff is its own.
	HandoffToken string
	// Detail is the last observation's or repair's detail, if any.
	Detail     json.RawMessage
	PreparedAt time.Time
	AdmittedAt time.Time // zero until admitted
	TerminalAt time.Time // zero until settled
}

// Ref returns the attempt's key and identity.
func (a Attempt) Ref() AttemptRef { return AttemptRef{Key: a.Key, Identity: a.Identity} }

// Lease is an attempt's lease on a resource.
type Lease struct {
	Key        LeaseKey
	AcquiredAt time.Time
	// ReleasedAt is zero while the lease is held.
	ReleasedAt time.Time
}

// RetrySchedule is a durable automatic-retry schedule; an activation has at
// most one.
type RetrySchedule struct {
	Key ActivationKey
	// FailedAttempt is the attempt that failed; NextAttempt the one the
	// schedule requeues (FailedAttempt+1).
	FailedAttempt uint32
	NextAttempt   uint32
	FailureKind   FailureKind
	Backoff       time.Duration
	// Due is when the schedule may be consumed (ScheduledAt + Backoff).
	Due         time.Time
	ScheduledAt time.Time
}

package event

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/wfstore/wfstore/wftype"
)

// Event is an append-only run event. Seq is per run and strictly
// increasing in commit order (with gaps allowed).
type Event struct {
	RunID string
	Seq   int64
	Type  Type
	// Payload is the canonical JSON of the type's payload struct; Decode
	// returns it typed.
	Payload   json.RawMessage
	CreatedAt time.Time
}

// Type names an event's kind. Each has one payload struct, named after
// it with the suffix Payload (RunCreated: RunCreatedPayload).
type Type string

// Payload is implemented by every event payload struct.
type Payload interface {
	Type() Type
}

// Decode returns the event's payload as its typed struct (a value, for
// example AttemptAdmittedPayload), to be used with a type switch. An
// unknown event type or a payload that does not decode is an error.
func (e Event) Decode() (Payload, error) {
	dec, ok := decoders[e.Type]
	if !ok {
		return nil, fmt.Errorf("event %s #%d: unknown event type %q", e.RunID, e.Seq, e.Type)
	}
	p, err := dec(e.Payload)
	if err != nil {
		return nil, fmt.Errorf("event %s #%d (%s): %w", e.RunID, e.Seq, e.Type, err)
	}
	return p, nil
}

func decodeAs[T Payload](raw json.RawMessage) (Payload, error) {
	var p T
	if err := json.Unmarshal(raw, &p); err != nil {
		return nil, err
	}
	return p, nil
}

// UnixMS is a time in an event payload: unix milliseconds, as stored.
type UnixMS int64

// Time returns m as a UTC time.Time (zero for 0).
func (m UnixMS) Time() time.Time {
	if m == 0 {
		return time.Time{}
	}
	return time.UnixMilli(int64(m)).UTC()
}

// Millis is a duration in an event payload: milliseconds, as stored.
type Millis int64

// Duration returns m as a time.Duration.
func (m Millis) Duration() time.Duration { return time.Duration(m) * time.Millisecond }

// Limits is the limits object of a run_created payload.
type Limits struct {
	NodeExecutionCap int64 `json:"node_execution_cap"`
	ConcurrencyCap   int64 `json:"concurrency_cap"`
	CycleCap         int64 `json:"cycle_cap"`
	RetryCap         int64 `json:"retry_cap"`
}

// Event types.
const (
	// RunCreated: a run was created (a child run names its root).
	RunCreated Type = "run_created"
	// RunPaused: PauseRun paused the run.
	RunPaused Type = "run_paused"
	// RunResumed: ResumeRun resumed the run.
	RunResumed Type = "run_resumed"
	// RunCompleted: the run completed: nothing of it is open any more.
	RunCompleted Type = "run_completed"
	// RunCancelled: a cancelling run finalised as cancelled.
	RunCancelled Type = "run_cancelled"
	// RunPruned: Prune deleted the run's history; this is then its only event.
	RunPruned Type = "run_pruned"
	// RunPruneStarted: Prune began deleting the run's history and counted it; it is the run's last event
	// until the prune finishes, which deletes it and appends run_pruned with these counts.
	RunPruneStarted Type = "run_prune_started"
	// CancellationRequested: cancellation of the run was requested (Tree: by RequestTreeCancellation of RootRunID).
	CancellationRequested Type = "cancellation_requested"
	// ChildRunLinked: a child run was created by one of the run's attempts.
	ChildRunLinked Type = "child_run_linked"
	// AuthorityTransferred: TransferAuthority replaced the run's authority.
	AuthorityTransferred Type = "authority_transferred"
	// ExecutionAllowanceExhausted: the run's (or its root's) allowance refused an attempt; written at most once per run.
	ExecutionAllowanceExhausted Type = "execution_allowance_exhausted"
	// ExecutionAllowanceIncreased: IncreaseAllowance raised the run's node execution cap.
	ExecutionAllowanceIncreased Type = "execution_allowance_increased"
	// ActivationCreated: an activation was added as pending, or as a join waiting for its WaitFor activations (a fan-out member carries MemberIndex instead of Generation).
	ActivationCreated Type = "activation_created"
	// JoinReleased: the last of a join's WaitFor activations completed, and the join became pending in the same transaction.
	JoinReleased Type = "join_released"
	// JoinCancelled: a waiting join was cancelled because one of its WaitFor activations was cancelled or failed with no automatic retry pending.
	JoinCancelled Type = "join_cancelled"
	// ActivationWaiting: a fan-out member was added waiting for a place in its group.
	ActivationWaiting Type = "activation_waiting"
	// FanOutMemberPromoted: a waiting fan-out member became pending.
	FanOutMemberPromoted Type = "fan_out_member_promoted"
	// FanOutMemberWaiting: a requeued fan-out member went back to waiting (its group was full).
	FanOutMemberWaiting Type = "fan_out_member_waiting"
	// FanOutMemberCancelled: an unstarted fan-out member was cancelled.
	FanOutMemberCancelled Type = "fan_out_member_cancelled"
	// FanOutFailed: a fan-out group failed its run: fail-fast names the failing MemberIndex, wait-all the FailedMembers.
	FanOutFailed Type = "fan_out_failed"
	// FanOutRetirementRequested: RetireFanOut recorded the group's retirement intent.
	FanOutRetirementRequested Type = "fan_out_retirement_requested"
	// FanOutRetired: the group's retirement settled.
	FanOutRetired Type = "fan_out_retired"
	// FanInWaiting: the controller of a fan-in group waits for its members (it is never dispatched).
	FanInWaiting Type = "fan_in_waiting"
	// FanInSettled: the store settled a fan-in group's controller by its members' outcome and the group's policy.
	FanInSettled Type = "fan_in_settled"
	// AttemptPrepared: an attempt's intent was committed.
	AttemptPrepared Type = "attempt_prepared"
	// ResourceLeaseAcquired: an attempt leased a declared resource.
	ResourceLeaseAcquired Type = "resource_lease_acquired"
	// DispatchHandedOff: the handoff was recorded: the owner may be called.
	DispatchHandedOff Type = "dispatch_handed_off"
	// DispatchHandoffReleased: a batch that stopped released a handoff it recorded and never offered to the owner: the attempt is provably never dispatched again.
	DispatchHandoffReleased Type = "dispatch_handoff_released"
	// AttemptAdmitted: the owner's receipt was persisted.
	AttemptAdmitted Type = "attempt_admitted"
	// AttemptCancellationReceiptRecorded: a receipt was persisted for an attempt already cancelling.
	AttemptCancellationReceiptRecorded Type = "attempt_cancellation_receipt_recorded"
	// AttemptSucceeded: the attempt succeeded with Output.
	AttemptSucceeded Type = "attempt_succeeded"
	// AttemptFailed: the attempt failed.
	AttemptFailed Type = "attempt_failed"
	// AttemptPaused: the attempt paused.
	AttemptPaused Type = "attempt_paused"
	// AttemptCancelled: the attempt was cancelled.
	AttemptCancelled Type = "attempt_cancelled"
	// AttemptCancellationSignalled: MarkCancellationSignalled recorded that the owner was asked to cancel.
	AttemptCancellationSignalled Type = "attempt_cancellation_signalled"
	// AttemptSiblingCancelling: a fail-fast sibling failure is cancelling the attempt.
	AttemptSiblingCancelling Type = "attempt_sibling_cancelling"
	// AttemptRepairRequired: the attempt's outcome is unknown and needs Repair.
	AttemptRepairRequired Type = "attempt_repair_required"
	// AttemptRepaired: Repair settled the attempt.
	AttemptRepaired Type = "attempt_repaired"
	// AutomaticRetryScheduled: an automatic retry was scheduled.
	AutomaticRetryScheduled Type = "automatic_retry_scheduled"
	// AutomaticRetryNotScheduled: a retryable failure scheduled no retry, and why.
	AutomaticRetryNotScheduled Type = "automatic_retry_not_scheduled"
	// AutomaticRetryConsumed: a due schedule requeued its activation.
	AutomaticRetryConsumed Type = "automatic_retry_consumed"
	// AutomaticRetrySuperseded: an explicit retry replaced a pending schedule.
	AutomaticRetrySuperseded Type = "automatic_retry_superseded"
	// AutomaticRetryDiscarded: a schedule that can never be consumed was deleted.
	AutomaticRetryDiscarded Type = "automatic_retry_discarded"
	// NodeRetryRequested: an activation was requeued for its next attempt.
	NodeRetryRequested Type = "node_retry_requested"
	// AttemptTimedOut: SettleTimedOut settled an admitted attempt past
	// its deadline (failed when read-only, repair_required when mutating).
	AttemptTimedOut Type = "attempt_timed_out"
	// AttemptObservedAfterTimeout: an observation arrived for an attempt
	// a timeout had settled.
	AttemptObservedAfterTimeout Type = "attempt_observed_after_timeout"
)

var decoders = map[Type]func(json.RawMessage) (Payload, error){
	RunCreated:                         decodeAs[RunCreatedPayload],
	RunPaused:                          decodeAs[RunPausedPayload],
	RunResumed:                         decodeAs[RunResumedPayload],
	RunCompleted:                       decodeAs[RunCompletedPayload],
	RunCancelled:                       decodeAs[RunCancelledPayload],
	RunPruned:                          decodeAs[RunPrunedPayload],
	RunPruneStarted:                    decodeAs[RunPruneStartedPayload],
	CancellationRequested:              decodeAs[CancellationRequestedPayload],
	ChildRunLinked:                     decodeAs[ChildRunLinkedPayload],
	AuthorityTransferred:               decodeAs[AuthorityTransferredPayload],
	ExecutionAllowanceExhausted:        decodeAs[ExecutionAllowanceExhaustedPayload],
	ExecutionAllowanceIncreased:        decodeAs[ExecutionAllowanceIncreasedPayload],
	ActivationCreated:                  decodeAs[ActivationCreatedPayload],
	ActivationWaiting:                  decodeAs[ActivationWaitingPayload],
	JoinReleased:                       decodeAs[JoinReleasedPayload],
	JoinCancelled:                      decodeAs[JoinCancelledPayload],
	FanOutMemberPromoted:               decodeAs[FanOutMemberPromotedPayload],
	FanOutMemberWaiting:                decodeAs[FanOutMemberWaitingPayload],
	FanOutMemberCancelled:              decodeAs[FanOutMemberCancelledPayload],
	FanOutFailed:                       decodeAs[FanOutFailedPayload],
	FanOutRetirementRequested:          decodeAs[FanOutRetirementRequestedPayload],
	FanOutRetired:                      decodeAs[FanOutRetiredPayload],
	FanInWaiting:                       decodeAs[FanInWaitingPayload],
	FanInSettled:                       decodeAs[FanInSettledPayload],
	AttemptPrepared:                    decodeAs[AttemptPreparedPayload],
	ResourceLeaseAcquired:              decodeAs[ResourceLeaseAcquiredPayload],
	DispatchHandedOff:                  decodeAs[DispatchHandedOffPayload],
	DispatchHandoffReleased:            decodeAs[DispatchHandoffReleasedPayload],
	AttemptAdmitted:                    decodeAs[AttemptAdmittedPayload],
	AttemptCancellationReceiptRecorded: decodeAs[AttemptCancellationReceiptRecordedPayload],
	AttemptSucceeded:                   decodeAs[AttemptSucceededPayload],
	AttemptFailed:                      decodeAs[AttemptFailedPayload],
	AttemptPaused:                      decodeAs[AttemptPausedPayload],
	AttemptCancelled:                   decodeAs[AttemptCancelledPayload],
	AttemptCancellationSignalled:       decodeAs[AttemptCancellationSignalledPayload],
	AttemptSiblingCancelling:           decodeAs[AttemptSiblingCancellingPayload],
	AttemptRepairRequired:              decodeAs[AttemptRepairRequiredPayload],
	AttemptRepaired:                    decodeAs[AttemptRepairedPayload],
	AutomaticRetryScheduled:            decodeAs[AutomaticRetryScheduledPayload],
	AutomaticRetryNotScheduled:         decodeAs[AutomaticRetryNotScheduledPayload],
	AutomaticRetryConsumed:             decodeAs[AutomaticRetryConsumedPayload],
	AutomaticRetrySuperseded:           decodeAs[AutomaticRetrySupersededPayload],
	AutomaticRetryDiscarded:            decodeAs[AutomaticRetryDiscardedPayload],
	NodeRetryRequested:                 decodeAs[NodeRetryRequestedPayload],
	AttemptTimedOut:                    decodeAs[AttemptTimedOutPayload],
	AttemptObservedAfterTimeout:        decodeAs[AttemptObservedAfterTimeoutPayload],
}

// RunCreatedPayload is the payload of RunCreated.
type RunCreatedPayload struct {
	RunID     string `json:"run_id"`
	RootRunID string `json:"root_run_id,omitempty"`
	Limits    Limits `json:"limits"`
}

// Type returns RunCreated.
func (RunCreatedPayload) Type() Type { return RunCreated }

// RunPausedPayload is the payload of RunPaused.
type RunPausedPayload struct {
	RunID string `json:"run_id"`
}

// Type returns RunPaused.
func (RunPausedPayload) Type() Type { return RunPaused }

// RunResumedPayload is the payload of RunResumed.
type RunResumedPayload struct {
	RunID string `json:"run_id"`
}

// Type returns RunResumed.
func (RunResumedPayload) Type() Type { return RunResumed }

// RunCompletedPayload is the payload of RunCompleted.
type RunCompletedPayload struct {
	RunID string `json:"run_id"`
}

// Type returns RunCompleted.
func (RunCompletedPayload) Type() Type { return RunCompleted }

// RunCancelledPayload is the payload of RunCancelled.
type RunCancelledPayload struct {
	RunID string `json:"run_id"`
}

// Type returns RunCancelled.
func (RunCancelledPayload) Type() Type { return RunCancelled }

// RunPrunedPayload is the payload of RunPruned.
type RunPrunedPayload struct {
	RunID   string             `json:"run_id"`
	Deleted wftype.PruneCounts `json:"deleted"`
}

// Type returns RunPruned.
func (RunPrunedPayload) Type() Type { return RunPruned }

// RunPruneStartedPayload is the payload of RunPruneStarted: what the
// run held when its prune began, which the run_pruned event reports
// however many invocations the prune takes.
type RunPruneStartedPayload struct {
	RunID    string             `json:"run_id"`
	Deleting wftype.PruneCounts `json:"deleting"`
}

// Type returns RunPruneStarted.
func (RunPruneStartedPayload) Type() Type { return RunPruneStarted }

// CancellationRequestedPayload is the payload of CancellationRequested.
type CancellationRequestedPayload struct {
	RunID     string `json:"run_id"`
	RootRunID string `json:"root_run_id,omitempty"`
	Tree      bool   `json:"tree,omitempty"`
}

// Type returns CancellationRequested.
func (CancellationRequestedPayload) Type() Type { return CancellationRequested }

// ChildRunLinkedPayload is the payload of ChildRunLinked.
type ChildRunLinkedPayload struct {
	ChildRunID string `json:"child_run_id"`
	RootRunID  string `json:"root_run_id"`
	Depth      int64  `json:"depth"`
}

// Type returns ChildRunLinked.
func (ChildRunLinkedPayload) Type() Type { return ChildRunLinked }

// AuthorityTransferredPayload is the payload of AuthorityTransferred.
type AuthorityTransferredPayload struct {
	PreviousGeneration int64  `json:"previous_generation"`
	Generation         int64  `json:"generation"`
	DaemonInstanceID   string `json:"daemon_instance_id"`
}

// Type returns AuthorityTransferred.
func (AuthorityTransferredPayload) Type() Type { return AuthorityTransferred }

// ExecutionAllowanceExhaustedPayload is the payload of ExecutionAllowanceExhausted.
type ExecutionAllowanceExhaustedPayload struct {
	Version                int  `json:"version"`
	AdditionalWorkAdmitted bool `json:"additional_work_admitted"`
}

// Type returns ExecutionAllowanceExhausted.
func (ExecutionAllowanceExhaustedPayload) Type() Type {
	return ExecutionAllowanceExhausted
}

// ExecutionAllowanceIncreasedPayload is the payload of ExecutionAllowanceIncreased.
type ExecutionAllowanceIncreasedPayload struct {
	PreviousCap int64 `json:"previous_cap"`
	TargetCap   int64 `json:"target_cap"`
}

// Type returns ExecutionAllowanceIncreased.
func (ExecutionAllowanceIncreasedPayload) Type() Type {
	return ExecutionAllowanceIncreased
}

// ActivationCreatedPayload is the payload of ActivationCreated.
type ActivationCreatedPayload struct {
	RunID        string `json:"run_id"`
	NodeID       string `json:"node_id"`
	ActivationID string `json:"activation_id"`
	Generation   *int64 `json:"generation,omitempty"`
	MemberIndex  *int64 `json:"member_index,omitempty"`
}

// Type returns ActivationCreated.
func (ActivationCreatedPayload) Type() Type { return ActivationCreated }

// JoinReleasedPayload is the payload of JoinReleased: the join (RunID,
// NodeID, ActivationID) and the WaitFor activation whose completion
// released it.
type JoinReleasedPayload struct {
	RunID                   string `json:"run_id"`
	NodeID                  string `json:"node_id"`
	ActivationID            string `json:"activation_id"`
	PredecessorNodeID       string `json:"predecessor_node_id"`
	PredecessorActivationID string `json:"predecessor_activation_id"`
}

// Type returns JoinReleased.
func (JoinReleasedPayload) Type() Type { return JoinReleased }

// JoinCancelledPayload is the payload of JoinCancelled: the join
// (RunID, NodeID, ActivationID), the WaitFor activation that caused it and
// that activation's status (failed or cancelled).
type JoinCancelledPayload struct {
	RunID                   string                  `json:"run_id"`
	NodeID                  string                  `json:"node_id"`
	ActivationID            string                  `json:"activation_id"`
	PredecessorNodeID       string                  `json:"predecessor_node_id"`
	PredecessorActivationID string                  `json:"predecessor_activation_id"`
	PredecessorStatus       wftype.ActivationStatus `json:"predecessor_status"`
}

// Type returns JoinCancelled.
func (JoinCancelledPayload) Type() Type { return JoinCancelled }

// ActivationWaitingPayload is the payload of ActivationWaiting.
type ActivationWaitingPayload struct {
	RunID        string `json:"run_id"`
	NodeID       string `json:"node_id"`
	ActivationID string `json:"activation_id"`
	MemberIndex  int64  `json:"member_index"`
}

// Type returns ActivationWaiting.
func (ActivationWaitingPayload) Type() Type { return ActivationWaiting }

// FanOutMemberPromotedPayload is the payload of FanOutMemberPromoted.
type FanOutMemberPromotedPayload struct {
	RunID        string `json:"run_id"`
	NodeID       string `json:"node_id"`
	ActivationID string `json:"activation_id"`
	MemberIndex  int64  `json:"member_index"`
}

// Type returns FanOutMemberPromoted.
func (FanOutMemberPromotedPayload) Type() Type { return FanOutMemberPromoted }

// FanOutMemberWaitingPayload is the payload of FanOutMemberWaiting.
type FanOutMemberWaitingPayload struct {
	RunID        string `json:"run_id"`
	NodeID       string `json:"node_id"`
	ActivationID string `json:"activation_id"`
	MemberIndex  int64  `json:"member_index"`
}

// Type returns FanOutMemberWaiting.
func (FanOutMemberWaitingPayload) Type() Type { return FanOutMemberWaiting }

// FanOutMemberCancelledPayload is the payload of FanOutMemberCancelled.
type FanOutMemberCancelledPayload struct {
	RunID        string `json:"run_id"`
	NodeID       string `json:"node_id"`
	ActivationID string `json:"activation_id"`
	MemberIndex  int64  `json:"member_index"`
	Reason       string `json:"reason"`
}

// Type returns FanOutMemberCancelled.
func (FanOutMemberCancelledPayload) Type() Type { return FanOutMemberCancelled }

// FanOutFailedPayload is the payload of FanOutFailed.
type FanOutFailedPayload struct {
	ControllerActivationID string               `json:"controller_activation_id"`
	MemberIndex            *int64               `json:"member_index,omitempty"`
	FailedMembers          []int64              `json:"failed_members,omitempty"`
	Policy                 wftype.FanOutFailure `json:"policy"`
}

// Type returns FanOutFailed.
func (FanOutFailedPayload) Type() Type { return FanOutFailed }

// FanOutRetirementRequestedPayload is the payload of FanOutRetirementRequested.
type FanOutRetirementRequestedPayload struct {
	ControllerActivationID string `json:"controller_activation_id"`
}

// Type returns FanOutRetirementRequested.
func (FanOutRetirementRequestedPayload) Type() Type { return FanOutRetirementRequested }

// FanOutRetiredPayload is the payload of FanOutRetired.
type FanOutRetiredPayload struct {
	ControllerActivationID string `json:"controller_activation_id"`
}

// Type returns FanOutRetired.
func (FanOutRetiredPayload) Type() Type { return FanOutRetired }

// AttemptNames names the attempt an attempt event is about: its run, node,
// activation and attempt number, so that the event reads on its own. It is
// embedded in every attempt event's payload (its fields appear at the
// payload's top level); an event recorded before it existed decodes with
// them empty.
type AttemptNames struct {
	RunID        string `json:"run_id"`
	NodeID       string `json:"node_id"`
	ActivationID string `json:"activation_id"`
	Attempt      uint32 `json:"attempt"`
}

// AttemptTimedOutPayload is the payload of AttemptTimedOut.
type AttemptTimedOutPayload struct {
	AttemptNames
	DispatchIdentity string               `json:"dispatch_identity"`
	FailureKind      wftype.FailureKind   `json:"failure_kind"`
	TimeoutMS        Millis               `json:"timeout_ms"`
	DeadlineMS       UnixMS               `json:"deadline_ms"`
	Status           wftype.AttemptStatus `json:"status"`
}

// Type returns AttemptTimedOut.
func (AttemptTimedOutPayload) Type() Type { return AttemptTimedOut }

// AttemptObservedAfterTimeoutPayload is the payload of
// AttemptObservedAfterTimeout: what the owner observed, and the
// attempt's status when it arrived (failed or repair_required).
type AttemptObservedAfterTimeoutPayload struct {
	AttemptNames
	DispatchIdentity string                 `json:"dispatch_identity"`
	Observed         wftype.ObservationKind `json:"observed"`
	Was              wftype.AttemptStatus   `json:"was"`
}

// Type returns AttemptObservedAfterTimeout.
func (AttemptObservedAfterTimeoutPayload) Type() Type {
	return AttemptObservedAfterTimeout
}

// FanInWaitingPayload is the payload of FanInWaiting.
type FanInWaitingPayload struct {
	RunID        string               `json:"run_id"`
	NodeID       string               `json:"node_id"`
	ActivationID string               `json:"activation_id"`
	Members      int64                `json:"members"`
	Policy       wftype.FanOutFailure `json:"policy"`
}

// Type returns FanInWaiting.
func (FanInWaitingPayload) Type() Type { return FanInWaiting }

// FanInSettledPayload is the payload of FanInSettled: the
// controller's new status and its members' counts by status when it
// settled. MemberIndex names the member whose terminal failure failed a
// fail-fast group's controller; it is absent when every member had
// settled.
type FanInSettledPayload struct {
	RunID        string                  `json:"run_id"`
	NodeID       string                  `json:"node_id"`
	ActivationID string                  `json:"activation_id"`
	Status       wftype.ActivationStatus `json:"status"`
	Policy       wftype.FanOutFailure    `json:"policy"`
	Members      int64                   `json:"members"`
	Completed    int64                   `json:"completed"`
	Failed       int64                   `json:"failed"`
	Cancelled    int64                   `json:"cancelled"`
	MemberIndex  *int64                  `json:"member_index,omitempty"`
}

// Type returns FanInSettled.
func (FanInSettledPayload) Type() Type { return FanInSettled }

// AttemptPreparedPayload is the payload of AttemptPrepared.
type AttemptPreparedPayload struct {
	RunID        string          `json:"run_id"`
	NodeID       string          `json:"node_id"`
	ActivationID string          `json:"activation_id"`
	Attempt      uint32          `json:"attempt"`
	SideEffect   wftype.Effect   `json:"side_effect"`
	Intent       json.RawMessage `json:"intent"`
	PreparedAt   UnixMS          `json:"prepared_at_ms"`
}

// Type returns AttemptPrepared.
func (AttemptPreparedPayload) Type() Type { return AttemptPrepared }

// ResourceLeaseAcquiredPayload is the payload of ResourceLeaseAcquired.
type ResourceLeaseAcquiredPayload struct {
	RunID        string           `json:"run_id"`
	NodeID       string           `json:"node_id"`
	ActivationID string           `json:"activation_id"`
	Attempt      uint32           `json:"attempt"`
	ResourceKey  string           `json:"resource_key"`
	Mode         wftype.LeaseMode `json:"mode"`
	AcquiredAt   UnixMS           `json:"acquired_at_ms"`
}

// Type returns ResourceLeaseAcquired.
func (ResourceLeaseAcquiredPayload) Type() Type { return ResourceLeaseAcquired }

// DispatchHandedOffPayload is the payload of DispatchHandedOff.
type DispatchHandedOffPayload struct {
	AttemptNames
	DispatchIdentity string `json:"dispatch_identity"`
}

// Type returns DispatchHandedOff.
func (DispatchHandedOffPayload) Type() Type { return DispatchHandedOff }

// DispatchHandoffReleasedPayload is the payload of DispatchHandoffReleased.
type DispatchHandoffReleasedPayload struct {
	AttemptNames
	DispatchIdentity string `json:"dispatch_identity"`
}

// Type returns DispatchHandoffReleased.
func (DispatchHandoffReleasedPayload) Type() Type { return DispatchHandoffReleased }

// AttemptAdmittedPayload is the payload of AttemptAdmitted.
type AttemptAdmittedPayload struct {
	RunID            string          `json:"run_id"`
	NodeID           string          `json:"node_id"`
	ActivationID     string          `json:"activation_id"`
	Attempt          uint32          `json:"attempt"`
	DispatchIdentity string          `json:"dispatch_identity"`
	Receipt          json.RawMessage `json:"receipt"`
	AdmittedAt       UnixMS          `json:"admitted_at_ms"`
}

// Type returns AttemptAdmitted.
func (AttemptAdmittedPayload) Type() Type { return AttemptAdmitted }

// AttemptCancellationReceiptRecordedPayload is the payload of AttemptCancellationReceiptRecorded.
type AttemptCancellationReceiptRecordedPayload struct {
	RunID            string          `json:"run_id"`
	NodeID           string          `json:"node_id"`
	ActivationID     string          `json:"activation_id"`
	Attempt          uint32          `json:"attempt"`
	DispatchIdentity string          `json:"dispatch_identity"`
	Receipt          json.RawMessage `json:"receipt"`
	AdmittedAt       UnixMS          `json:"admitted_at_ms"`
}

// Type returns AttemptCancellationReceiptRecorded.
func (AttemptCancellationReceiptRecordedPayload) Type() Type {
	return AttemptCancellationReceiptRecorded
}

// AttemptSucceededPayload is the payload of AttemptSucceeded.
type AttemptSucceededPayload struct {
	AttemptNames
	DispatchIdentity string          `json:"dispatch_identity"`
	Output           json.RawMessage `json:"output"`
}

// Type returns AttemptSucceeded.
func (AttemptSucceededPayload) Type() Type { return AttemptSucceeded }

// AttemptFailedPayload is the payload of AttemptFailed.
type AttemptFailedPayload struct {
	AttemptNames
	DispatchIdentity string `json:"dispatch_identity"`
	Retryable        bool   `json:"retryable"`
}

// Type returns AttemptFailed.
func (AttemptFailedPayload) Type() Type { return AttemptFailed }

// AttemptPausedPayload is the payload of AttemptPaused.
type AttemptPausedPayload struct {
	AttemptNames
	DispatchIdentity string `json:"dispatch_identity"`
	Reason           string `json:"reason"`
}

// Type returns AttemptPaused.
func (AttemptPausedPayload) Type() Type { return AttemptPaused }

// AttemptCancelledPayload is the payload of AttemptCancelled.
type AttemptCancelledPayload struct {
	AttemptNames
	DispatchIdentity string `json:"dispatch_identity"`
	// Reason says how an attempt settled without an observation:
	// never_dispatched, cancellation_owner_unavailable, or a
	// CancelSettlement.
	Reason string `json:"reason,omitempty"`
	// Observed is what the owner reported about an attempt of a cancelled
	// run that the rules settled as cancelled (succeeded, failed,
	// cancelled, ...), and Output the output it reported with succeeded:
	// work that finished anyway stays on record.
	Observed wftype.ObservationKind `json:"observed,omitempty"`
	Output   json.RawMessage        `json:"output,omitempty"`
}

// Type returns AttemptCancelled.
func (AttemptCancelledPayload) Type() Type { return AttemptCancelled }

// AttemptCancellationSignalledPayload is the payload of AttemptCancellationSignalled.
type AttemptCancellationSignalledPayload struct {
	AttemptNames
	DispatchIdentity string `json:"dispatch_identity"`
}

// Type returns AttemptCancellationSignalled.
func (AttemptCancellationSignalledPayload) Type() Type {
	return AttemptCancellationSignalled
}

// AttemptSiblingCancellingPayload is the payload of AttemptSiblingCancelling.
type AttemptSiblingCancellingPayload struct {
	AttemptNames
	DispatchIdentity string `json:"dispatch_identity"`
}

// Type returns AttemptSiblingCancelling.
func (AttemptSiblingCancellingPayload) Type() Type { return AttemptSiblingCancelling }

// AttemptRepairRequiredPayload is the payload of AttemptRepairRequired.
type AttemptRepairRequiredPayload struct {
	AttemptNames
	DispatchIdentity string `json:"dispatch_identity"`
	Reason           string `json:"reason"`
	// Unstorable describes the owner's value that could not be stored, for
	// the reasons RepairReceiptNotStorable and RepairObservationNotStorable.
	Unstorable *Unstorable `json:"unstorable,omitempty"`
}

// Reasons of an attempt_repair_required event for an owner's value the
// store cannot keep (see Unstorable).
const (
	// RepairReceiptNotStorable: the owner's receipt (from Dispatch,
	// DispatchBatch or a ReceiptLookup) cannot be stored.
	RepairReceiptNotStorable = "receipt_not_storable"
	// RepairObservationNotStorable: an Observer's observation (its output
	// or detail) cannot be stored.
	RepairObservationNotStorable = "observation_not_storable"
)

// Unstorable records an owner's value the store refused to keep: which
// document, why, the limits it was held to, and its size and SHA-256 (of
// the bytes the owner returned, as returned), so an operator can match it
// with the owner's copy. The value itself is not stored.
type Unstorable struct {
	// Document names the value: "dispatch receipt", "observation output",
	// "observation detail".
	Document string `json:"document"`
	// Problem is "too_large", "too_deep" or "invalid".
	Problem string `json:"problem"`
	// Detail is the validation error.
	Detail string `json:"detail"`
	// LimitBytes and LimitDepth are the limits the document was held to.
	LimitBytes int64 `json:"limit_bytes"`
	LimitDepth int64 `json:"limit_depth"`
	// SizeBytes is the length of the bytes returned.
	SizeBytes int64 `json:"size_bytes"`
	// SHA256 is the lowercase hex SHA-256 of the bytes returned.
	SHA256 string `json:"sha256"`
}

// Type returns AttemptRepairRequired.
func (AttemptRepairRequiredPayload) Type() Type { return AttemptRepairRequired }

// AttemptRepairedPayload is the payload of AttemptRepaired.
type AttemptRepairedPayload struct {
	AttemptNames
	DispatchIdentity string              `json:"dispatch_identity"`
	Action           wftype.RepairAction `json:"action"`
}

// Type returns AttemptRepaired.
func (AttemptRepairedPayload) Type() Type { return AttemptRepaired }

// AutomaticRetryScheduledPayload is the payload of AutomaticRetryScheduled.
type AutomaticRetryScheduledPayload struct {
	RunID         string             `json:"run_id"`
	NodeID        string             `json:"node_id"`
	ActivationID  string             `json:"activation_id"`
	FailedAttempt uint32             `json:"failed_attempt"`
	NextAttempt   uint32             `json:"next_attempt"`
	FailureKind   wftype.FailureKind `json:"failure_kind"`
	Backoff       Millis             `json:"backoff_ms"`
	NextAttemptAt UnixMS             `json:"next_attempt_at_ms"`
	ScheduledAt   UnixMS             `json:"scheduled_at_ms"`
}

// Type returns AutomaticRetryScheduled.
func (AutomaticRetryScheduledPayload) Type() Type { return AutomaticRetryScheduled }

// AutomaticRetryNotScheduledPayload is the payload of AutomaticRetryNotScheduled.
type AutomaticRetryNotScheduledPayload struct {
	RunID            string                  `json:"run_id"`
	NodeID           string                  `json:"node_id"`
	ActivationID     string                  `json:"activation_id"`
	DispatchIdentity string                  `json:"dispatch_identity"`
	FailedAttempt    uint32                  `json:"failed_attempt"`
	Reason           wftype.RefusalReason    `json:"reason"`
	IneligibleReason wftype.IneligibleReason `json:"ineligible_reason,omitempty"`
}

// Type returns AutomaticRetryNotScheduled.
func (AutomaticRetryNotScheduledPayload) Type() Type {
	return AutomaticRetryNotScheduled
}

// AutomaticRetryConsumedPayload is the payload of AutomaticRetryConsumed.
type AutomaticRetryConsumedPayload struct {
	RunID         string             `json:"run_id"`
	NodeID        string             `json:"node_id"`
	ActivationID  string             `json:"activation_id"`
	FailedAttempt uint32             `json:"failed_attempt"`
	NextAttempt   uint32             `json:"next_attempt"`
	FailureKind   wftype.FailureKind `json:"failure_kind"`
	Backoff       Millis             `json:"backoff_ms"`
	NextAttemptAt UnixMS             `json:"next_attempt_at_ms"`
	ScheduledAt   UnixMS             `json:"scheduled_at_ms"`
}

// Type returns AutomaticRetryConsumed.
func (AutomaticRetryConsumedPayload) Type() Type { return AutomaticRetryConsumed }

// AutomaticRetrySupersededPayload is the payload of AutomaticRetrySuperseded.
type AutomaticRetrySupersededPayload struct {
	RunID         string             `json:"run_id"`
	NodeID        string             `json:"node_id"`
	ActivationID  string             `json:"activation_id"`
	FailedAttempt uint32             `json:"failed_attempt"`
	NextAttempt   uint32             `json:"next_attempt"`
	FailureKind   wftype.FailureKind `json:"failure_kind"`
	Backoff       Millis             `json:"backoff_ms"`
	NextAttemptAt UnixMS             `json:"next_attempt_at_ms"`
	ScheduledAt   UnixMS             `json:"scheduled_at_ms"`
}

// Type returns AutomaticRetrySuperseded.
func (AutomaticRetrySupersededPayload) Type() Type { return AutomaticRetrySuperseded }

// AutomaticRetryDiscardedPayload is the payload of AutomaticRetryDiscarded.
type AutomaticRetryDiscardedPayload struct {
	RunID         string             `json:"run_id"`
	NodeID        string             `json:"node_id"`
	ActivationID  string             `json:"activation_id"`
	FailedAttempt uint32             `json:"failed_attempt"`
	NextAttempt   uint32             `json:"next_attempt"`
	FailureKind   wftype.FailureKind `json:"failure_kind"`
	Backoff       Millis             `json:"backoff_ms"`
	NextAttemptAt UnixMS             `json:"next_attempt_at_ms"`
	ScheduledAt   UnixMS             `json:"scheduled_at_ms"`
	Reason        string             `json:"reason"`
}

// Type returns AutomaticRetryDiscarded.
func (AutomaticRetryDiscardedPayload) Type() Type { return AutomaticRetryDiscarded }

// NodeRetryRequestedPayload is the payload of NodeRetryRequested.
type NodeRetryRequestedPayload struct {
	RunID           string `json:"run_id"`
	NodeID          string `json:"node_id"`
	ActivationID    string `json:"activation_id"`
	PreviousAttempt uint32 `json:"previous_attempt"`
	NextAttempt     uint32 `json:"next_attempt"`
}

// Type returns NodeRetryRequested.
func (NodeRetryRequestedPayload) Type() Type { return NodeRetryRequested }

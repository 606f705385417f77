package workflow

import (
	"encoding/json"
	"fmt"
	"github.com/wfstore/wfstore/backend"
	"time"
)

// Event is an append-only run event. Seq is per run and strictly
// increasing in commit order (with gaps allowed).
type Event struct {
	RunID string
	Seq   int64
	Type  EventType
	// Payload is the canonical JSON of the type's payload struct; Decode
	// returns it typed.
	Payload   json.RawMessage
	CreatedAt time.Time
}

// EventType names an event's kind. Each has one payload struct, named after
// it with the suffix Payload (EventRunCreated: RunCreatedPayload).
type EventType string

// EventPayload is implemented by every event payload struct.
type EventPayload interface {
	EventType() EventType
}

// Decode returns the event's payload as its typed struct (a value, for
// example AttemptAdmittedPayload), to be used with a type switch. An
// unknown event type or a payload that does not decode is an error.
func (e Event) Decode() (EventPayload, error) {
	dec, ok := eventDecoders[e.Type]
	if !ok {
		return nil, fmt.Errorf("workflow: event %s #%d: unknown event type %q", e.RunID, e.Seq, e.Type)
	}
	p, err := dec(e.Payload)
	if err != nil {
		return nil, fmt.Errorf("workflow: event %s #%d (%s): %w", e.RunID, e.Seq, e.Type, err)
	}
	return p, nil
}

func decodeAs[T EventPayload](raw json.RawMessage) (EventPayload, error) {
	var p T
	if err := json.Unmarshal(raw, &p); err != nil {
		return nil, err
	}
	return p, nil
}

// UnixMS is a time in an event payload: unix milliseconds, as stored.
type UnixMS int64

// Time returns m as a UTC time.Time (zero for 0).
func (m UnixMS) Time() time.Time { return fromMS(int64(m)) }

// Millis is a duration in an event payload: milliseconds, as stored.
type Millis int64

// Duration returns m as a time.Duration.
func (m Millis) Duration() time.Duration { return time.Duration(m) * time.Millisecond }

// EventLimits is the limits object of a run_created payload.
type EventLimits struct {
	NodeExecutionCap int64 `json:"node_execution_cap"`
	ConcurrencyCap   int64 `json:"concurrency_cap"`
	CycleCap         int64 `json:"cycle_cap"`
	RetryCap         int64 `json:"retry_cap"`
}

// Event types.
const (
	// EventRunCreated: a run was created (a child run names its root).
	EventRunCreated EventType = "run_created"
	// EventRunPaused: PauseRun paused the run.
	EventRunPaused EventType = "run_paused"
	// EventRunResumed: ResumeRun resumed the run.
	EventRunResumed EventType = "run_resumed"
	// EventRunCompleted: the run completed: nothing of it is open any more.
	EventRunCompleted EventType = "run_completed"
	// EventRunCancelled: a cancelling run finalised as cancelled.
	EventRunCancelled EventType = "run_cancelled"
	// EventRunPruned: Prune deleted the run's history; this is then its only event.
	EventRunPruned EventType = "run_pruned"
	// EventRunPruneStarted: Prune began deleting the run's history and counted it; it is the run's last event
	// until the prune finishes, which deletes it and appends run_pruned with these counts.
	EventRunPruneStarted EventType = "run_prune_started"
	// EventCancellationRequested: cancellation of the run was requested (Tree: by RequestTreeCancellation of RootRunID).
	EventCancellationRequested EventType = "cancellation_requested"
	// EventChildRunLinked: a child run was created by one of the run's attempts.
	EventChildRunLinked EventType = "child_run_linked"
	// EventAuthorityTransferred: TransferAuthority replaced the run's authority.
	EventAuthorityTransferred EventType = "authority_transferred"
	// EventExecutionAllowanceExhausted: the run's (or its root's) allowance refused an attempt; written at most once per run.
	EventExecutionAllowanceExhausted EventType = "execution_allowance_exhausted"
	// EventExecutionAllowanceIncreased: IncreaseAllowance raised the run's node execution cap.
	EventExecutionAllowanceIncreased EventType = "execution_allowance_increased"
	// EventActivationCreated: an activation was added as pending, or as a join waiting for its WaitFor activations (a fan-out member carries MemberIndex instead of Generation).
	EventActivationCreated EventType = "activation_created"
	// EventJoinReleased: the last of a join's WaitFor activations completed, and the join became pending in the same transaction.
	EventJoinReleased EventType = "join_released"
	// EventJoinCancelled: a waiting join was cancelled because one of its WaitFor activations was cancelled or failed with no automatic retry pending.
	EventJoinCancelled EventType = "join_cancelled"
	// EventActivationWaiting: a fan-out member was added waiting for a place in its group.
	EventActivationWaiting EventType = "activation_waiting"
	// EventFanOutMemberPromoted: a waiting fan-out member became pending.
	EventFanOutMemberPromoted EventType = "fan_out_member_promoted"
	// EventFanOutMemberWaiting: a requeued fan-out member went back to waiting (its group was full).
	EventFanOutMemberWaiting EventType = "fan_out_member_waiting"
	// EventFanOutMemberCancelled: an unstarted fan-out member was cancelled.
	EventFanOutMemberCancelled EventType = "fan_out_member_cancelled"
	// EventFanOutFailed: a fan-out group failed its run: fail-fast names the failing MemberIndex, wait-all the FailedMembers.
	EventFanOutFailed EventType = "fan_out_failed"
	// EventFanOutRetirementRequested: RetireFanOut recorded the group's retirement intent.
	EventFanOutRetirementRequested EventType = "fan_out_retirement_requested"
	// EventFanOutRetired: the group's retirement settled.
	EventFanOutRetired EventType = "fan_out_retired"
	// EventFanInWaiting: the controller of a fan-in group waits for its members (it is never dispatched).
	EventFanInWaiting EventType = "fan_in_waiting"
	// EventFanInSettled: the store settled a fan-in group's controller by its members' outcome and the group's policy.
	EventFanInSettled EventType = "fan_in_settled"
	// EventAttemptPrepared: an attempt's intent was committed.
	EventAttemptPrepared EventType = "attempt_prepared"
	// EventResourceLeaseAcquired: an attempt leased a declared resource.
	EventResourceLeaseAcquired EventType = "resource_lease_acquired"
	// EventDispatchHandedOff: the handoff was recorded: the owner may be called.
	EventDispatchHandedOff EventType = "dispatch_handed_off"
	// EventDispatchHandoffReleased: a batch that stopped released a handoff it recorded and never offered to the owner: the attempt is provably never dispatched again.
	EventDispatchHandoffReleased EventType = "dispatch_handoff_released"
	// EventAttemptAdmitted: the owner's receipt was persisted.
	EventAttemptAdmitted EventType = "attempt_admitted"
	// EventAttemptCancellationReceiptRecorded: a receipt was persisted for an attempt already cancelling.
	EventAttemptCancellationReceiptRecorded EventType = "attempt_cancellation_receipt_recorded"
	// EventAttemptSucceeded: the attempt succeeded with Output.
	EventAttemptSucceeded EventType = "attempt_succeeded"
	// EventAttemptFailed: the attempt failed.
	EventAttemptFailed EventType = "attempt_failed"
	// EventAttemptPaused: the attempt paused.
	EventAttemptPaused EventType = "attempt_paused"
	// EventAttemptCancelled: the attempt was cancelled.
	EventAttemptCancelled EventType = "attempt_cancelled"
	// EventAttemptCancellationSignalled: MarkCancellationSignalled recorded that the owner was asked to cancel.
	EventAttemptCancellationSignalled EventType = "attempt_cancellation_signalled"
	// EventAttemptSiblingCancelling: a fail-fast sibling failure is cancelling the attempt.
	EventAttemptSiblingCancelling EventType = "attempt_sibling_cancelling"
	// EventAttemptRepairRequired: the attempt's outcome is unknown and needs Repair.
	EventAttemptRepairRequired EventType = "attempt_repair_required"
	// EventAttemptRepaired: Repair settled the attempt.
	EventAttemptRepaired EventType = "attempt_repaired"
	// EventAutomaticRetryScheduled: an automatic retry was scheduled.
	EventAutomaticRetryScheduled EventType = "automatic_retry_scheduled"
	// EventAutomaticRetryNotScheduled: a retryable failure scheduled no retry, and why.
	EventAutomaticRetryNotScheduled EventType = "automatic_retry_not_scheduled"
	// EventAutomaticRetryConsumed: a due schedule requeued its activation.
	EventAutomaticRetryConsumed EventType = "automatic_retry_consumed"
	// EventAutomaticRetrySuperseded: an explicit retry replaced a pending schedule.
	EventAutomaticRetrySuperseded EventType = "automatic_retry_superseded"
	// EventAutomaticRetryDiscarded: a schedule that can never be consumed was deleted.
	EventAutomaticRetryDiscarded EventType = "automatic_retry_discarded"
	// EventNodeRetryRequested: an activation was requeued for its next attempt.
	EventNodeRetryRequested EventType = "node_retry_requested"
)

var eventDecoders = map[EventType]func(json.RawMessage) (EventPayload, error){
	EventRunCreated:                         decodeAs[RunCreatedPayload],
	EventRunPaused:                          decodeAs[RunPausedPayload],
	EventRunResumed:                         decodeAs[RunResumedPayload],
	EventRunCompleted:                       decodeAs[RunCompletedPayload],
	EventRunCancelled:                       decodeAs[RunCancelledPayload],
	EventRunPruned:                          decodeAs[RunPrunedPayload],
	EventRunPruneStarted:                    decodeAs[RunPruneStartedPayload],
	EventCancellationRequested:              decodeAs[CancellationRequestedPayload],
	EventChildRunLinked:                     decodeAs[ChildRunLinkedPayload],
	EventAuthorityTransferred:               decodeAs[AuthorityTransferredPayload],
	EventExecutionAllowanceExhausted:        decodeAs[ExecutionAllowanceExhaustedPayload],
	EventExecutionAllowanceIncreased:        decodeAs[ExecutionAllowanceIncreasedPayload],
	EventActivationCreated:                  decodeAs[ActivationCreatedPayload],
	EventActivationWaiting:                  decodeAs[ActivationWaitingPayload],
	EventJoinReleased:                       decodeAs[JoinReleasedPayload],
	EventJoinCancelled:                      decodeAs[JoinCancelledPayload],
	EventFanOutMemberPromoted:               decodeAs[FanOutMemberPromotedPayload],
	EventFanOutMemberWaiting:                decodeAs[FanOutMemberWaitingPayload],
	EventFanOutMemberCancelled:              decodeAs[FanOutMemberCancelledPayload],
	EventFanOutFailed:                       decodeAs[FanOutFailedPayload],
	EventFanOutRetirementRequested:          decodeAs[FanOutRetirementRequestedPayload],
	EventFanOutRetired:                      decodeAs[FanOutRetiredPayload],
	EventFanInWaiting:                       decodeAs[FanInWaitingPayload],
	EventFanInSettled:                       decodeAs[FanInSettledPayload],
	EventAttemptPrepared:                    decodeAs[AttemptPreparedPayload],
	EventResourceLeaseAcquired:              decodeAs[ResourceLeaseAcquiredPayload],
	EventDispatchHandedOff:                  decodeAs[DispatchHandedOffPayload],
	EventDispatchHandoffReleased:            decodeAs[DispatchHandoffReleasedPayload],
	EventAttemptAdmitted:                    decodeAs[AttemptAdmittedPayload],
	EventAttemptCancellationReceiptRecorded: decodeAs[AttemptCancellationReceiptRecordedPayload],
	EventAttemptSucceeded:                   decodeAs[AttemptSucceededPayload],
	EventAttemptFailed:                      decodeAs[AttemptFailedPayload],
	EventAttemptPaused:                      decodeAs[AttemptPausedPayload],
	EventAttemptCancelled:                   decodeAs[AttemptCancelledPayload],
	EventAttemptCancellationSignalled:       decodeAs[AttemptCancellationSignalledPayload],
	EventAttemptSiblingCancelling:           decodeAs[AttemptSiblingCancellingPayload],
	EventAttemptRepairRequired:              decodeAs[AttemptRepairRequiredPayload],
	EventAttemptRepaired:                    decodeAs[AttemptRepairedPayload],
	EventAutomaticRetryScheduled:            decodeAs[AutomaticRetryScheduledPayload],
	EventAutomaticRetryNotScheduled:         decodeAs[AutomaticRetryNotScheduledPayload],
	EventAutomaticRetryConsumed:             decodeAs[AutomaticRetryConsumedPayload],
	EventAutomaticRetrySuperseded:           decodeAs[AutomaticRetrySupersededPayload],
	EventAutomaticRetryDiscarded:            decodeAs[AutomaticRetryDiscardedPayload],
	EventNodeRetryRequested:                 decodeAs[NodeRetryRequestedPayload],
	EventAttemptTimedOut:                    decodeAs[AttemptTimedOutPayload],
	EventAttemptObservedAfterTimeout:        decodeAs[AttemptObservedAfterTimeoutPayload],
}

// RunCreatedPayload is the payload of EventRunCreated.
type RunCreatedPayload struct {
	RunID     string      `json:"run_id"`
	RootRunID string      `json:"root_run_id,omitempty"`
	Limits    EventLimits `json:"limits"`
}

// EventType returns EventRunCreated.
func (RunCreatedPayload) EventType() EventType { return EventRunCreated }

// RunPausedPayload is the payload of EventRunPaused.
type RunPausedPayload struct {
	RunID string `json:"run_id"`
}

// EventType returns EventRunPaused.
func (RunPausedPayload) EventType() EventType { return EventRunPaused }

// RunResumedPayload is the payload of EventRunResumed.
type RunResumedPayload struct {
	RunID string `json:"run_id"`
}

// EventType returns EventRunResumed.
func (RunResumedPayload) EventType() EventType { return EventRunResumed }

// RunCompletedPayload is the payload of EventRunCompleted.
type RunCompletedPayload struct {
	RunID string `json:"run_id"`
}

// EventType returns EventRunCompleted.
func (RunCompletedPayload) EventType() EventType { return EventRunCompleted }

// RunCancelledPayload is the payload of EventRunCancelled.
type RunCancelledPayload struct {
	RunID string `json:"run_id"`
}

// EventType returns EventRunCancelled.
func (RunCancelledPayload) EventType() EventType { return EventRunCancelled }

// RunPrunedPayload is the payload of EventRunPruned.
type RunPrunedPayload struct {
	RunID   string      `json:"run_id"`
	Deleted PruneCounts `json:"deleted"`
}

// EventType returns EventRunPruned.
func (RunPrunedPayload) EventType() EventType { return EventRunPruned }

// RunPruneStartedPayload is the payload of EventRunPruneStarted: what the
// run held when its prune began, which the run_pruned event reports
// however many invocations the prune takes.
type RunPruneStartedPayload struct {
	RunID    string      `json:"run_id"`
	Deleting PruneCounts `json:"deleting"`
}

// EventType returns EventRunPruneStarted.
func (RunPruneStartedPayload) EventType() EventType { return EventRunPruneStarted }

// CancellationRequestedPayload is the payload of EventCancellationRequested.
type CancellationRequestedPayload struct {
	RunID     string `json:"run_id"`
	RootRunID string `json:"root_run_id,omitempty"`
	Tree      bool   `json:"tree,omitempty"`
}

// EventType returns EventCancellationRequested.
func (CancellationRequestedPayload) EventType() EventType { return EventCancellationRequested }

// ChildRunLinkedPayload is the payload of EventChildRunLinked.
type ChildRunLinkedPayload struct {
	ChildRunID string `json:"child_run_id"`
	RootRunID  string `json:"root_run_id"`
	Depth      int64  `json:"depth"`
}

// EventType returns EventChildRunLinked.
func (ChildRunLinkedPayload) EventType() EventType { return EventChildRunLinked }

// AuthorityTransferredPayload is the payload of EventAuthorityTransferred.
type AuthorityTransferredPayload struct {
	PreviousGeneration int64  `json:"previous_generation"`
	Generation         int64  `json:"generation"`
	DaemonInstanceID   string `json:"daemon_instance_id"`
}

// EventType returns EventAuthorityTransferred.
func (AuthorityTransferredPayload) EventType() EventType { return EventAuthorityTransferred }

// ExecutionAllowanceExhaustedPayload is the payload of EventExecutionAllowanceExhausted.
type ExecutionAllowanceExhaustedPayload struct {
	Version                int  `json:"version"`
	AdditionalWorkAdmitted bool `json:"additional_work_admitted"`
}

// EventType returns EventExecutionAllowanceExhausted.
func (ExecutionAllowanceExhaustedPayload) EventType() EventType {
	return EventExecutionAllowanceExhausted
}

// ExecutionAllowanceIncreasedPayload is the payload of EventExecutionAllowanceIncreased.
type ExecutionAllowanceIncreasedPayload struct {
	PreviousCap int64 `json:"previous_cap"`
	TargetCap   int64 `json:"target_cap"`
}

// EventType returns EventExecutionAllowanceIncreased.
func (ExecutionAllowanceIncreasedPayload) EventType() EventType {
	return EventExecutionAllowanceIncreased
}

// ActivationCreatedPayload is the payload of EventActivationCreated.
type ActivationCreatedPayload struct {
	RunID        string `json:"run_id"`
	NodeID       string `json:"node_id"`
	ActivationID string `json:"activation_id"`
	Generation   *int64 `json:"generation,omitempty"`
	MemberIndex  *int64 `json:"member_index,omitempty"`
}

// EventType returns EventActivationCreated.
func (ActivationCreatedPayload) EventType() EventType { return EventActivationCreated }

// JoinReleasedPayload is the payload of EventJoinReleased: the join (RunID,
// NodeID, ActivationID) and the WaitFor activation whose completion
// released it.
type JoinReleasedPayload struct {
	RunID                   string `json:"run_id"`
	NodeID                  string `json:"node_id"`
	ActivationID            string `json:"activation_id"`
	PredecessorNodeID       string `json:"predecessor_node_id"`
	PredecessorActivationID string `json:"predecessor_activation_id"`
}

// EventType returns EventJoinReleased.
func (JoinReleasedPayload) EventType() EventType { return EventJoinReleased }

// JoinCancelledPayload is the payload of EventJoinCancelled: the join
// (RunID, NodeID, ActivationID), the WaitFor activation that caused it and
// that activation's status (failed or cancelled).
type JoinCancelledPayload struct {
	RunID                   string           `json:"run_id"`
	NodeID                  string           `json:"node_id"`
	ActivationID            string           `json:"activation_id"`
	PredecessorNodeID       string           `json:"predecessor_node_id"`
	PredecessorActivationID string           `json:"predecessor_activation_id"`
	PredecessorStatus       ActivationStatus `json:"predecessor_status"`
}

// EventType returns EventJoinCancelled.
func (JoinCancelledPayload) EventType() EventType { return EventJoinCancelled }

// ActivationWaitingPayload is the payload of EventActivationWaiting.
type ActivationWaitingPayload struct {
	RunID        string `json:"run_id"`
	NodeID       string `json:"node_id"`
	ActivationID string `json:"activation_id"`
	MemberIndex  int64  `json:"member_index"`
}

// EventType returns EventActivationWaiting.
func (ActivationWaitingPayload) EventType() EventType { return EventActivationWaiting }

// FanOutMemberPromotedPayload is the payload of EventFanOutMemberPromoted.
type FanOutMemberPromotedPayload struct {
	RunID        string `json:"run_id"`
	NodeID       string `json:"node_id"`
	ActivationID string `json:"activation_id"`
	MemberIndex  int64  `json:"member_index"`
}

// EventType returns EventFanOutMemberPromoted.
func (FanOutMemberPromotedPayload) EventType() EventType { return EventFanOutMemberPromoted }

// FanOutMemberWaitingPayload is the payload of EventFanOutMemberWaiting.
type FanOutMemberWaitingPayload struct {
	RunID        string `json:"run_id"`
	NodeID       string `json:"node_id"`
	ActivationID string `json:"activation_id"`
	MemberIndex  int64  `json:"member_index"`
}

// EventType returns EventFanOutMemberWaiting.
func (FanOutMemberWaitingPayload) EventType() EventType { return EventFanOutMemberWaiting }

// FanOutMemberCancelledPayload is the payload of EventFanOutMemberCancelled.
type FanOutMemberCancelledPayload struct {
	RunID        string `json:"run_id"`
	NodeID       string `json:"node_id"`
	ActivationID string `json:"activation_id"`
	MemberIndex  int64  `json:"member_index"`
	Reason       string `json:"reason"`
}

// EventType returns EventFanOutMemberCancelled.
func (FanOutMemberCancelledPayload) EventType() EventType { return EventFanOutMemberCancelled }

// FanOutFailedPayload is the payload of EventFanOutFailed.
type FanOutFailedPayload struct {
	ControllerActivationID string        `json:"controller_activation_id"`
	MemberIndex            *int64        `json:"member_index,omitempty"`
	FailedMembers          []int64       `json:"failed_members,omitempty"`
	Policy                 FanOutFailure `json:"policy"`
}

// EventType returns EventFanOutFailed.
func (FanOutFailedPayload) EventType() EventType { return EventFanOutFailed }

// FanOutRetirementRequestedPayload is the payload of EventFanOutRetirementRequested.
type FanOutRetirementRequestedPayload struct {
	ControllerActivationID string `json:"controller_activation_id"`
}

// EventType returns EventFanOutRetirementRequested.
func (FanOutRetirementRequestedPayload) EventType() EventType { return EventFanOutRetirementRequested }

// FanOutRetiredPayload is the payload of EventFanOutRetired.
type FanOutRetiredPayload struct {
	ControllerActivationID string `json:"controller_activation_id"`
}

// EventType returns EventFanOutRetired.
func (FanOutRetiredPayload) EventType() EventType { return EventFanOutRetired }

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

// namesOf names the attempt k.
func namesOf(k backend.AttemptKey) AttemptNames {
	return AttemptNames{RunID: k.RunID, NodeID: k.NodeID, ActivationID: k.ActivationID, Attempt: k.Attempt}
}

// AttemptTimedOutPayload is the payload of EventAttemptTimedOut.
type AttemptTimedOutPayload struct {
	AttemptNames
	DispatchIdentity string        `json:"dispatch_identity"`
	FailureKind      FailureKind   `json:"failure_kind"`
	TimeoutMS        Millis        `json:"timeout_ms"`
	DeadlineMS       UnixMS        `json:"deadline_ms"`
	Status           AttemptStatus `json:"status"`
}

// EventType returns EventAttemptTimedOut.
func (AttemptTimedOutPayload) EventType() EventType { return EventAttemptTimedOut }

// AttemptObservedAfterTimeoutPayload is the payload of
// EventAttemptObservedAfterTimeout: what the owner observed, and the
// attempt's status when it arrived (failed or repair_required).
type AttemptObservedAfterTimeoutPayload struct {
	AttemptNames
	DispatchIdentity string          `json:"dispatch_identity"`
	Observed         ObservationKind `json:"observed"`
	Was              AttemptStatus   `json:"was"`
}

// EventType returns EventAttemptObservedAfterTimeout.
func (AttemptObservedAfterTimeoutPayload) EventType() EventType {
	return EventAttemptObservedAfterTimeout
}

// FanInWaitingPayload is the payload of EventFanInWaiting.
type FanInWaitingPayload struct {
	RunID        string        `json:"run_id"`
	NodeID       string        `json:"node_id"`
	ActivationID string        `json:"activation_id"`
	Members      int64         `json:"members"`
	Policy       FanOutFailure `json:"policy"`
}

// EventType returns EventFanInWaiting.
func (FanInWaitingPayload) EventType() EventType { return EventFanInWaiting }

// FanInSettledPayload is the payload of EventFanInSettled: the
// controller's new status and its members' counts by status when it
// settled. MemberIndex names the member whose terminal failure failed a
// fail-fast group's controller; it is absent when every member had
// settled.
type FanInSettledPayload struct {
	RunID        string           `json:"run_id"`
	NodeID       string           `json:"node_id"`
	ActivationID string           `json:"activation_id"`
	Status       ActivationStatus `json:"status"`
	Policy       FanOutFailure    `json:"policy"`
	Members      int64            `json:"members"`
	Completed    int64            `json:"completed"`
	Failed       int64            `json:"failed"`
	Cancelled    int64            `json:"cancelled"`
	MemberIndex  *int64           `json:"member_index,omitempty"`
}

// EventType returns EventFanInSettled.
func (FanInSettledPayload) EventType() EventType { return EventFanInSettled }

// AttemptPreparedPayload is the payload of EventAttemptPrepared.
type AttemptPreparedPayload struct {
	RunID        string          `json:"run_id"`
	NodeID       string          `json:"node_id"`
	ActivationID string          `json:"activation_id"`
	Attempt      uint32          `json:"attempt"`
	SideEffect   Effect          `json:"side_effect"`
	Intent       json.RawMessage `json:"intent"`
	PreparedAt   UnixMS          `json:"prepared_at_ms"`
}

// EventType returns EventAttemptPrepared.
func (AttemptPreparedPayload) EventType() EventType { return EventAttemptPrepared }

// ResourceLeaseAcquiredPayload is the payload of EventResourceLeaseAcquired.
type ResourceLeaseAcquiredPayload struct {
	RunID        string    `json:"run_id"`
	NodeID       string    `json:"node_id"`
	ActivationID string    `json:"activation_id"`
	Attempt      uint32    `json:"attempt"`
	ResourceKey  string    `json:"resource_key"`
	Mode         LeaseMode `json:"mode"`
	AcquiredAt   UnixMS    `json:"acquired_at_ms"`
}

// EventType returns EventResourceLeaseAcquired.
func (ResourceLeaseAcquiredPayload) EventType() EventType { return EventResourceLeaseAcquired }

// DispatchHandedOffPayload is the payload of EventDispatchHandedOff.
type DispatchHandedOffPayload struct {
	AttemptNames
	DispatchIdentity string `json:"dispatch_identity"`
}

// EventType returns EventDispatchHandedOff.
func (DispatchHandedOffPayload) EventType() EventType { return EventDispatchHandedOff }

// DispatchHandoffReleasedPayload is the payload of EventDispatchHandoffReleased.
type DispatchHandoffReleasedPayload struct {
	AttemptNames
	DispatchIdentity string `json:"dispatch_identity"`
}

// EventType returns EventDispatchHandoffReleased.
func (DispatchHandoffReleasedPayload) EventType() EventType { return EventDispatchHandoffReleased }

// AttemptAdmittedPayload is the payload of EventAttemptAdmitted.
type AttemptAdmittedPayload struct {
	RunID            string          `json:"run_id"`
	NodeID           string          `json:"node_id"`
	ActivationID     string          `json:"activation_id"`
	Attempt          uint32          `json:"attempt"`
	DispatchIdentity string          `json:"dispatch_identity"`
	Receipt          json.RawMessage `json:"receipt"`
	AdmittedAt       UnixMS          `json:"admitted_at_ms"`
}

// EventType returns EventAttemptAdmitted.
func (AttemptAdmittedPayload) EventType() EventType { return EventAttemptAdmitted }

// AttemptCancellationReceiptRecordedPayload is the payload of EventAttemptCancellationReceiptRecorded.
type AttemptCancellationReceiptRecordedPayload struct {
	RunID            string          `json:"run_id"`
	NodeID           string          `json:"node_id"`
	ActivationID     string          `json:"activation_id"`
	Attempt          uint32          `json:"attempt"`
	DispatchIdentity string          `json:"dispatch_identity"`
	Receipt          json.RawMessage `json:"receipt"`
	AdmittedAt       UnixMS          `json:"admitted_at_ms"`
}

// EventType returns EventAttemptCancellationReceiptRecorded.
func (AttemptCancellationReceiptRecordedPayload) EventType() EventType {
	return EventAttemptCancellationReceiptRecorded
}

// AttemptSucceededPayload is the payload of EventAttemptSucceeded.
type AttemptSucceededPayload struct {
	AttemptNames
	DispatchIdentity string          `json:"dispatch_identity"`
	Output           json.RawMessage `json:"output"`
}

// EventType returns EventAttemptSucceeded.
func (AttemptSucceededPayload) EventType() EventType { return EventAttemptSucceeded }

// AttemptFailedPayload is the payload of EventAttemptFailed.
type AttemptFailedPayload struct {
	AttemptNames
	DispatchIdentity string `json:"dispatch_identity"`
	Retryable        bool   `json:"retryable"`
}

// EventType returns EventAttemptFailed.
func (AttemptFailedPayload) EventType() EventType { return EventAttemptFailed }

// AttemptPausedPayload is the payload of EventAttemptPaused.
type AttemptPausedPayload struct {
	AttemptNames
	DispatchIdentity string `json:"dispatch_identity"`
	Reason           string `json:"reason"`
}

// EventType returns EventAttemptPaused.
func (AttemptPausedPayload) EventType() EventType { return EventAttemptPaused }

// AttemptCancelledPayload is the payload of EventAttemptCancelled.
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
	Observed ObservationKind `json:"observed,omitempty"`
	Output   json.RawMessage `json:"output,omitempty"`
}

// EventType returns EventAttemptCancelled.
func (AttemptCancelledPayload) EventType() EventType { return EventAttemptCancelled }

// AttemptCancellationSignalledPayload is the payload of EventAttemptCancellationSignalled.
type AttemptCancellationSignalledPayload struct {
	AttemptNames
	DispatchIdentity string `json:"dispatch_identity"`
}

// EventType returns EventAttemptCancellationSignalled.
func (AttemptCancellationSignalledPayload) EventType() EventType {
	return EventAttemptCancellationSignalled
}

// AttemptSiblingCancellingPayload is the payload of EventAttemptSiblingCancelling.
type AttemptSiblingCancellingPayload struct {
	AttemptNames
	DispatchIdentity string `json:"dispatch_identity"`
}

// EventType returns EventAttemptSiblingCancelling.
func (AttemptSiblingCancellingPayload) EventType() EventType { return EventAttemptSiblingCancelling }

// AttemptRepairRequiredPayload is the payload of EventAttemptRepairRequired.
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

// EventType returns EventAttemptRepairRequired.
func (AttemptRepairRequiredPayload) EventType() EventType { return EventAttemptRepairRequired }

// AttemptRepairedPayload is the payload of EventAttemptRepaired.
type AttemptRepairedPayload struct {
	AttemptNames
	DispatchIdentity string       `json:"dispatch_identity"`
	Action           RepairAction `json:"action"`
}

// EventType returns EventAttemptRepaired.
func (AttemptRepairedPayload) EventType() EventType { return EventAttemptRepaired }

// AutomaticRetryScheduledPayload is the payload of EventAutomaticRetryScheduled.
type AutomaticRetryScheduledPayload struct {
	RunID         string      `json:"run_id"`
	NodeID        string      `json:"node_id"`
	ActivationID  string      `json:"activation_id"`
	FailedAttempt uint32      `json:"failed_attempt"`
	NextAttempt   uint32      `json:"next_attempt"`
	FailureKind   FailureKind `json:"failure_kind"`
	Backoff       Millis      `json:"backoff_ms"`
	NextAttemptAt UnixMS      `json:"next_attempt_at_ms"`
	ScheduledAt   UnixMS      `json:"scheduled_at_ms"`
}

// EventType returns EventAutomaticRetryScheduled.
func (AutomaticRetryScheduledPayload) EventType() EventType { return EventAutomaticRetryScheduled }

// AutomaticRetryNotScheduledPayload is the payload of EventAutomaticRetryNotScheduled.
type AutomaticRetryNotScheduledPayload struct {
	RunID            string           `json:"run_id"`
	NodeID           string           `json:"node_id"`
	ActivationID     string           `json:"activation_id"`
	DispatchIdentity string           `json:"dispatch_identity"`
	FailedAttempt    uint32           `json:"failed_attempt"`
	Reason           RefusalReason    `json:"reason"`
	IneligibleReason IneligibleReason `json:"ineligible_reason,omitempty"`
}

// EventType returns EventAutomaticRetryNotScheduled.
func (AutomaticRetryNotScheduledPayload) EventType() EventType {
	return EventAutomaticRetryNotScheduled
}

// AutomaticRetryConsumedPayload is the payload of EventAutomaticRetryConsumed.
type AutomaticRetryConsumedPayload struct {
	RunID         string      `json:"run_id"`
	NodeID        string      `json:"node_id"`
	ActivationID  string      `json:"activation_id"`
	FailedAttempt uint32      `json:"failed_attempt"`
	NextAttempt   uint32      `json:"next_attempt"`
	FailureKind   FailureKind `json:"failure_kind"`
	Backoff       Millis      `json:"backoff_ms"`
	NextAttemptAt UnixMS      `json:"next_attempt_at_ms"`
	ScheduledAt   UnixMS      `json:"scheduled_at_ms"`
}

// EventType returns EventAutomaticRetryConsumed.
func (AutomaticRetryConsumedPayload) EventType() EventType { return EventAutomaticRetryConsumed }

// AutomaticRetrySupersededPayload is the payload of EventAutomaticRetrySuperseded.
type AutomaticRetrySupersededPayload struct {
	RunID         string      `json:"run_id"`
	NodeID        string      `json:"node_id"`
	ActivationID  string      `json:"activation_id"`
	FailedAttempt uint32      `json:"failed_attempt"`
	NextAttempt   uint32      `json:"next_attempt"`
	FailureKind   FailureKind `json:"failure_kind"`
	Backoff       Millis      `json:"backoff_ms"`
	NextAttemptAt UnixMS      `json:"next_attempt_at_ms"`
	ScheduledAt   UnixMS      `json:"scheduled_at_ms"`
}

// EventType returns EventAutomaticRetrySuperseded.
func (AutomaticRetrySupersededPayload) EventType() EventType { return EventAutomaticRetrySuperseded }

// AutomaticRetryDiscardedPayload is the payload of EventAutomaticRetryDiscarded.
type AutomaticRetryDiscardedPayload struct {
	RunID         string      `json:"run_id"`
	NodeID        string      `json:"node_id"`
	ActivationID  string      `json:"activation_id"`
	FailedAttempt uint32      `json:"failed_attempt"`
	NextAttempt   uint32      `json:"next_attempt"`
	FailureKind   FailureKind `json:"failure_kind"`
	Backoff       Millis      `json:"backoff_ms"`
	NextAttemptAt UnixMS      `json:"next_attempt_at_ms"`
	ScheduledAt   UnixMS      `json:"scheduled_at_ms"`
	Reason        string      `json:"reason"`
}

// EventType returns EventAutomaticRetryDiscarded.
func (AutomaticRetryDiscardedPayload) EventType() EventType { return EventAutomaticRetryDiscarded }

// NodeRetryRequestedPayload is the payload of EventNodeRetryRequested.
type NodeRetryRequestedPayload struct {
	RunID           string `json:"run_id"`
	NodeID          string `json:"node_id"`
	ActivationID    string `json:"activation_id"`
	PreviousAttempt uint32 `json:"previous_attempt"`
	NextAttempt     uint32 `json:"next_attempt"`
}

// EventType returns EventNodeRetryRequested.
func (NodeRetryRequestedPayload) EventType() EventType { return EventNodeRetryRequested }

// emit appends an event of p's type with p as its payload.
func (b *batch) emit(run *backend.Run, p EventPayload, atMS int64) {
	b.event(run, string(p.EventType()), p, atMS)
}

func schedulePayload(s backend.RetrySchedule) AutomaticRetryScheduledPayload {
	return AutomaticRetryScheduledPayload{
		RunID: s.Key.RunID, NodeID: s.Key.NodeID, ActivationID: s.Key.ActivationID,
		FailedAttempt: s.FailedAttempt, NextAttempt: s.NextAttempt, FailureKind: FailureKind(s.FailureKind),
		Backoff: Millis(s.BackoffMS), NextAttemptAt: UnixMS(s.DueMS), ScheduledAt: UnixMS(s.ScheduledMS),
	}
}

func discardPayload(s backend.RetrySchedule, reason string) AutomaticRetryDiscardedPayload {
	p := schedulePayload(s)
	return AutomaticRetryDiscardedPayload{
		RunID: p.RunID, NodeID: p.NodeID, ActivationID: p.ActivationID,
		FailedAttempt: p.FailedAttempt, NextAttempt: p.NextAttempt, FailureKind: p.FailureKind,
		Backoff: p.Backoff, NextAttemptAt: p.NextAttemptAt, ScheduledAt: p.ScheduledAt, Reason: reason,
	}
}

func preparedPayload(k backend.AttemptKey, effect backend.Effect, intent []byte, at int64) AttemptPreparedPayload {
	return AttemptPreparedPayload{
		RunID: k.RunID, NodeID: k.NodeID, ActivationID: k.ActivationID, Attempt: k.Attempt,
		SideEffect: Effect(effect), Intent: json.RawMessage(intent), PreparedAt: UnixMS(at),
	}
}

func leasePayload(l backend.Lease) ResourceLeaseAcquiredPayload {
	return ResourceLeaseAcquiredPayload{
		RunID: l.Key.RunID, NodeID: l.Key.NodeID, ActivationID: l.Key.ActivationID, Attempt: l.Key.Attempt,
		ResourceKey: l.Key.Resource, Mode: LeaseMode(l.Key.Mode), AcquiredAt: UnixMS(l.AcquiredMS),
	}
}

func limitsPayload(l backend.Limits) EventLimits { return EventLimits(l) }

func admittedPayload(k backend.AttemptKey, identity string, receipt []byte, at int64) AttemptAdmittedPayload {
	return AttemptAdmittedPayload{
		RunID: k.RunID, NodeID: k.NodeID, ActivationID: k.ActivationID, Attempt: k.Attempt,
		DispatchIdentity: identity, Receipt: json.RawMessage(receipt), AdmittedAt: UnixMS(at),
	}
}

// receiptPayload is the payload of a persisted receipt: typ is
// EventAttemptAdmitted or EventAttemptCancellationReceiptRecorded.
func receiptPayload(typ EventType, k backend.AttemptKey, identity string, receipt []byte, at int64) EventPayload {
	p := admittedPayload(k, identity, receipt, at)
	if typ == EventAttemptCancellationReceiptRecorded {
		return AttemptCancellationReceiptRecordedPayload(p)
	}
	return p
}

package wftype

// FailureKind classifies how an attempt failed, for automatic retry.
type FailureKind string

// Failure kinds.
const (
	FailureOwnerUnavailableBeforeAcceptance FailureKind = "owner_unavailable_before_acceptance"
	FailureOwnerReportedRetryable           FailureKind = "owner_reported_retryable"
	FailureCancellation                     FailureKind = "cancellation"
	FailureTerminalTimeout                  FailureKind = "terminal_timeout"
	FailureApprovalDenied                   FailureKind = "approval_denied"
	FailureSchemaFailure                    FailureKind = "schema_failure"
	FailureAmbiguousMutation                FailureKind = "ambiguous_mutation"
	FailureTerminalFailure                  FailureKind = "terminal_failure"
)

// Valid reports whether k is one of the eight failure kinds.
func (k FailureKind) Valid() bool {
	switch k {
	case FailureOwnerUnavailableBeforeAcceptance, FailureOwnerReportedRetryable,
		FailureCancellation, FailureTerminalTimeout, FailureApprovalDenied,
		FailureSchemaFailure, FailureAmbiguousMutation, FailureTerminalFailure:
		return true
	}
	return false
}

// IneligibleReason says why an automatic retry is not allowed.
type IneligibleReason string

// Ineligibility reasons.
const (
	ReasonUnsupportedPolicyVersion     IneligibleReason = "unsupported_policy_version"
	ReasonInvalidLimit                 IneligibleReason = "invalid_limit"
	ReasonAttemptsExhausted            IneligibleReason = "attempts_exhausted"
	ReasonCancellation                 IneligibleReason = "cancellation"
	ReasonTerminalTimeout              IneligibleReason = "terminal_timeout"
	ReasonApprovalDenied               IneligibleReason = "approval_denied"
	ReasonSchemaFailure                IneligibleReason = "schema_failure"
	ReasonAmbiguousMutation            IneligibleReason = "ambiguous_mutation"
	ReasonTerminalFailure              IneligibleReason = "terminal_failure"
	ReasonUnsafeEffectOrReconciliation IneligibleReason = "unsafe_effect_or_reconciliation"
)

// RefusalReason says why a RetryableFailure observation scheduled no
// automatic retry.
type RefusalReason string

// Refusal reasons, in the order they are checked.
const (
	// RefusedNoPolicy: the activation has no retry policy.
	RefusedNoPolicy RefusalReason = "no_policy"
	// RefusedKindNotAdmitted: the policy's eligible failures do not list
	// owner_reported_retryable.
	RefusedKindNotAdmitted RefusalReason = "failure_kind_not_admitted"
	// RefusedIneligible: DecideRetry refused; RetryRefusal.Ineligible holds
	// the decision table's reason (for example
	// unsafe_effect_or_reconciliation under the default RepairRequired
	// reconciliation, or invalid_limit under a retry cap of 0).
	RefusedIneligible RefusalReason = "ineligible"
	// RefusedBackoffOverflow: the policy's backoff for the next attempt, or
	// its due time, does not fit.
	RefusedBackoffOverflow RefusalReason = "backoff_overflow"
	// RefusedScheduleExists: the activation already has a different
	// schedule for this or a later attempt; it is kept unchanged
	// (RetryRefusal.Existing) and no second one is made.
	RefusedScheduleExists RefusalReason = "schedule_exists"
)

// RepairAction is an operator's resolution of a repair_required attempt.
type RepairAction string

// Repair actions.
const (
	// RepairConfirmSucceeded: the work happened; Output completes the activation.
	RepairConfirmSucceeded RepairAction = "confirm_succeeded"
	// RepairConfirmFailed: the work failed; the activation fails.
	RepairConfirmFailed RepairAction = "confirm_failed"
	// RepairConfirmCancelled: the work was cancelled.
	RepairConfirmCancelled RepairAction = "confirm_cancelled"
	// RepairAbandon: give the attempt up so the node may be retried
	// explicitly (RetryFailedNode) with a higher attempt number.
	RepairAbandon RepairAction = "abandon_for_explicit_retry"
)

// ObservationKind is what the owner reports about an admitted attempt.
type ObservationKind string

// Observation kinds.
const (
	ObservedAdmitted         ObservationKind = "admitted"
	ObservedRunning          ObservationKind = "running"
	ObservedDeferred         ObservationKind = "deferred"
	ObservedSucceeded        ObservationKind = "succeeded"
	ObservedFailed           ObservationKind = "failed"
	ObservedRetryableFailure ObservationKind = "retryable_failure"
	ObservedPaused           ObservationKind = "paused"
	ObservedCancelled        ObservationKind = "cancelled"
	ObservedUnknown          ObservationKind = "unknown"
)

// FanOutFailure is a fan-out group's settlement policy: what a member's
// terminal failure (a failed observation with no automatic retry
// scheduled) does to the rest of the group.
type FanOutFailure string

// Settlement policies.
const (
	// WaitAll, the default: the failure is recorded on the member, the
	// other members go on (waiting ones are still promoted and admitted),
	// and the run fails only once every member has settled with at least
	// one of them failed. It never interrupts work an owner already holds,
	// which is why it is the default: cancelling a sibling that may be
	// mutating the world is a choice the caller must make explicitly.
	WaitAll FanOutFailure = "wait_all"
	// FailFast: in the failing member's own transaction every sibling's
	// active attempt moves to sibling_cancelling (a prepared attempt that
	// provably never reached its owner is cancelled outright), every
	// waiting or pending sibling is cancelled, the group is marked retired
	// and the run fails. The sibling attempts then settle as cancelled
	// through their observations. A failed member of such a group is
	// never requeued.
	FailFast FanOutFailure = "fail_fast"
)

// PruneCounts counts the records of one run a prune deleted (or, in a dry
// run, would delete).
type PruneCounts struct {
	Events    int `json:"events"`
	Attempts  int `json:"attempts"`
	Leases    int `json:"leases"`
	Schedules int `json:"schedules"`
}

// Total is the number of records counted.
func (c PruneCounts) Total() int { return c.Events + c.Attempts + c.Leases + c.Schedules }

package model

import (
	"fmt"
	"slices"
)

// The durable records the model keeps, and the values of their fields.

// Run statuses.
const (
	RunRunning        = "running"
	RunPaused         = "paused"
	RunFailed         = "failed"
	RunRepairRequired = "repair_required"
	RunCancelled      = "cancelled"
	RunCompleted      = "completed"
)

// Activation statuses.
const (
	ActivationPending   = "pending"
	ActivationRunning   = "running"
	ActivationCompleted = "completed"
	ActivationFailed    = "failed"
	ActivationCancelled = "cancelled"
	ActivationWaiting   = "waiting" // a fan-out member held back by its group's concurrency, or a join
)

// Attempt statuses.
const (
	AttemptPrepared          = "prepared"
	AttemptAdmitted          = "admitted"
	AttemptRunning           = "running"
	AttemptSucceeded         = "succeeded"
	AttemptFailed            = "failed"
	AttemptPaused            = "paused"
	AttemptCancelled         = "cancelled"
	AttemptCancelling        = "cancelling"
	AttemptSiblingCancelling = "sibling_cancelling"
	AttemptRepairRequired    = "repair_required"
	AttemptAbandoned         = "abandoned"
)

// Effects and reconciliation classes.
const (
	ReadOnly         = "read_only"
	Mutating         = "mutating"
	IdempotentReplay = "idempotent_replay"
	ReceiptStatus    = "receipt_status"
	RepairRequired   = "repair_required"
)

// Handoff states.
const (
	HandoffPending  = "pending"
	HandoffRecorded = "recorded"
)

// Receipt kinds kept on an attempt ("" = none).
const (
	ReceiptOwner = "owner" // the owner's receipt for the identity
	ReceiptOther = "other" // a different receipt supplied by a caller
	ReceiptChild = "child" // the synthetic receipt of a child-run admission
)

// Limits of a run, as stored: no zero caps, but RetryCap may be 0 (no
// automatic retry, no explicit retry).
type Limits struct {
	NodeExecutionCap, ConcurrencyCap, CycleCap, RetryCap int64
}

// Authority is an execution authority.
type Authority struct {
	Generation int64
	Tag        string
}

// ActivationKey names an activation.
type ActivationKey struct{ RunID, NodeID, ActivationID string }

func (k ActivationKey) String() string { return k.RunID + "/" + k.NodeID + "/" + k.ActivationID }

// AttemptKey names an attempt.
type AttemptKey struct {
	ActivationKey
	Attempt uint32
}

func (k AttemptKey) String() string { return fmt.Sprintf("%s#%d", k.ActivationKey, k.Attempt) }

// Policy is an automatic-retry policy (version 1).
type Policy struct {
	MaxAttempts                      uint32
	Retryable, Unavailable           bool // eligible failures
	InitialMS, Multiplier, MaximumMS int64
}

// NewActivation describes an activation to add.
type NewActivation struct {
	Key            ActivationKey
	Effect         string
	Reconciliation string
	Policy         *Policy
	Claim          bool            // a write claim on the run's resource "res"
	Predecessors   []ActivationKey // predecessors (same run)
	WaitFor        []ActivationKey // a join's activations, sorted (same run)
}

func (a NewActivation) same(b NewActivation) bool {
	pe := (a.Policy == nil) == (b.Policy == nil) && (a.Policy == nil || *a.Policy == *b.Policy)
	return a.Effect == b.Effect && a.Reconciliation == b.Reconciliation && a.Claim == b.Claim && pe && slices.Equal(a.Predecessors, b.Predecessors) && slices.Equal(a.WaitFor, b.WaitFor)
}

// Run is a run's durable state.
type Run struct {
	ID, Root, Parent string
	Depth            int
	Status           string
	Cancel           bool
	Authority        *Authority
	Limits           Limits
	Exhausted        bool // the one execution_allowance_exhausted event was written
}

// Activation is an activation's durable state.
type Activation struct {
	Def           NewActivation
	Status        string
	LastAttempt   uint32
	Admissible    bool
	Output        bool
	HasSuccessors bool
	Group         *Group // the fan-out group of a member, nil otherwise
	Index         int    // a member's index
}

// Group is a fan-out group: its members, by index, share one definition.
// Its accounting is derived from the members' statuses.
type Group struct {
	Controller ActivationKey
	Members    []ActivationKey
	Max        int
	FailFast   bool
	Retired    bool // a fail-fast failure stopped the group
	FanIn      bool // the store settles the controller
	Def        NewActivation
}

// Attempt is an attempt's durable state.
type Attempt struct {
	Key      AttemptKey
	Identity string
	Status   string
	Handoff  string
	Effect   string
	Receipt  string
	Prepared int64 // ms
}

// Schedule is an automatic retry schedule.
type Schedule struct {
	FailedAttempt, NextAttempt uint32
	BackoffMS                  int64
	DueMS                      int64
}

func cloneAuth(a *Authority) *Authority {
	if a == nil {
		return nil
	}
	c := *a
	return &c
}

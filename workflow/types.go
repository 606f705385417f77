package workflow

import (
	"encoding/json"
	"time"

	"github.com/wfstore/wfstore/backend"
)

// Types shared with the storage contract. They are aliases, so values move
// between the Store and a backend without conversion.
type (
	RunStatus        = backend.RunStatus
	ActivationStatus = backend.ActivationStatus
	AttemptStatus    = backend.AttemptStatus
	LeaseMode        = backend.LeaseMode
	Handoff          = backend.Handoff
	ActivationKey    = backend.ActivationKey
	AttemptKey       = backend.AttemptKey
	Authority        = backend.Authority
	Limits           = backend.Limits
	ResourceClaim    = backend.ResourceClaim
	NodeRef          = backend.NodeRef
	Run              = backend.Run
	Activation       = backend.Activation
	Attempt          = backend.Attempt
	Lease            = backend.Lease
	RetrySchedule    = backend.RetrySchedule
	Event            = backend.Event
	FanOutGroup      = backend.FanOutGroup
)

// Default run limits (SEMANTICS §5), used for zero fields of Limits.
const (
	DefaultNodeExecutionCap = 1000
	DefaultConcurrencyCap   = 8
	DefaultCycleCap         = 100
	DefaultRetryCap         = 3
	// MaxRunDepth and MaxDescendants bound child-run composition.
	MaxRunDepth    = 8
	MaxDescendants = 64
	// AllowanceReadBudget is the allowance observation's read budget.
	AllowanceReadBudget = 1000
)

// PreparedDispatch is a committed attempt intent: what the owner is asked
// to do, under which idempotency key (Identity).
type PreparedDispatch struct {
	Activation Activation
	Attempt    uint32
	Identity   string
	SideEffect Effect
	Intent     json.RawMessage // canonical
	PreparedAt time.Time
}

// Key returns the attempt key.
func (p PreparedDispatch) Key() AttemptKey {
	return AttemptKey{ActivationKey: p.Activation.Key, Attempt: p.Attempt}
}

func isActive(s AttemptStatus) bool {
	switch s {
	case backend.AttemptPrepared, backend.AttemptAdmitted, backend.AttemptRunning,
		backend.AttemptCancelling, backend.AttemptSiblingCancelling:
		return true
	}
	return false
}

func isSettled(s AttemptStatus) bool {
	switch s {
	case backend.AttemptSucceeded, backend.AttemptFailed, backend.AttemptCancelled,
		backend.AttemptPaused, backend.AttemptAbandoned:
		return true
	}
	return false
}

package workflow

import (
	"errors"
	"fmt"
	"strings"

	"github.com/wfstore/wfstore/backend"
)

// HeldHandoff names one handoff write: the attempt and the fresh holder
// token the write stored (see Attempt.HandoffToken).
type HeldHandoff struct {
	Attempt AttemptRef
	Token   string
}

// HandoffOutcomeUnknownError reports handoff writes whose commit answer was
// lost (backend.ErrOutcomeUnknown): each may or may not have been recorded.
// Handoffs names every attempt the lost commit wrote, with the holder token
// that write stored, so that a caller can decide without guessing: a
// re-read (GetAttempt) showing the handoff recorded with exactly that token
// proves the handoff is the caller's own and the owner may be called for
// it, since the owner was not called under it; a re-read showing the
// handoff pending proves the write did not apply (it may be handed off
// again); any other token means another caller handed it off since, and
// the attempt is not the caller's. Unwrap returns the commit's error, so
// errors.Is(err, backend.ErrOutcomeUnknown) holds.
type HandoffOutcomeUnknownError struct {
	Handoffs []HeldHandoff
	Err      error
}

func (e *HandoffOutcomeUnknownError) Error() string {
	ids := make([]string, len(e.Handoffs))
	for i, h := range e.Handoffs {
		ids[i] = h.Attempt.Identity
	}
	return fmt.Sprintf("workflow: dispatch handoff of %s: outcome unknown: %v", strings.Join(ids, ", "), e.Err)
}

func (e *HandoffOutcomeUnknownError) Unwrap() error { return e.Err }

// handoffOutcomeUnknown wraps err, when it is a lost commit answer, in a
// HandoffOutcomeUnknownError naming hs; any other err is returned as is.
func handoffOutcomeUnknown(err error, hs []HeldHandoff) error {
	if err == nil || !errors.Is(err, backend.ErrOutcomeUnknown) || len(hs) == 0 {
		return err
	}
	return &HandoffOutcomeUnknownError{Handoffs: hs, Err: err}
}

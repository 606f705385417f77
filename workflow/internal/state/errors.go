package state

import (
	"errors"
	"fmt"

	"github.com/wfstore/wfstore/wftype"
)

// ErrNoop aborts an Update whose outcome needs no write: a transition that
// finds its change already made returns it, and the Store commits nothing.
var ErrNoop = errors.New("workflow: no-op")

// Errorf returns a *wftype.StateError of kind (one of wftype's sentinels,
// such as wftype.ErrConflict) saying what was found.
func Errorf(kind error, format string, args ...any) error {
	return &wftype.StateError{Kind: kind, Detail: fmt.Sprintf(format, args...)}
}

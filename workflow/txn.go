package workflow

import "github.com/wfstore/wfstore/workflow/internal/state"

// batch, txn and waitSettled are the state core's write set, transaction
// and settlement note, under the names this package's decisions use.
type (
	batch       = state.Batch
	txn         = state.Txn
	waitSettled = state.WaitSettled
)

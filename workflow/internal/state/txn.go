package state

import "github.com/wfstore/wfstore/backend"

// Txn is the transaction a decision is made in, as the helpers that decide
// inside one thread it: Tx reads the store and applies the writes, W
// collects the writes decided so far, and At is the transaction's time in
// unix milliseconds. The context stays the first parameter of each helper.
type Txn struct {
	Tx backend.Tx
	W  *Batch
	At int64
}

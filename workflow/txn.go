package workflow

import "github.com/wfstore/wfstore/backend"

// txn is the transaction a decision is made in, as the helpers that decide
// inside one thread it: tx reads the store and applies the writes, w
// collects the writes decided so far, and at is the transaction's time in
// unix milliseconds. The context stays the first parameter of each helper.
type txn struct {
	tx backend.Tx
	w  *batch
	at int64
}

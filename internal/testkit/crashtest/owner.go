package crashtest

import (
	"context"
	"encoding/json"
	"errors"

	"github.com/wfstore/wfstore/backend"
	"github.com/wfstore/wfstore/internal/faultseam"
	"github.com/wfstore/wfstore/workflow"
)

// ErrRefused is what Ledger.Dispatch returns for an attempt it refused.
var ErrRefused = errors.New("owner refused the attempt")

// Dispatch is a crash test owner's call for identity, idempotent through
// the ledger: the receipt the ledger holds, else "call", signal("owner")
// (where the parent may kill the process), then "receipt", each written
// durably before the next step. refuse, when not nil, is asked before the
// call of an attempt without a receipt; when it says so, Dispatch records
// "refuse" and returns ErrRefused without doing any work.
func (l *Ledger) Dispatch(identity string, signal func(string), refuse func(LedgerState) bool) (json.RawMessage, error) {
	st, err := l.Read()
	if err != nil {
		return nil, err
	}
	if st.Receipts[identity] {
		return ReceiptOf(identity), nil
	}
	if refuse != nil && refuse(st) {
		return nil, errors.Join(ErrRefused, l.Append("refuse "+identity))
	}
	if err := l.Append("call " + identity); err != nil {
		return nil, err
	}
	signal("owner")
	if err := l.Append("receipt " + identity); err != nil {
		return nil, err
	}
	return ReceiptOf(identity), nil
}

// LookupReceipt reports the receipt the ledger holds for identity
// (workflow.ReceiptLookup).
func (l *Ledger) LookupReceipt(_ context.Context, identity string) (json.RawMessage, bool, error) {
	st, err := l.Read()
	if err != nil || !st.Receipts[identity] {
		return nil, false, err
	}
	return ReceiptOf(identity), true, nil
}

// Signalling wraps a Backend so that Signal("commit") is called at the end
// of every successful Update fn, just before the adapter commits.
type Signalling struct {
	backend.Backend
	Signal func(string)
}

// Update runs fn, then signals "commit" when fn succeeded.
func (b Signalling) Update(ctx context.Context, fn func(tx backend.Tx) error) error {
	return b.Backend.Update(ctx, func(tx backend.Tx) error {
		if err := fn(tx); err != nil {
			return err
		}
		b.Signal("commit")
		return nil
	})
}

// SignalBoundaries returns the fault hook that signals "prepared" when an
// attempt's intent committed and "accepted" when the owner returned its
// receipt, and never fails.
func SignalBoundaries(signal func(string)) faultseam.Hook[workflow.PreparedDispatch] {
	return func(_ context.Context, b faultseam.Boundary, _ workflow.PreparedDispatch) error {
		switch b {
		case faultseam.IntentCommitted:
			signal("prepared")
		case faultseam.OwnerAccepted:
			signal("accepted")
		}
		return nil
	}
}

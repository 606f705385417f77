package backend

import "context"

// WorkSignaler is an optional capability of the Tx an adapter hands to
// Update's fn: it carries the news that a transaction makes work available
// to other processes on the same store, when and only when that
// transaction commits.
//
// The workflow layer decides when work arrives (a run created, an
// activation or fan-out added, an observation applied, a retry scheduled
// or requeued, a run resumed, an allowance raised) and calls SignalWork
// inside the transaction that makes it so; the adapter only translates.
// An adapter that implements it must keep these rules:
//
//   - the signal becomes visible to listeners (WorkListener) after the
//     transaction's commit is visible, so that a listener woken by it
//     finds the work in its next transaction;
//   - a transaction that does not commit (fn returned an error or
//     panicked, a write failed, the commit failed) signals nothing;
//   - a re-run of fn starts unsignalled: only the run that commits counts,
//     and it signals once however often it called SignalWork;
//   - under group commit, a fn whose writes are dropped drops its signal
//     too, and one commit carrying several signalled fns may signal once.
//
// SignalWork never fails and never blocks on the store: a signal that
// cannot be delivered costs its listeners a poll, never correctness, so
// the adapter may send it with the commit's own round trip. An adapter
// whose Tx does not implement WorkSignaler is unaffected: workflow checks
// for it with a type assertion and otherwise does nothing.
type WorkSignaler interface {
	// SignalWork marks the transaction as making work available.
	SignalWork()
}

// WorkListener is an optional capability of a Backend: it delivers the
// signals of committed transactions (see WorkSignaler) from every Backend
// value, in any process, over the same store, and no other store's.
//
// ListenWork starts listening and returns a channel that receives a value
// after each such commit, for as long as ctx lasts. Values coalesce: the
// channel has a buffer of one, and a burst of commits while the receiver
// is busy leaves a single value. A listener that was cut off from the
// store (a lost connection) and has reconnected sends one value, since
// work may have arrived while it could not hear; so may one that could
// not connect at once. Therefore every signalled commit after ListenWork
// returns is followed by a value on the channel, as long as ctx lasts and
// the Backend is open. A value may also come without new work (a
// reconnection, another store sharing a channel name by accident): a
// receiver looks for work and finds none.
//
// The channel is never closed, so that a select over it does not spin
// after the listener stops. The listener stops, releasing whatever it
// holds (a connection), when ctx ends or the Backend is closed; Close
// waits for that. ListenWork fails only when ctx is already done or the
// Backend is closed (ErrClosed).
type WorkListener interface {
	ListenWork(ctx context.Context) (<-chan struct{}, error)
}

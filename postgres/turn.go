package postgres

import (
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// This file is the turn: how an Update that keeps losing to concurrent
// ones gets to commit.
//
// Serialization failures favour small transactions: a large one (a tree
// cancellation reading and writing whole runs) overlaps every dispatcher
// that commits on the same runs while it runs, and re-run after each
// failure it loses again, until its busy timeout. So every read-write
// transaction passes a gate first: its first statement after BEGIN locks
// the store's meta table in ROW SHARE mode, which conflicts with nothing
// the store's transactions take and, being a weak lock, costs no shared
// lock-table traffic. An Update whose fn failed turnAfter times, or that
// has run for a quarter of its busy timeout, takes the turn: it locks the
// meta table in EXCLUSIVE mode instead. The server grants that once every
// read-write transaction of the store in flight has ended, and queues
// behind it every one that reaches the gate after the request, so the
// turn's run has the store's writes to itself and does not fail to
// serialize with another. Its snapshot is taken after the lock is granted
// (LOCK TABLE is a utility statement; the snapshot comes with the
// settings' SELECT), and so is that of every transaction that waited at
// the gate: none of them overlaps the turn. Two turns queue in request
// order. Views pass no gate. Every lock is the transaction's: COMMIT or
// ROLLBACK (or a lost session) releases it.
//
// The turn decides only who runs when: serializability still rests on the
// server's checks alone, so any transaction may go past the gate without
// changing what commits. That bounds every wait:
//
//   - a transaction waits at the gate for at most its gate wait (half its
//     busy timeout, at most turnMaxHold); then that run fails with 55P03
//     and the Update's further runs go past the gate, none of them
//     taking the turn (which would wait for the same holder). So a turn
//     whose fn waits for another Update of the store (against the
//     contract) holds it back once, by that much;
//   - the turn's request waits at most turnLockWait for the transactions
//     ahead of it (a stuck one included); then that run fails with 55P03
//     and is re-run, taking the turn again, within the busy timeout;
//   - a turn whose fn leaves its transaction idle between statements for
//     turnMaxIdle has its session ended by the server (its
//     idle_in_transaction_session_timeout), which rolls it back and opens
//     the gate; the Update re-runs as after a lost connection.
//
// lock_timeout is set around each gate statement only and reset to the
// session's default after it, so the other statements' lock waits are
// unchanged.

const (
	// turnAfter is how many transient failures make an Update take the
	// turn for its next runs.
	turnAfter = 4
	// turnMaxHold bounds how long a transaction waits at the gate behind a
	// turn.
	turnMaxHold = 2 * time.Second
	// turnLockWait bounds how long the turn's request waits for the
	// transactions in flight ahead of it.
	turnLockWait = 2 * time.Second
	// turnMaxIdle bounds how long a turn's fn may leave its transaction
	// idle between statements while every other writer waits.
	turnMaxIdle = 5 * time.Second
	// lockNotAvailable is the SQLSTATE of a lock wait that ran past
	// lock_timeout.
	lockNotAvailable = "55P03"
)

// gates returns the statements a read-write transaction sends first,
// after BEGIN: those of the gate, for a Backend with busy timeout
// busyTimeout, and those of the turn.
func gates(quotedSchema string, busyTimeout time.Duration) (gate, turn []string) {
	meta := quotedSchema + ".wfstore_meta"
	wait := turnMaxHold
	if busyTimeout > 0 {
		// Half, so that the run past the gate still fits in it.
		wait = min(wait, busyTimeout/2)
	}
	const reset = "SET LOCAL lock_timeout TO DEFAULT"
	gate = []string{
		"SET LOCAL lock_timeout = " + pgMillis(wait),
		"LOCK TABLE " + meta + " IN ROW SHARE MODE",
		reset,
	}
	turn = []string{
		"SET LOCAL idle_in_transaction_session_timeout = " + pgMillis(turnMaxIdle),
		"SET LOCAL lock_timeout = " + pgMillis(turnLockWait),
		"LOCK TABLE " + meta + " IN EXCLUSIVE MODE",
		reset,
	}
	return gate, turn
}

func pgMillis(d time.Duration) string { return fmt.Sprintf("'%dms'", max(d.Milliseconds(), 1)) }

// takesTurn reports whether an Update's run number run (1 for the first),
// elapsed since the Update began, takes the turn.
func takesTurn(run int, elapsed, busyTimeout time.Duration) bool {
	return run > turnAfter || (busyTimeout > 0 && elapsed >= busyTimeout/4)
}

// queueGate adds the turn's statements to b after BEGIN of a read-write
// transaction that takes the turn, and otherwise the gate's, unless the
// Update goes past the gate.
func (t *txn) queueGate(b *pgx.Batch) {
	stmts := t.b.gate
	switch {
	case t.turn:
		stmts = t.b.turn
	case t.pastGate:
		return
	}
	for _, s := range stmts {
		b.Queue(s)
	}
}

// gateFailed notes an error of one of the statements BEGIN carries: a lock
// wait that ran past its lock_timeout there is the gate's or the turn's.
func (t *txn) gateFailed(err error) {
	if pgCode(err) == lockNotAvailable {
		t.gateTimeout = true
	}
}

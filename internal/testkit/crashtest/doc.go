// Package crashtest holds the real-crash test of exactly-once admission: its
// test binary re-executes itself as a child that dispatches on a
// file-backed sqlite store, a bolt store and a postgres schema (when one is
// available), and kills the child with SIGKILL.
//
// Every backend runs in three modes: one activation at a time, batch mode
// with a plain owner called concurrently, and batch mode with a BatchOwner
// that accepts a whole batch in one durable ledger write; in the batch
// modes each child takes a batch size of 8 to 12 and the owner refuses some
// attempts, so batches carry owner failures next to acceptances. Each mode
// takes at least 50 kills per backend (20 in a race build, which looks for
// data races rather than crash states; WFSTORE_CRASH_KILLS sets another
// count), spread over five windows: intents committed with no handoff
// recorded, handoff recorded before the owner works, the owner at work,
// the owner holding a receipt the store has not persisted, and inside a
// commit. For the first four the child stops at a chosen signal (the nth
// in its pass, so a batch kill lands mid-batch, some attempts of the batch
// in different states) and waits there to be killed.
//
// After every kill the parent reopens the store, reconciles with the
// owner's durable ledger (ReconcilePrepared with the owner's receipt
// lookup, then Redispatch) and checks that the window of the kill is found
// among the prepared attempts, that nothing reported never dispatched
// reached the owner and that only recorded handoffs are ambiguous. Every
// pass a child completes must report exactly the owner's refusals as
// OwnerFailed and exactly its acceptances as admitted. At the end it
// checks that every activation has exactly one attempt, that no mutating
// attempt reached the owner twice, that every receipt the owner holds was
// persisted, and that no attempt is left prepared.
package crashtest

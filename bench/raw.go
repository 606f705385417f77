package bench

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"time"

	"github.com/wfstore/wfstore/internal/canonical"

	"github.com/wfstore/wfstore/backend"
	"github.com/wfstore/wfstore/internal/benchdata"
	"github.com/wfstore/wfstore/workflow"
)

// rawAdmit is the raw baseline: the rows one Store admission writes,
// written by three minimal hand-coded transactions on the same Backend, with
// none of the Store's checks (no discovery scan, no limits, no authority,
// no leases, no validation, no Expect): the first reads the run and the
// activation, the other two write blindly from the records the one before
// wrote. It is what any admission over this contract must cost at least,
// so store ÷ raw is the price of the Store's logic.
//
//	intent:  activation pending→running, attempt inserted (handoff pending),
//	         run counters, event attempt_prepared
//	handoff: attempt handoff pending→recorded, run, event dispatch_handed_off
//	         (then the no-op owner would be called)
//	receipt: attempt prepared→admitted with the receipt, run, event attempt_admitted
func rawAdmit(ctx context.Context, b backend.Backend, k backend.ActivationKey, now time.Time) error {
	at := now.UnixMilli()
	ak := backend.AttemptKey{ActivationKey: k, Attempt: 1}
	id := workflow.DispatchIdentity(k.RunID, k.NodeID, k.ActivationID, 1)

	var run backend.Run
	var att backend.Attempt
	err := b.Update(ctx, func(tx backend.Tx) error {
		f, err := tx.Load(ctx, backend.Lookup{Runs: []string{k.RunID}, Activations: []backend.ActivationKey{k}})
		if err != nil {
			return err
		}
		run = f.Runs[k.RunID]
		act := f.Activations[k]
		if act.Status != backend.ActivationPending {
			return errors.New("raw: activation is not pending")
		}
		act.Status, act.Admissible, act.LastAttempt, act.UpdatedMS = backend.ActivationRunning, false, 1, at
		run.AttemptCount++
		run.ActiveCount++
		run.TreeAttemptCount++
		run.UpdatedMS = at
		att = backend.Attempt{Key: ak, Identity: id, Status: backend.AttemptPrepared,
			SideEffect: backend.ReadOnly, Intent: benchdata.Intent, IntentChecksum: workflow.Checksum(benchdata.Intent),
			Handoff: backend.HandoffPending, PreparedMS: at}
		ev := rawEvent(&run, "attempt_prepared", map[string]any{"run_id": k.RunID, "node_id": k.NodeID,
			"activation_id": k.ActivationID, "attempt": 1, "side_effect": workflow.ReadOnly,
			"intent": benchdata.Intent, "prepared_at_ms": at}, at)
		return tx.Apply(ctx, backend.Changes{
			Insert:  backend.Inserts{Attempts: []backend.Attempt{att}, Events: []backend.Event{ev}},
			Replace: backend.Replaces{Runs: []backend.Run{run}, Activations: []backend.Activation{act}},
		})
	})
	if err != nil {
		return err
	}

	// The last two transactions' writes are built before Update, so that a
	// re-run of fn applies the same values.
	// The handoff stores a fresh 128-bit holder token, as the Store's does.
	var token [16]byte
	rand.Read(token[:])
	att.Handoff, att.HandoffToken = backend.HandoffRecorded, hex.EncodeToString(token[:])
	c := attemptStep(att, &run, rawEvent(&run, "dispatch_handed_off", map[string]any{"run_id": k.RunID, "node_id": k.NodeID,
		"activation_id": k.ActivationID, "attempt": 1, "dispatch_identity": id}, at))
	if err := b.Update(ctx, func(tx backend.Tx) error { return tx.Apply(ctx, c) }); err != nil {
		return err
	}

	att.Status, att.Receipt, att.AdmittedMS = backend.AttemptAdmitted, benchdata.Receipt, at
	c = attemptStep(att, &run, rawEvent(&run, "attempt_admitted", map[string]any{"run_id": k.RunID, "node_id": k.NodeID,
		"activation_id": k.ActivationID, "attempt": 1, "dispatch_identity": id,
		"receipt": benchdata.Receipt, "admitted_at_ms": at}, at))
	return b.Update(ctx, func(tx backend.Tx) error { return tx.Apply(ctx, c) })
}

// attemptStep replaces the attempt and the run and appends the event.
func attemptStep(att backend.Attempt, run *backend.Run, ev backend.Event) backend.Changes {
	return backend.Changes{
		Insert:  backend.Inserts{Events: []backend.Event{ev}},
		Replace: backend.Replaces{Runs: []backend.Run{*run}, Attempts: []backend.Attempt{att}},
	}
}

// rawEvent appends the run's next event.
// Its payload is built here from bounded ids and ints: an encoding error
// is a bug in this file.
func rawEvent(run *backend.Run, typ string, payload map[string]any, at int64) backend.Event {
	b, err := canonical.Marshal(payload)
	if err != nil {
		panic(fmt.Sprintf("bench: %s payload: %v", typ, err))
	}
	run.LastEventSeq++
	return backend.Event{RunID: run.ID, Seq: run.LastEventSeq, Type: typ, Payload: b, CreatedMS: at}
}

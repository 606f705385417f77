// Package benchdata writes the runs, pending activations and completed
// history that wfstore's benchmarks admit from and into (package bench, and
// the bbolt adapter's page measurement), so that both measure the same
// shapes. It writes through backend.Tx.Apply in bulk, exactly the records
// the Store would have written one operation at a time.
package benchdata

import (
	"context"
	"encoding/json"
	"fmt"
	"github.com/wfstore/wfstore/internal/canonical"
	"maps"
	"time"

	"github.com/wfstore/wfstore/backend"
	"github.com/wfstore/wfstore/workflow"
)

// PerRun is how many activations a seeded run holds: runs of a hundred
// nodes, like a real workflow, rather than one giant run.
const PerRun = 100

// Limits lets a seeded run admit every activation it holds.
var Limits = workflow.Limits{NodeExecutionCap: 100_000, ConcurrencyCap: 100_000, CycleCap: 100, RetryCap: 3}

// The documents every benchmark admission carries, already canonical.
var (
	Input   = json.RawMessage(`{"input":"bench","n":1}`)
	Intent  = json.RawMessage(`{"op":"bench","target":"noop"}`)
	Receipt = json.RawMessage(`{"accepted":true,"owner":"bench"}`)
	Output  = json.RawMessage(`{"ok":true,"result":"bench history"}`)
)

// SeedRuns creates runs named prefix-0000.. through the Store (one CreateRun
// each) and fills them with n pending activations in bulk: one Update per
// run writes exactly what AddActivation would (the activation, admissible,
// and its activation_created event). It returns the activation keys in the
// order discovery returns them.
func SeedRuns(ctx context.Context, s *workflow.Store, b backend.Backend, prefix string, n, per int, policy *workflow.RetryPolicy, now time.Time) ([]workflow.ActivationKey, error) {
	at := now.UnixMilli()
	var keys []workflow.ActivationKey
	var pol []byte
	recon := backend.RepairRequired
	if policy != nil {
		pol = mustJSON(policy)
		recon = backend.IdempotentReplay
	}
	for r := 0; len(keys) < n; r++ {
		runID := fmt.Sprintf("%s-%05d", prefix, r)
		limits, err := workflow.ExactLimits(Limits)
		if err != nil {
			return nil, err
		}
		if _, err := s.CreateRun(ctx, workflow.NewRun{ID: runID, Limits: limits}, now); err != nil {
			return nil, err
		}
		m := min(per, n-len(keys))
		err = b.Update(ctx, func(tx backend.Tx) error {
			run, err := backend.GetRun(ctx, tx, runID)
			if err != nil {
				return err
			}
			var c backend.Changes
			for i := range m {
				k := backend.ActivationKey{RunID: runID, NodeID: fmt.Sprintf("node-%03d", i), ActivationID: fmt.Sprintf("act-%03d", i)}
				c.Insert.Activations = append(c.Insert.Activations, backend.Activation{
					Key: k, Status: backend.ActivationPending, Admissible: true, Input: Input,
					Effect: backend.ReadOnly, Reconciliation: recon, RetryPolicy: pol,
					CreatedMS: at, UpdatedMS: at,
				})
				run.LastEventSeq++
				c.Insert.Events = append(c.Insert.Events, backend.Event{RunID: runID, Seq: run.LastEventSeq, Type: "activation_created",
					Payload: mustJSON(map[string]any{
						"run_id": runID, "node_id": k.NodeID, "activation_id": k.ActivationID, "generation": 0,
					}), CreatedMS: at})
			}
			c.Replace.Runs = []backend.Run{run}
			return tx.Apply(ctx, c)
		})
		if err != nil {
			return nil, err
		}
		for i := range m {
			keys = append(keys, workflow.ActivationKey{RunID: runID, NodeID: fmt.Sprintf("node-%03d", i), ActivationID: fmt.Sprintf("act-%03d", i)})
		}
	}
	return keys, nil
}

// HistoryBatch is how many historical runs one bulk Update writes
// (PerRun attempts and about 7 rows per attempt each).
const HistoryBatch = 20

// LoadHistory writes attempts historical attempts in completed runs of
// PerRun activations, shaped as the Store leaves them after a successful
// admission and completion: run (completed, counters), activation
// (completed, output), attempt (succeeded, handoff recorded, receipt) and
// the five events of its life. Each attempt has its own time, one
// millisecond after the one before, the last one a millisecond before now,
// so the indexes ordered by time fill in time order as in a store that
// admitted them one by one. Runs are named prefix-NNNNNNN from first on;
// it returns the next free run number. Writes go through backend.Tx.Apply
// in large transactions (HistoryBatch runs each).
func LoadHistory(ctx context.Context, b backend.Backend, prefix string, first, attempts int, now time.Time, progress func(done int)) (int, error) {
	at := now.UnixMilli()
	intentSum := workflow.Checksum(Intent)
	done := 0
	r := first
	for done < attempts {
		var c backend.Changes
		for n := 0; n < HistoryBatch && done < attempts; n++ {
			runID := fmt.Sprintf("%s-%07d", prefix, r)
			r++
			// Attempt g of this load happened at now - (attempts - g) ms:
			// times grow through the history, one attempt per millisecond,
			// as in a store that admitted them one after another.
			t := at - int64(attempts-done)
			run := backend.Run{ID: runID, RootID: runID, Depth: 1, Status: backend.RunCompleted,
				Limits: backend.Limits(Limits), CreatedMS: t, UpdatedMS: t}
			ev := func(typ string, payload map[string]any) {
				run.LastEventSeq++
				c.Insert.Events = append(c.Insert.Events, backend.Event{RunID: runID, Seq: run.LastEventSeq, Type: typ,
					Payload: mustJSON(payload), CreatedMS: t})
			}
			ev("run_created", map[string]any{"run_id": runID})
			m := min(PerRun, attempts-done)
			for i := range m {
				t = at - int64(attempts-done-i)
				run.UpdatedMS = t
				k := backend.ActivationKey{RunID: runID, NodeID: fmt.Sprintf("node-%03d", i), ActivationID: fmt.Sprintf("act-%03d", i)}
				id := workflow.DispatchIdentity(k.RunID, k.NodeID, k.ActivationID, 1)
				c.Insert.Activations = append(c.Insert.Activations, backend.Activation{Key: k, Status: backend.ActivationCompleted, Input: Input,
					Output: Output, Effect: backend.ReadOnly, Reconciliation: backend.RepairRequired,
					LastAttempt: 1, CreatedMS: t, UpdatedMS: t})
				c.Insert.Attempts = append(c.Insert.Attempts, backend.Attempt{Key: backend.AttemptKey{ActivationKey: k, Attempt: 1}, Identity: id,
					Status: backend.AttemptSucceeded, SideEffect: backend.ReadOnly, Intent: Intent,
					IntentChecksum: intentSum, Receipt: Receipt, Handoff: backend.HandoffRecorded,
					PreparedMS: t, AdmittedMS: t, TerminalMS: t})
				base := map[string]any{"run_id": runID, "node_id": k.NodeID, "activation_id": k.ActivationID}
				ev("activation_created", base)
				names := func(extra map[string]any) map[string]any {
					out := map[string]any{"attempt": 1, "dispatch_identity": id}
					maps.Copy(out, base)
					maps.Copy(out, extra)
					return out
				}
				ev("attempt_prepared", names(map[string]any{"intent": Intent}))
				ev("dispatch_handed_off", names(nil))
				ev("attempt_admitted", names(map[string]any{"receipt": Receipt}))
				ev("attempt_succeeded", names(map[string]any{"output": Output}))
			}
			run.AttemptCount, run.TreeAttemptCount = int64(m), int64(m)
			c.Insert.Runs = append(c.Insert.Runs, run)
			done += m
		}
		if err := b.Update(ctx, func(tx backend.Tx) error { return tx.Apply(ctx, c) }); err != nil {
			return r, fmt.Errorf("bench: load history: %w", err)
		}
		if progress != nil {
			progress(done)
		}
	}
	return r, nil
}

// mustJSON encodes a bench payload built here from bounded ids and ints;
// an error is a bug in this file.
func mustJSON(v any) []byte {
	b, err := canonical.Marshal(v)
	if err != nil {
		panic(fmt.Sprintf("benchdata: %T: %v", v, err))
	}
	return b
}

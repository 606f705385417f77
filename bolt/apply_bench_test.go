package bolt

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/wfstore/wfstore/backend"
)

// admissionChanges is shaped like one admission: a new activation, its
// attempt (identity-indexed), a lease and an event, and the run's counters
// replaced.
func admissionChanges(run backend.Run, i int) backend.Changes {
	act := activation(actKey(run.ID, "node", fmt.Sprintf("act-%06d", i)), false)
	att := attempt(attKey(run.ID, "node", act.Key.ActivationID, 1), fmt.Sprintf("%s/%d", run.ID, i), backend.AttemptAdmitted, int64(1_700_000_000_000+i))
	run.LastEventSeq, run.AttemptCount = int64(i), int64(i)
	return backend.Changes{
		Insert: backend.Inserts{
			Activations: []backend.Activation{act},
			Attempts:    []backend.Attempt{att},
			Leases:      []backend.Lease{lease(att.Key, "res", backend.LeaseWrite, 0)},
			Events:      []backend.Event{{RunID: run.ID, Seq: int64(i), Type: "admitted", Payload: []byte(`{}`), CreatedMS: 1}},
		},
		Replace: backend.Replaces{Runs: []backend.Run{run}},
	}
}

var errRollBack = errors.New("roll back")

// BenchmarkApply is the cost of Tx.Apply of one admission, relaxed
// durability: "commit" commits each (bbolt's page writes included),
// "rolled-back" returns an error from fn so that only Apply's reads and
// writes into the transaction are measured. The store holds 1000 earlier
// admissions.
func BenchmarkApply(b *testing.B) {
	ctx := context.Background()
	for _, mode := range []string{"commit", "rolled-back"} {
		b.Run(mode, func(b *testing.B) {
			be := openTemp(b)
			run := backend.Run{ID: "run-bench", RootID: "run-bench", Status: backend.RunRunning}
			apply(b, be, insertRuns(run))
			for i := range 1000 {
				apply(b, be, admissionChanges(run, i))
			}
			b.ReportAllocs()
			i := 1000
			for b.Loop() {
				c := admissionChanges(run, i)
				err := be.Update(ctx, func(tx backend.Tx) error {
					if err := tx.Apply(ctx, c); err != nil {
						return err
					}
					if mode == "rolled-back" {
						return errRollBack
					}
					return nil
				})
				if mode == "rolled-back" && errors.Is(err, errRollBack) {
					err = nil
				} else {
					i++
				}
				if err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

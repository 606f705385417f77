package conformance

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/wfstore/wfstore/backend"
)

// Racing inserts of keys that no unique index guards besides the primary
// key: runs and activations. Two instances over one store (goroutines of
// one instance where the adapter is not MultiInstance) insert the same new
// key, each with its own values, at the same moment: exactly one Update
// commits, every other fails with ErrConflict, and the stored record is
// the winner's. In the "read first" form each racer first loads the key,
// finds it absent, and inserts it in the same transaction: an adapter that
// does not make the absence it read part of what its commit checks would
// let a second racer overwrite the first racer's record.

func insertRaceUnindexedCases() []testCase {
	return []testCase{
		{Name: "racing_inserts_of_one_run_across_instances_admit_exactly_one", Run: func(e *env) { testUnindexedInsertRace(e, "run", false) }},
		{Name: "racing_inserts_of_one_activation_across_instances_admit_exactly_one", Run: func(e *env) { testUnindexedInsertRace(e, "activation", false) }},
		{Name: "racing_read_then_insert_of_one_run_across_instances_admit_exactly_one", Run: func(e *env) { testUnindexedInsertRace(e, "run", true) }},
		{Name: "racing_read_then_insert_of_one_activation_across_instances_admit_exactly_one", Run: func(e *env) { testUnindexedInsertRace(e, "activation", true) }},
	}
}

// racerRecord returns racer i's version of the record of kind at key
// (run id, or activation id in run "race-run"), and the Lookup of it.
func racerRecord(kind, key string, i int) (backend.Changes, backend.Lookup) {
	tag := fmt.Sprintf("racer %d", i)
	if kind == "run" {
		r := fullRun(key)
		r.Metadata = js(tag)
		r.CreatedMS += int64(i)
		return ins(r), backend.Lookup{Runs: []string{key}}
	}
	a := fullActivation(akey("race-run", "node", key))
	a.Input = js(tag)
	a.Generation += int64(i)
	return ins(a), backend.Lookup{Activations: []backend.ActivationKey{a.Key}}
}

// raceInsertOnce runs one racer's Update (retrying ErrBusy, which did not
// commit); it reports whether this racer's insert committed.
func raceInsertOnce(ctx context.Context, b backend.Backend, c backend.Changes, l backend.Lookup, readFirst bool) (bool, error) {
	for {
		err := b.Update(ctx, func(tx backend.Tx) error {
			if readFirst {
				f, err := tx.Load(ctx, l)
				if err != nil {
					return err
				}
				if len(f.Runs)+len(f.Activations) > 0 {
					return fmt.Errorf("racer found the key stored: %w", backend.ErrConflict)
				}
			}
			return tx.Apply(ctx, c)
		})
		switch {
		case err == nil:
			return true, nil
		case errors.Is(err, backend.ErrConflict):
			return false, nil
		case errors.Is(err, backend.ErrBusy) && ctx.Err() == nil:
			continue
		default:
			return false, err
		}
	}
}

func testUnindexedInsertRace(e *env, kind string, readFirst bool) {
	bs := []backend.Backend{e.B}
	if e.Caps.MultiInstance {
		bs = append(bs, e.Open())
	}
	const racers, rounds = 4, 15
	for round := range rounds {
		key := fmt.Sprintf("race-%s-%d-%v", kind, round, readFirst)
		start := make(chan struct{})
		var wg sync.WaitGroup
		won := make([]bool, racers)
		errs := make([]error, racers)
		for i := range racers {
			b := bs[i%len(bs)]
			c, l := racerRecord(kind, key, i)
			wg.Go(func() {
				<-start
				won[i], errs[i] = raceInsertOnce(e.Ctx, b, c, l, readFirst)
			})
		}
		close(start)
		wg.Wait()
		winner := -1
		for i := range racers {
			if errs[i] != nil {
				e.T.Fatalf("round %d: racer %d: %v", round, i, errs[i])
			}
			if won[i] {
				if winner >= 0 {
					e.T.Fatalf("round %d: racers %d and %d both inserted %s %q: exactly one Insert of a new key may commit",
						round, winner, i, kind, key)
				}
				winner = i
			}
		}
		if winner < 0 {
			e.T.Fatalf("round %d: no racer inserted %s %q", round, kind, key)
		}
		want, l := racerRecord(kind, key, winner)
		for j, b := range bs {
			f := e.load(b, l)
			var got, exp any
			if kind == "run" {
				got, exp = f.Runs[key], want.Insert.Runs[0]
			} else {
				got, exp = f.Activations[want.Insert.Activations[0].Key], want.Insert.Activations[0]
			}
			if !e.equal(fmt.Sprintf("round %d: instance %d: stored %s is the winner's (racer %d)", round, j, kind, winner), exp, got) {
				e.T.FailNow()
			}
		}
	}
}

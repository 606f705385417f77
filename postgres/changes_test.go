package postgres_test

import (
	"context"
	"fmt"
	"math"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/wfstore/wfstore/backend"
	"github.com/wfstore/wfstore/postgres"
)

// bothForms runs f on a fresh Backend that writes every slice of two or
// more records with one many-row statement, and on one that writes every
// slice one statement per record.
func bothForms(t *testing.T, f func(t *testing.T, b *postgres.Backend)) {
	t.Parallel()
	for name, from := range map[string]int{"many-row": 2, "one-row": math.MaxInt} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			b, _, _ := openFresh(t, postgres.WithManyRowsFrom(from))
			f(t, b)
		})
	}
}

// manyRecords returns n records of every kind, all in run "run" (the
// attempts' identities distinct), as one Inserts.
func manyRecords(n int) backend.Inserts {
	var in backend.Inserts
	for i := 0; i < n; i++ {
		id := fmt.Sprint("r", i)
		ak := backend.ActivationKey{RunID: "run", NodeID: "n", ActivationID: id}
		tk := backend.AttemptKey{ActivationKey: ak, Attempt: 1}
		in.Runs = append(in.Runs, backend.Run{ID: id, Metadata: []byte(id)})
		in.Links = append(in.Links, backend.RunLink{ChildRunID: id, RootRunID: "run", Parent: tk})
		in.Activations = append(in.Activations, backend.Activation{Key: ak, Input: []byte(id),
			Claims: []backend.ResourceClaim{{Resource: id, Mode: backend.LeaseRead}}})
		in.Groups = append(in.Groups, backend.FanOutGroup{Controller: ak, Size: int64(i)})
		in.Attempts = append(in.Attempts, backend.Attempt{Key: tk, Identity: "ident-" + id, Intent: []byte(id)})
		in.Leases = append(in.Leases, backend.Lease{Key: backend.LeaseKey{AttemptKey: tk, Resource: id, Mode: backend.LeaseWrite}})
		in.Schedules = append(in.Schedules, backend.RetrySchedule{Key: ak, DueMS: int64(i)})
		in.Events = append(in.Events, backend.Event{RunID: "run", Seq: int64(i + 1), Payload: []byte(id)})
	}
	return in
}

// lookupOf names every record of in.
func lookupOf(in backend.Inserts) backend.Lookup {
	var l backend.Lookup
	for _, r := range in.Runs {
		l.Runs = append(l.Runs, r.ID)
	}
	for _, r := range in.Links {
		l.Links = append(l.Links, r.ChildRunID)
	}
	for _, r := range in.Activations {
		l.Activations = append(l.Activations, r.Key)
	}
	for _, r := range in.Groups {
		l.Groups = append(l.Groups, r.Controller)
	}
	for _, r := range in.Attempts {
		l.Attempts = append(l.Attempts, r.Key)
	}
	for _, r := range in.Leases {
		l.Leases = append(l.Leases, r.Key)
	}
	for _, r := range in.Schedules {
		l.Schedules = append(l.Schedules, r.Key)
	}
	return l
}

// events reads a run's events.
func events(t *testing.T, b backend.Backend, runID string) []backend.Event {
	t.Helper()
	var evs []backend.Event
	view(t, b, func(r backend.ReadTx) error {
		var err error
		evs, err = r.Events(context.Background(), backend.EventQuery{RunID: runID, Limit: 1000})
		return err
	})
	return evs
}

// failWith applies c in an Update whose fn returns Apply's error, or (read)
// the error of a Load after it, and checks the error.
func failWith(t *testing.T, b backend.Backend, c backend.Changes, read bool, want error, msg string) {
	t.Helper()
	err := b.Update(ctxT(t), func(tx backend.Tx) error {
		if err := tx.Apply(context.Background(), c); err != nil {
			return err
		}
		if read {
			_, err := tx.Load(context.Background(), backend.Lookup{Runs: []string{"r0"}})
			require.ErrorIs(t, err, want, "%s: the Load carrying the writes", msg)
			return err
		}
		return nil
	})
	require.ErrorIs(t, err, want, msg)
}

// Every slice of Changes longer than SmallSlice is one statement
// (Replace.Attempts aside unless their Expects show no Identity changes,
// see kind.uniqueNonKey and identitiesKept), a shorter one a
// statement per record, and a write-only Update of many rows of every kind
// is still one round trip; the records read back exactly.
func TestManyRowSlices(t *testing.T) {
	t.Parallel()
	b, _, _ := openFresh(t)
	require.Len(t, b.ChangesSQL(backend.Changes{Insert: manyRecords(postgres.SmallSlice)}), 8*postgres.SmallSlice,
		"short slices: one statement per record")
	in := manyRecords(postgres.SmallSlice + 1)
	c := backend.Changes{Insert: in}
	require.Len(t, b.ChangesSQL(c), 8, "one statement per slice")
	before := b.StatsForTest().RoundTrips
	apply(t, b, c)
	require.Equal(t, int64(1), b.StatsForTest().RoundTrips-before)
	f := load(t, b, lookupOf(in))
	for _, r := range in.Runs {
		require.Equal(t, r, f.Runs[r.ID])
	}
	for _, r := range in.Links {
		require.Equal(t, r, f.Links[r.ChildRunID])
	}
	for _, r := range in.Activations {
		require.Equal(t, r, f.Activations[r.Key])
	}
	for _, r := range in.Groups {
		require.Equal(t, r, f.Groups[r.Controller])
	}
	for _, r := range in.Attempts {
		require.Equal(t, r, f.Attempts[r.Key])
	}
	for _, r := range in.Leases {
		require.Equal(t, r, f.Leases[r.Key])
	}
	for _, r := range in.Schedules {
		require.Equal(t, r, f.Schedules[r.Key])
	}
	require.Equal(t, in.Events, events(t, b, "run"))

	// Replace every slice.
	var rp backend.Replaces
	for i := range in.Runs {
		r := in.Runs[i]
		r.AttemptCount = 7
		rp.Runs = append(rp.Runs, r)
		a := in.Activations[i]
		a.Claims, a.Output = nil, []byte("out")
		rp.Activations = append(rp.Activations, a)
		g := in.Groups[i]
		g.Settled = 3
		rp.Groups = append(rp.Groups, g)
		at := in.Attempts[i]
		at.Status = backend.AttemptSucceeded
		rp.Attempts = append(rp.Attempts, at)
		l := in.Leases[i]
		l.ReleasedMS = 9
		rp.Leases = append(rp.Leases, l)
		s := in.Schedules[i]
		s.DueMS = 100
		rp.Schedules = append(rp.Schedules, s)
	}
	c = backend.Changes{Replace: rp, Expect: backend.Expected{Runs: in.Runs, Activations: in.Activations}}
	require.Len(t, b.ChangesSQL(c), 2+5+len(rp.Attempts), "one statement per slice, one per attempt Replace")
	// With every replaced attempt expected with the Identity it keeps, the
	// attempt Replaces are one statement too.
	c.Expect.Attempts = in.Attempts
	require.Len(t, b.ChangesSQL(c), 3+6, "one statement per slice")
	apply(t, b, c)
	f = load(t, b, lookupOf(in))
	for i := range in.Runs {
		require.Equal(t, rp.Runs[i], f.Runs[rp.Runs[i].ID])
		require.Equal(t, rp.Activations[i], f.Activations[rp.Activations[i].Key])
		require.Equal(t, rp.Groups[i], f.Groups[rp.Groups[i].Controller])
		require.Equal(t, rp.Attempts[i], f.Attempts[rp.Attempts[i].Key])
		require.Equal(t, rp.Leases[i], f.Leases[rp.Leases[i].Key])
		require.Equal(t, rp.Schedules[i], f.Schedules[rp.Schedules[i].Key])
	}
	// The old values are no longer the expected ones.
	failWith(t, b, backend.Changes{Expect: backend.Expected{Activations: in.Activations}}, false, backend.ErrChanged, "stale expect")
	apply(t, b, backend.Changes{Expect: backend.Expected{Runs: rp.Runs, Activations: rp.Activations, Attempts: rp.Attempts}})

	// Delete every deletable slice.
	var del backend.Deletes
	for i := range in.Runs {
		del.Events = append(del.Events, in.Events[i].Key())
		del.Schedules = append(del.Schedules, in.Schedules[i].Key)
		del.Leases = append(del.Leases, in.Leases[i].Key)
		del.Attempts = append(del.Attempts, in.Attempts[i].Key)
	}
	require.Len(t, b.ChangesSQL(backend.Changes{Delete: del}), 4)
	apply(t, b, backend.Changes{Delete: del})
	f = load(t, b, lookupOf(in))
	require.Empty(t, f.Attempts)
	require.Empty(t, f.Leases)
	require.Empty(t, f.Schedules)
	require.Empty(t, events(t, b, "run"))
	require.Len(t, f.Runs, len(in.Runs), "runs are not deletable and were not deleted")
}

// One missing key in a Replace or Delete slice (either form) fails it with
// ErrNotFound, from the Load carrying it or from the commit, and nothing
// of the Update is applied: not the slice's other rows, nor the other
// slices.
func TestSliceMissingKeyIsNotFound(t *testing.T) {
	bothForms(t, func(t *testing.T, b *postgres.Backend) {
		in := manyRecords(3)
		apply(t, b, backend.Changes{Insert: in})
		missing := manyRecords(5) // [3] and [4] are not stored
		changed := func(rs backend.Replaces) backend.Changes {
			for i := range rs.Runs {
				rs.Runs[i].AttemptCount = 99
			}
			for i := range rs.Activations {
				rs.Activations[i].Generation = 99
			}
			for i := range rs.Groups {
				rs.Groups[i].Promoted = 99
			}
			for i := range rs.Attempts {
				rs.Attempts[i].PreparedMS = 99
			}
			for i := range rs.Leases {
				rs.Leases[i].AcquiredMS = 99
			}
			for i := range rs.Schedules {
				rs.Schedules[i].BackoffMS = 99
			}
			// Another slice that would succeed on its own.
			return backend.Changes{Replace: rs, Insert: backend.Inserts{Events: []backend.Event{{RunID: "run", Seq: 100}}}}
		}
		cases := map[string]backend.Changes{
			"runs":        changed(backend.Replaces{Runs: []backend.Run{in.Runs[0], missing.Runs[3], in.Runs[1]}}),
			"activations": changed(backend.Replaces{Activations: []backend.Activation{in.Activations[0], in.Activations[1], missing.Activations[4]}}),
			"groups":      changed(backend.Replaces{Groups: []backend.FanOutGroup{missing.Groups[3], in.Groups[0]}}),
			"attempts":    changed(backend.Replaces{Attempts: []backend.Attempt{in.Attempts[0], missing.Attempts[3]}}),
			"leases":      changed(backend.Replaces{Leases: []backend.Lease{in.Leases[2], in.Leases[1], missing.Leases[3]}}),
			"schedules":   changed(backend.Replaces{Schedules: []backend.RetrySchedule{in.Schedules[0], missing.Schedules[4], in.Schedules[2]}}),
			"delete-events": {Delete: backend.Deletes{Events: []backend.EventKey{in.Events[0].Key(), missing.Events[3].Key()}},
				Insert: backend.Inserts{Runs: runs("new")}},
			"delete-schedules": {Delete: backend.Deletes{Schedules: []backend.ActivationKey{in.Schedules[0].Key, missing.Schedules[3].Key}},
				Replace: backend.Replaces{Runs: in.Runs}},
			"delete-leases": {Delete: backend.Deletes{Leases: []backend.LeaseKey{missing.Leases[4].Key, in.Leases[0].Key}},
				Insert: backend.Inserts{Runs: runs("new")}},
			"delete-attempts": {Delete: backend.Deletes{Attempts: []backend.AttemptKey{in.Attempts[1].Key, in.Attempts[2].Key, missing.Attempts[3].Key}},
				Insert: backend.Inserts{Runs: runs("new")}},
			// Deleting one key twice fails as the second Delete one by one would.
			"delete-twice": {Delete: backend.Deletes{Events: []backend.EventKey{in.Events[0].Key(), in.Events[0].Key()}}},
		}
		for name, c := range cases {
			for _, read := range []bool{false, true} {
				msg := fmt.Sprintf("%s (read %v)", name, read)
				failWith(t, b, c, read, backend.ErrNotFound, msg)
				f := load(t, b, lookupOf(in))
				require.Len(t, f.Runs, len(in.Runs), msg)
				for _, r := range in.Runs {
					require.Equal(t, r, f.Runs[r.ID], msg)
				}
				for _, r := range in.Activations {
					require.Equal(t, r, f.Activations[r.Key], msg)
				}
				for _, r := range in.Groups {
					require.Equal(t, r, f.Groups[r.Controller], msg)
				}
				for _, r := range in.Attempts {
					require.Equal(t, r, f.Attempts[r.Key], msg)
				}
				for _, r := range in.Leases {
					require.Equal(t, r, f.Leases[r.Key], msg)
				}
				for _, r := range in.Schedules {
					require.Equal(t, r, f.Schedules[r.Key], msg)
				}
				require.Equal(t, in.Events, events(t, b, "run"), msg)
				require.Empty(t, load(t, b, backend.Lookup{Runs: []string{"new"}}).Runs, msg)
			}
		}
	})
}

// An Insert slice (either form) one of whose keys (or attempt
// Identities) is stored, or that names a key or Identity twice, fails with
// ErrConflict and applies nothing.
func TestSliceDuplicateIsConflict(t *testing.T) {
	bothForms(t, func(t *testing.T, b *postgres.Backend) {
		in := manyRecords(2)
		apply(t, b, backend.Changes{Insert: in})
		fresh := manyRecords(5) // [2:] are new
		identityTaken := fresh.Attempts[3]
		identityTaken.Identity = in.Attempts[0].Identity
		identityTwice := fresh.Attempts[4]
		identityTwice.Identity = fresh.Attempts[3].Identity
		cases := map[string]backend.Inserts{
			"runs":              {Runs: []backend.Run{fresh.Runs[2], in.Runs[1]}},
			"runs-twice":        {Runs: []backend.Run{fresh.Runs[2], fresh.Runs[3], fresh.Runs[2]}},
			"links":             {Links: []backend.RunLink{fresh.Links[3], in.Links[0], fresh.Links[4]}},
			"activations":       {Activations: []backend.Activation{in.Activations[0], fresh.Activations[2]}},
			"activations-twice": {Activations: []backend.Activation{fresh.Activations[2], fresh.Activations[2]}},
			"groups":            {Groups: []backend.FanOutGroup{fresh.Groups[2], fresh.Groups[3], in.Groups[1]}},
			"attempts":          {Attempts: []backend.Attempt{fresh.Attempts[2], in.Attempts[1]}},
			"identity-taken":    {Attempts: []backend.Attempt{fresh.Attempts[2], identityTaken}},
			"identity-twice":    {Attempts: []backend.Attempt{fresh.Attempts[3], identityTwice}},
			"leases":            {Leases: []backend.Lease{in.Leases[0], fresh.Leases[4]}},
			"schedules":         {Schedules: []backend.RetrySchedule{fresh.Schedules[2], in.Schedules[0]}},
			"events":            {Events: []backend.Event{fresh.Events[3], fresh.Events[2], in.Events[1]}},
			"events-twice":      {Events: []backend.Event{fresh.Events[3], fresh.Events[3]}},
		}
		for name, ins := range cases {
			if ins.Runs == nil {
				ins.Runs = runs("new") // a slice that succeeds alone, written first
			}
			for _, read := range []bool{false, true} {
				msg := fmt.Sprintf("%s (read %v)", name, read)
				failWith(t, b, backend.Changes{Insert: ins}, read, backend.ErrConflict, msg)
				f := load(t, b, lookupOf(fresh))
				require.Len(t, f.Runs, 2, msg)
				require.Len(t, f.Links, 2, msg)
				require.Len(t, f.Activations, 2, msg)
				require.Len(t, f.Groups, 2, msg)
				require.Len(t, f.Attempts, 2, msg)
				require.Len(t, f.Leases, 2, msg)
				require.Len(t, f.Schedules, 2, msg)
				require.Equal(t, in.Events, events(t, b, "run"), msg)
				require.Empty(t, load(t, b, backend.Lookup{Runs: []string{"new"}}).Runs, msg)
			}
		}
	})
}

// Changes applies in its fixed order, whatever order its fields are
// written in: a record deleted and inserted again in one Changes is the
// inserted one; one inserted and replaced is the replacement; Expect sees
// the records as they were before the deletes; a Replace slice naming a
// key twice leaves the last.
func TestChangesOrder(t *testing.T) {
	bothForms(t, func(t *testing.T, b *postgres.Backend) {
		in := manyRecords(2)
		apply(t, b, backend.Changes{Insert: in})

		// Delete + Insert of one key, with an Expect of the deleted attempt.
		att := in.Attempts[0]
		att2 := att
		att2.Intent, att2.Status = []byte("again"), backend.AttemptPrepared // same key, same Identity
		lease2 := in.Leases[0]
		lease2.AcquiredMS = 5
		sched2 := in.Schedules[0]
		sched2.DueMS = 55
		ev2 := in.Events[0]
		ev2.Payload = []byte("again")
		apply(t, b, backend.Changes{
			Insert: backend.Inserts{Attempts: []backend.Attempt{att2}, Leases: []backend.Lease{lease2},
				Schedules: []backend.RetrySchedule{sched2}, Events: []backend.Event{ev2}},
			Delete: backend.Deletes{Attempts: []backend.AttemptKey{att.Key}, Leases: []backend.LeaseKey{lease2.Key},
				Schedules: []backend.ActivationKey{sched2.Key}, Events: []backend.EventKey{ev2.Key()}},
			Expect: backend.Expected{Attempts: []backend.Attempt{att}},
		})
		f := load(t, b, backend.Lookup{Attempts: []backend.AttemptKey{att.Key}, Identities: []string{att.Identity},
			Leases: []backend.LeaseKey{lease2.Key}, Schedules: []backend.ActivationKey{sched2.Key}})
		require.Equal(t, att2, f.Attempts[att.Key])
		require.Equal(t, att2, f.Identities[att.Identity])
		require.Equal(t, lease2, f.Leases[lease2.Key])
		require.Equal(t, sched2, f.Schedules[sched2.Key])
		require.Equal(t, []backend.Event{ev2, in.Events[1]}, events(t, b, "run"))

		// The same with many-row slices.
		apply(t, b, backend.Changes{
			Insert: backend.Inserts{Attempts: in.Attempts, Events: in.Events},
			Delete: backend.Deletes{Attempts: []backend.AttemptKey{in.Attempts[0].Key, in.Attempts[1].Key},
				Events: []backend.EventKey{in.Events[0].Key(), in.Events[1].Key()}},
		})
		f = load(t, b, backend.Lookup{Attempts: []backend.AttemptKey{in.Attempts[0].Key, in.Attempts[1].Key}})
		require.Equal(t, in.Attempts[0], f.Attempts[in.Attempts[0].Key])
		require.Equal(t, in.Attempts[1], f.Attempts[in.Attempts[1].Key])
		require.Equal(t, in.Events, events(t, b, "run"))

		// Insert + Replace of one key, for every kind that has both, one row
		// and many rows.
		for _, n := range []int{1, 3} {
			fresh := manyRecords(n)
			for i := range fresh.Runs {
				fresh.Runs[i].ID += fmt.Sprint("-", n)
				fresh.Activations[i].Key.RunID = fmt.Sprint("run-", n)
				fresh.Groups[i].Controller.RunID = fmt.Sprint("run-", n)
				fresh.Attempts[i].Key.RunID = fmt.Sprint("run-", n)
				fresh.Attempts[i].Identity += fmt.Sprint("-", n)
				fresh.Leases[i].Key.RunID = fmt.Sprint("run-", n)
				fresh.Schedules[i].Key.RunID = fmt.Sprint("run-", n)
			}
			var rp backend.Replaces
			for i := range fresh.Runs {
				r := fresh.Runs[i]
				r.Status = backend.RunCompleted
				rp.Runs = append(rp.Runs, r)
				a := fresh.Activations[i]
				a.Status = backend.ActivationCompleted
				rp.Activations = append(rp.Activations, a)
				g := fresh.Groups[i]
				g.Retiring = true
				rp.Groups = append(rp.Groups, g)
				at := fresh.Attempts[i]
				at.Status = backend.AttemptSucceeded
				rp.Attempts = append(rp.Attempts, at)
				l := fresh.Leases[i]
				l.ReleasedMS = 3
				rp.Leases = append(rp.Leases, l)
				s := fresh.Schedules[i]
				s.FailureKind = "k"
				rp.Schedules = append(rp.Schedules, s)
			}
			apply(t, b, backend.Changes{Replace: rp, Insert: backend.Inserts{Runs: fresh.Runs, Activations: fresh.Activations,
				Groups: fresh.Groups, Attempts: fresh.Attempts, Leases: fresh.Leases, Schedules: fresh.Schedules}})
			f := load(t, b, lookupOf(fresh))
			for i := range fresh.Runs {
				require.Equal(t, rp.Runs[i], f.Runs[rp.Runs[i].ID])
				require.Equal(t, rp.Activations[i], f.Activations[rp.Activations[i].Key])
				require.Equal(t, rp.Groups[i], f.Groups[rp.Groups[i].Controller])
				require.Equal(t, rp.Attempts[i], f.Attempts[rp.Attempts[i].Key])
				require.Equal(t, rp.Leases[i], f.Leases[rp.Leases[i].Key])
				require.Equal(t, rp.Schedules[i], f.Schedules[rp.Schedules[i].Key])
			}
		}

		// A Replace slice naming a key twice leaves the last Replace; an
		// Expect slice naming it twice with the stored value holds.
		r1, r2 := in.Runs[0], in.Runs[0]
		r1.AttemptCount, r2.AttemptCount = 1, 2
		a1, a2 := in.Activations[0], in.Activations[0]
		a1.Generation, a2.Generation = 1, 2
		apply(t, b, backend.Changes{Replace: backend.Replaces{Runs: []backend.Run{r1, in.Runs[1], r2},
			Activations: []backend.Activation{a2, in.Activations[1], a1}}})
		f = load(t, b, backend.Lookup{Runs: []string{r1.ID}, Activations: []backend.ActivationKey{a1.Key}})
		require.Equal(t, r2, f.Runs[r1.ID])
		require.Equal(t, a1, f.Activations[a1.Key])
		apply(t, b, backend.Changes{Expect: backend.Expected{Runs: []backend.Run{r2, r2}}})
		failWith(t, b, backend.Changes{Expect: backend.Expected{Runs: []backend.Run{r2, r1}}}, false, backend.ErrChanged, "expect one key as two values")
	})
}

// A slice of attempt Replaces is applied in slice order even when it moves
// an Identity from one attempt to another: PostgreSQL checks the unique
// Identity row by row, so the adapter writes this slice one statement per
// attempt.
func TestAttemptReplacesMoveIdentitiesInOrder(t *testing.T) {
	bothForms(t, func(t *testing.T, b *postgres.Backend) {
		in := manyRecords(2)
		apply(t, b, backend.Changes{Insert: backend.Inserts{Attempts: in.Attempts}})
		a, c := in.Attempts[0], in.Attempts[1]
		// c gives its Identity up, then a takes it: fine one by one.
		c2, a2 := c, a
		c2.Identity, a2.Identity = "fresh", c.Identity
		// The other order is a conflict one by one: a takes c's Identity
		// while c still holds it.
		failWith(t, b, backend.Changes{Replace: backend.Replaces{Attempts: []backend.Attempt{a2, c2}}}, false, backend.ErrConflict, "a before c")
		apply(t, b, backend.Changes{Replace: backend.Replaces{Attempts: []backend.Attempt{c2, a2}}})
		f := load(t, b, backend.Lookup{Identities: []string{"fresh", c.Identity, a.Identity}})
		require.Equal(t, c2, f.Identities["fresh"])
		require.Equal(t, a2, f.Identities[c.Identity])
		require.NotContains(t, f.Identities, a.Identity)
	})
}

// The same with the old attempts expected in the same Changes: Expects
// that show an Identity change keep the slice one statement per attempt,
// and the outcome is still that of slice order.
func TestExpectedAttemptReplacesMoveIdentitiesInOrder(t *testing.T) {
	bothForms(t, func(t *testing.T, b *postgres.Backend) {
		in := manyRecords(8)
		apply(t, b, backend.Changes{Insert: backend.Inserts{Attempts: in.Attempts}})
		next := make([]backend.Attempt, len(in.Attempts))
		for i, a := range in.Attempts {
			a.Status = backend.AttemptAdmitted
			next[i] = a
		}
		a, c := 1, 6
		next[c].Identity, next[a].Identity = "fresh", in.Attempts[c].Identity
		exp := backend.Expected{Attempts: in.Attempts}
		require.Len(t, b.ChangesSQL(backend.Changes{Expect: exp, Replace: backend.Replaces{Attempts: next}}),
			len(b.ChangesSQL(backend.Changes{Expect: exp}))+len(next), "an Identity changes: one statement per attempt Replace")
		failWith(t, b, backend.Changes{Expect: exp, Replace: backend.Replaces{Attempts: next}}, false, backend.ErrConflict, "a before c")
		swapped := append([]backend.Attempt{}, next...)
		swapped[a], swapped[c] = next[c], next[a]
		apply(t, b, backend.Changes{Expect: exp, Replace: backend.Replaces{Attempts: swapped}})
		f := load(t, b, lookupOf(backend.Inserts{Attempts: in.Attempts}))
		for _, w := range next {
			require.Equal(t, w, f.Attempts[w.Key])
		}
	})
}

// What one Apply of a transaction proved about its attempts' Identities
// carries to the next Apply: attempts inserted or expected by one Apply and
// replaced by the next keep their values exactly, and Identities moved
// between them still follow slice order.
func TestAttemptReplacesAfterAnEarlierApplyOfTheTransaction(t *testing.T) {
	bothForms(t, func(t *testing.T, b *postgres.Backend) {
		ctx := context.Background()
		in := manyRecords(8)
		next := make([]backend.Attempt, len(in.Attempts))
		for i, a := range in.Attempts {
			a.Status = backend.AttemptAdmitted
			next[i] = a
		}
		rep := backend.Changes{Replace: backend.Replaces{Attempts: next}}
		ins := backend.Changes{Insert: backend.Inserts{Attempts: in.Attempts}}
		want := 1 // one many-row statement for 8 > SmallSlice records ...
		if len(b.ChangesSQL(ins)) > 1 {
			want = len(next) // ... or one per record in the one-row form
		}
		require.Len(t, b.ChangesSQLAfter([]backend.Changes{ins}, rep), want, "inserted Identities are known to the next Apply")
		require.Len(t, b.ChangesSQLAfter([]backend.Changes{{Expect: backend.Expected{Attempts: in.Attempts}}}, rep), want,
			"expected Identities are known to the next Apply")
		require.Len(t, b.ChangesSQL(rep), len(next), "unknown Identities: one statement per attempt")
		require.NoError(t, b.Update(ctx, func(tx backend.Tx) error {
			if err := tx.Apply(ctx, backend.Changes{Insert: backend.Inserts{Attempts: in.Attempts}}); err != nil {
				return err
			}
			return tx.Apply(ctx, backend.Changes{Replace: backend.Replaces{Attempts: next}})
		}))
		f := load(t, b, lookupOf(backend.Inserts{Attempts: in.Attempts}))
		for _, w := range next {
			require.Equal(t, w, f.Attempts[w.Key])
		}

		moved := append([]backend.Attempt{}, next...)
		moved[6].Identity, moved[1].Identity = "fresh", next[6].Identity
		expectThen := func(rep []backend.Attempt) error {
			return b.Update(ctx, func(tx backend.Tx) error {
				if err := tx.Apply(ctx, backend.Changes{Expect: backend.Expected{Attempts: next}}); err != nil {
					return err
				}
				return tx.Apply(ctx, backend.Changes{Replace: backend.Replaces{Attempts: rep}})
			})
		}
		require.ErrorIs(t, expectThen(moved), backend.ErrConflict, "1 takes 6's Identity before 6 gives it up")
		swapped := append([]backend.Attempt{}, moved...)
		swapped[1], swapped[6] = moved[6], moved[1]
		require.NoError(t, expectThen(swapped))
		f = load(t, b, lookupOf(backend.Inserts{Attempts: in.Attempts}))
		for _, w := range moved {
			require.Equal(t, w, f.Attempts[w.Key])
		}
	})
}

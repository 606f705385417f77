package conformance

import (
	"fmt"

	"github.com/wfstore/wfstore/backend"
)

// Deletes of attempts, leases and events: the record leaves Load, every
// scan and every index; a missing key is ErrNotFound; a deleted attempt's
// identity is free again.
func deleteCases() []testCase {
	return []testCase{
		{Name: "delete_attempt_removes_it_from_load_scans_and_identity", Run: testDeleteAttempt},
		{Name: "delete_lease_removes_it_from_load_resources_and_the_leases_scan", Run: testDeleteLease},
		{Name: "delete_event_removes_it_from_events", Run: testDeleteEvent},
		{Name: "delete_of_a_missing_attempt_lease_or_event_is_not_found", Run: testDeleteMissingRecords},
	}
}

// attemptScans returns what every attempt scan shape returns for the run
// and status of a, keeping only attempts of a's run.
func attemptScans(e *env, b backend.Backend, a backend.Attempt) map[string][]backend.Attempt {
	out := map[string][]backend.Attempt{}
	run := a.Key.RunID
	e.view(b, func(rtx backend.ReadTx) error {
		for _, q := range []struct {
			name string
			q    backend.AttemptQuery
		}{
			{"run", backend.AttemptQuery{RunID: run, Limit: 100}},
			{"run desc", backend.AttemptQuery{RunID: run, Descending: true, Limit: 100}},
			{"run+status", backend.AttemptQuery{RunID: run, Status: a.Status, Limit: 100}},
			{"status", backend.AttemptQuery{Status: a.Status, Limit: 1000}},
			{"global", backend.AttemptQuery{Limit: 1000}},
			{"global after", backend.AttemptQuery{After: backend.AttemptCursor{PreparedMS: a.PreparedMS - 1}, Limit: 1000}},
		} {
			got, err := rtx.Attempts(e.Ctx, q.q)
			if err != nil {
				return fmt.Errorf("scan Attempts(%s): %w", q.name, err)
			}
			out[q.name] = pick(got, func(x backend.Attempt) bool { return x.Key.RunID == run })
		}
		return nil
	})
	return out
}

func testDeleteAttempt(e *env) {
	s := newFullSet("run-da", "node", "act", 1, "identity-da", "resource")
	n := newFullSet("run-da-n", "node", "act", 1, "identity-da-n", "resource")
	e.apply(e.B, s.changes())
	e.apply(e.B, n.changes())
	keep := fullAttempt(atkey(s.Act.Key, 2), "identity-da-2")
	keep.PreparedMS++
	e.apply(e.B, ins(keep))

	// Delete names the record by its key alone.
	e.apply(e.B, del(s.Attempt.Key))

	f := e.load(e.B, backend.Lookup{Attempts: []backend.AttemptKey{s.Attempt.Key, keep.Key},
		Identities: []string{s.Attempt.Identity, keep.Identity}})
	e.equal("Load Attempts after Delete", map[backend.AttemptKey]backend.Attempt{keep.Key: keep}, f.Attempts)
	e.equal("Load Identities after Delete", map[string]backend.Attempt{keep.Identity: keep}, f.Identities)
	for name, got := range attemptScans(e, e.B, s.Attempt) {
		e.equal("Attempts("+name+") after Delete", []backend.Attempt{keep}, got)
	}
	count := scan(e, e.B, func(rtx backend.ReadTx) (int, error) {
		return rtx.CountAttempts(e.Ctx, backend.AttemptCountQuery{RunID: s.Run.ID, Limit: 10})
	})
	e.equal("CountAttempts after Delete", 1, count)
	e.checkFullSet(e.B, "the neighbour run after Delete", n)

	// The identity is free: an attempt of another key may take it, and so
	// may the deleted key itself, with new fields.
	other := altAttempt(fullAttempt(atkey(s.Act.Key, 3), s.Attempt.Identity))
	if err := e.applyErr(e.B, ins(other)); err != nil {
		e.T.Errorf("Insert with the identity of a deleted attempt: %v", err)
	}
	e.apply(e.B, del(other.Key))
	again := altAttempt(s.Attempt)
	e.apply(e.B, ins(again))
	f = e.load(e.B, backend.Lookup{Attempts: []backend.AttemptKey{s.Attempt.Key}, Identities: []string{s.Attempt.Identity}})
	e.equal("Load after re-Insert", map[backend.AttemptKey]backend.Attempt{again.Key: again}, f.Attempts)
	e.equal("Load by identity after re-Insert", map[string]backend.Attempt{again.Identity: again}, f.Identities)

	// Delete and Insert of the key in one Changes, and a second Delete
	// finds nothing.
	e.apply(e.B, join(del(again), ins(s.Attempt)))
	f = e.load(e.B, backend.Lookup{Identities: []string{s.Attempt.Identity}})
	e.equal("Load by identity after Delete+Insert in one Changes", map[string]backend.Attempt{s.Attempt.Identity: s.Attempt}, f.Identities)
	e.apply(e.B, del(s.Attempt))
	e.wantErr("second Delete of an attempt", e.applyErr(e.B, del(s.Attempt)), backend.ErrNotFound)
}

func testDeleteLease(e *env) {
	s := newFullSet("run-dl", "node", "act", 1, "identity-dl", "resource")
	n := newFullSet("run-dl-n", "node", "act", 1, "identity-dl-n", "resource")
	e.apply(e.B, s.changes())
	e.apply(e.B, n.changes())
	ref := backend.ResourceRef{RunID: s.Run.ID, Resource: s.Lease.Key.Resource}

	e.apply(e.B, del(s.Lease.Key, s.Released.Key))
	f := e.load(e.B, backend.Lookup{Leases: []backend.LeaseKey{s.Lease.Key, s.Released.Key}, Resources: []backend.ResourceRef{ref}})
	e.equal("Load Leases after Delete", map[backend.LeaseKey]backend.Lease{}, f.Leases)
	if len(f.Resources[ref]) != 0 {
		e.T.Errorf("Load Resources after Delete: got %+v, want no lease", f.Resources[ref])
	}
	active := scan(e, e.B, func(rtx backend.ReadTx) ([]backend.Lease, error) {
		return rtx.Leases(e.Ctx, backend.LeaseQuery{RunID: s.Run.ID, IncludeReleased: true, Limit: 10})
	})
	e.equal("Leases(IncludeReleased) after Delete", []backend.Lease(nil), active)
	e.checkFullSet(e.B, "the neighbour run after Delete", n)

	// The key can be inserted again; a second Delete finds nothing.
	e.apply(e.B, ins(s.Lease))
	f = e.load(e.B, backend.Lookup{Resources: []backend.ResourceRef{ref}})
	e.equal("Load Resources after re-Insert", map[backend.ResourceRef][]backend.Lease{ref: {s.Lease}}, f.Resources)
	e.apply(e.B, del(s.Lease))
	e.wantErr("second Delete of a lease", e.applyErr(e.B, del(s.Lease)), backend.ErrNotFound)
}

func testDeleteEvent(e *env) {
	run := "run-de"
	var evs []backend.Event
	for seq := int64(1); seq <= 4; seq++ {
		evs = append(evs, fullEvent(run, seq))
		e.apply(e.B, ins(evs[len(evs)-1]))
	}
	n := newFullSet("run-de-n", "node", "act", 1, "identity-de-n", "resource")
	e.apply(e.B, n.changes())
	events := func() []backend.Event {
		return scan(e, e.B, func(rtx backend.ReadTx) ([]backend.Event, error) {
			return rtx.Events(e.Ctx, backend.EventQuery{RunID: run, Limit: 10})
		})
	}
	e.apply(e.B, del(backend.EventKey{RunID: run, Seq: 2}))
	e.equal("Events after deleting seq 2", []backend.Event{evs[0], evs[2], evs[3]}, events())
	after := scan(e, e.B, func(rtx backend.ReadTx) ([]backend.Event, error) {
		return rtx.Events(e.Ctx, backend.EventQuery{RunID: run, After: 1, Limit: 1})
	})
	e.equal("Events after seq 1, limit 1, with seq 2 deleted", []backend.Event{evs[2]}, after)
	e.apply(e.B, del(evs[0], evs[2], evs[3]))
	e.equal("Events after deleting all", []backend.Event(nil), events())
	e.checkFullSet(e.B, "the neighbour run after Delete", n)

	// The key can be written again; a second Delete finds nothing.
	e.apply(e.B, ins(evs[1]))
	e.equal("Events after re-Insert", []backend.Event{evs[1]}, events())
	e.apply(e.B, del(evs[1]))
	e.wantErr("second Delete of an event", e.applyErr(e.B, del(evs[1])), backend.ErrNotFound)
}

func testDeleteMissingRecords(e *env) {
	s := newFullSet("run-dm", "node", "act", 1, "identity-dm", "resource")
	e.apply(e.B, s.changes())
	for _, k := range []any{
		atkey(s.Act.Key, 2),
		atkey(akey("run-dm-missing", "node", "act"), 1),
		lkey(s.Attempt.Key, s.Lease.Key.Resource, "another mode"),
		lkey(s.Attempt.Key, "another resource", backend.LeaseWrite),
		backend.EventKey{RunID: s.Run.ID, Seq: s.Event.Seq + 1},
		backend.EventKey{RunID: "run-dm-missing", Seq: s.Event.Seq},
	} {
		e.wantErr(fmt.Sprintf("Delete of a missing %s %+v", kindOf(k), k), e.applyErr(e.B, del(k)), backend.ErrNotFound)
	}
	e.checkFullSet(e.B, "after failed Deletes", s)
}

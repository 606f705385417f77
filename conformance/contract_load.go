package conformance

import (
	"fmt"

	"github.com/wfstore/wfstore/backend"
)

func loadCases() []testCase {
	return []testCase{
		{Name: "load_finds_exactly_the_present_keys_in_key_sets_of_every_size", Run: testLoadKeySetSizes},
	}
}

// loadSizes are the key-set sizes Load is checked with: an adapter may read
// small and large sets differently (Postgres: one statement per key up to a
// threshold, one array statement above it), so the sizes straddle small
// thresholds and go well past them.
var loadSizes = []int{0, 1, 2, 3, 7, 8, 9, 16, 17, 40}

// Load returns, for key sets of every size, exactly the records of the keys
// that exist: each once, however often its key is repeated in the set, and
// nothing for absent keys, whatever the size of the set around them.
func testLoadKeySetSizes(e *env) {
	sets := make([]fullSet, loadSizes[len(loadSizes)-1])
	for i := range sets {
		sets[i] = newFullSet(fmt.Sprintf("run-%02d", i), "node", "act", 1, fmt.Sprintf("identity-%02d", i), "resource")
		e.apply(e.B, sets[i].changes())
	}
	absent := newFullSet("run-absent", "node", "act", 1, "identity-absent", "resource").lookup()
	for _, n := range loadSizes {
		var l backend.Lookup
		for i := range n {
			merge(&l, sets[i].lookup())
			if i%3 == 0 { // repeat every third key, and name an absent key of each kind
				merge(&l, sets[i].lookup())
				merge(&l, absent)
			}
		}
		f := e.load(e.B, l)
		what := fmt.Sprintf("Load of %d sets", n)
		want := backend.Found{
			Runs: map[string]backend.Run{}, Links: map[string]backend.RunLink{},
			Activations: map[backend.ActivationKey]backend.Activation{}, Groups: map[backend.ActivationKey]backend.FanOutGroup{},
			Attempts: map[backend.AttemptKey]backend.Attempt{}, Identities: map[string]backend.Attempt{},
			Leases: map[backend.LeaseKey]backend.Lease{}, Schedules: map[backend.ActivationKey]backend.RetrySchedule{},
			Resources: map[backend.ResourceRef][]backend.Lease{},
		}
		for _, s := range sets[:n] {
			want.Runs[s.Run.ID] = s.Run
			want.Links[s.Link.ChildRunID] = s.Link
			want.Activations[s.Act.Key] = s.Act
			want.Groups[s.Group.Controller] = s.Group
			want.Attempts[s.Attempt.Key] = s.Attempt
			want.Identities[s.Attempt.Identity] = s.Attempt
			want.Leases[s.Lease.Key] = s.Lease
			want.Leases[s.Released.Key] = s.Released
			want.Schedules[s.Schedule.Key] = s.Schedule
			want.Resources[backend.ResourceRef{RunID: s.Lease.Key.RunID, Resource: s.Lease.Key.Resource}] = []backend.Lease{s.Lease}
		}
		e.equal(what+": Runs", want.Runs, nonNil(f.Runs))
		e.equal(what+": Links", want.Links, nonNil(f.Links))
		e.equal(what+": Activations", want.Activations, nonNil(f.Activations))
		e.equal(what+": Groups", want.Groups, nonNil(f.Groups))
		e.equal(what+": Attempts", want.Attempts, nonNil(f.Attempts))
		e.equal(what+": Identities", want.Identities, nonNil(f.Identities))
		e.equal(what+": Leases", want.Leases, nonNil(f.Leases))
		e.equal(what+": Schedules", want.Schedules, nonNil(f.Schedules))
		e.equal(what+": Resources", want.Resources, nonNil(f.Resources))
	}
}

// merge appends every key of m to l.
func merge(l *backend.Lookup, m backend.Lookup) {
	l.Runs = append(l.Runs, m.Runs...)
	l.Links = append(l.Links, m.Links...)
	l.Activations = append(l.Activations, m.Activations...)
	l.Groups = append(l.Groups, m.Groups...)
	l.Attempts = append(l.Attempts, m.Attempts...)
	l.Identities = append(l.Identities, m.Identities...)
	l.Leases = append(l.Leases, m.Leases...)
	l.Schedules = append(l.Schedules, m.Schedules...)
	l.Resources = append(l.Resources, m.Resources...)
}

// nonNil makes a nil map empty, so that "nothing found" compares equal
// whether an adapter returns nil or an empty map.
func nonNil[K comparable, V any](m map[K]V) map[K]V {
	if m == nil {
		return map[K]V{}
	}
	return m
}

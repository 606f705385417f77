package conformance

import (
	"errors"
	"fmt"
	"sync"

	"github.com/stretchr/testify/require"

	"github.com/wfstore/wfstore/backend"
)

// Per-row compare-and-set of attempts (backend.Swapper), an optional
// capability of a Tx: a case skips, saying so, on an adapter without it.

func swapCases() []testCase {
	return []testCase{
		{Name: "swap_reports_per_row_whether_it_changed_it_and_leaves_the_others", Run: testSwapPerRow},
		{Name: "swap_is_undone_by_the_rollback_of_its_update", Run: testSwapRollback},
		{Name: "swap_of_one_row_by_concurrent_instances_has_one_winner", Run: testSwapConcurrent},
		{Name: "swap_refuses_a_repeated_key_or_a_changed_identity", Run: testSwapInvalid},
	}
}

// errNoSwapper marks an Update whose Tx has no Swapper.
var errNoSwapper = errors.New("conformance: tx is not a backend.Swapper")

// swap runs swaps in tx, which must be a Swapper.
func swap(e *env, tx backend.Tx, swaps ...backend.AttemptSwap) ([]bool, error) {
	s, ok := tx.(backend.Swapper)
	if !ok {
		return nil, errNoSwapper
	}
	return s.SwapAttempts(e.Ctx, swaps)
}

// requireSwapper skips the case when b's transactions have no Swapper.
func requireSwapper(e *env, b backend.Backend) {
	e.T.Helper()
	has := false
	e.update(b, func(tx backend.Tx) error {
		_, has = tx.(backend.Swapper)
		return nil
	})
	if !has {
		e.T.Skipf("capability Swapper=false: %s's Tx does not implement backend.Swapper (optional); workflow falls back to expecting the attempts unchanged and deciding again on a change", e.H.Name)
	}
}

// swapFixture stores three attempts of one run and returns them.
func swapFixture(e *env, run string) []backend.Attempt {
	k := akey(run, "node", "act")
	atts := make([]backend.Attempt, 3)
	for i := range atts {
		atts[i] = fullAttempt(atkey(k, uint32(i+1)), fmt.Sprintf("identity-%s-%d", run, i+1))
	}
	e.apply(e.B, ins(atts[0], atts[1], atts[2]))
	return atts
}

// flipped is a as a handoff flip writes it.
func flipped(a backend.Attempt, token string) backend.Attempt {
	a.Handoff, a.HandoffToken = backend.HandoffPending, token
	a.Receipt = nil
	a.Status = backend.AttemptAdmitted
	return a
}

func (e *env) attempt(b backend.Backend, k backend.AttemptKey) (backend.Attempt, bool) {
	e.T.Helper()
	f := e.load(b, backend.Lookup{Attempts: []backend.AttemptKey{k}})
	a, ok := f.Attempts[k]
	return a, ok
}

// testSwapPerRow: of swaps whose Old is stored, differs in one field, or
// names a missing attempt, only the first changes its row and reports
// true; the others report false and leave their rows (and the missing
// key) as they were, without failing the transaction: its other writes
// commit. The transaction's later reads see the swap, and a second swap
// from the same Old in it reports false.
func testSwapPerRow(e *env) {
	requireSwapper(e, e.B)
	atts := swapFixture(e, "swap-rows")
	stale := atts[1]
	stale.Detail = js("not the stored detail")
	missing := fullAttempt(atkey(atts[0].Key.ActivationKey, 9), "identity-swap-rows-9")
	news := []backend.Attempt{flipped(atts[0], "t0"), flipped(stale, "t1"), flipped(missing, "t9")}
	var got, again []bool
	var seen backend.Attempt
	e.update(e.B, func(tx backend.Tx) error {
		var err error
		got, err = swap(e, tx,
			backend.AttemptSwap{Old: atts[0], New: news[0]},
			backend.AttemptSwap{Old: stale, New: news[1]},
			backend.AttemptSwap{Old: missing, New: news[2]})
		if err != nil {
			return err
		}
		f, err := tx.Load(e.Ctx, backend.Lookup{Attempts: []backend.AttemptKey{atts[0].Key}})
		if err != nil {
			return err
		}
		seen = f.Attempts[atts[0].Key]
		if again, err = swap(e, tx, backend.AttemptSwap{Old: atts[0], New: flipped(atts[0], "t-again")}); err != nil {
			return err
		}
		// The swapped row is what an Expect now finds, and the
		// transaction's other writes go on.
		return tx.Apply(e.Ctx, join(exp(news[0]), marker(200)))
	})
	require.Equal(e.T, []bool{true, false, false}, got, "per-row results: stored Old, differing Old, missing row")
	require.Equal(e.T, []bool{false}, again, "a second swap from the same Old in one transaction finds the first one's New")
	e.equal("the swapped attempt as the transaction read it", news[0], seen)
	if !e.hasMarker(200) {
		e.T.Errorf("the transaction's write after its swaps did not commit")
	}
	a, ok := e.attempt(e.B, atts[0].Key)
	require.True(e.T, ok)
	e.equal("the swapped attempt", news[0], a)
	a, ok = e.attempt(e.B, atts[1].Key)
	require.True(e.T, ok)
	e.equal("the attempt whose swap found another record", atts[1], a)
	if _, ok := e.attempt(e.B, missing.Key); ok {
		e.T.Errorf("a swap of a missing attempt created it")
	}
	a, ok = e.attempt(e.B, atts[2].Key)
	require.True(e.T, ok)
	e.equal("an attempt no swap named", atts[2], a)

	// Every field takes part in the comparison.
	alt := altAttempt(atts[2])
	for _, variant := range fieldVariants(atts[2], alt) {
		var res []bool
		e.update(e.B, func(tx backend.Tx) error {
			var err error
			res, err = swap(e, tx, backend.AttemptSwap{Old: variant, New: flipped(atts[2], "tv")})
			return err
		})
		require.Equal(e.T, []bool{false}, res, "a swap whose Old differs from the stored attempt in one field: %+v", variant)
	}
	a, _ = e.attempt(e.B, atts[2].Key)
	e.equal("an attempt only swaps with a differing Old named", atts[2], a)
	// No swaps: nothing.
	e.update(e.B, func(tx backend.Tx) error {
		res, err := swap(e, tx)
		if err == nil && len(res) != 0 {
			err = fmt.Errorf("a call with no swaps returned %v", res)
		}
		return err
	})
}

// fieldVariants returns a copy of a for every non-key field in which alt
// differs, with that field taken from alt.
func fieldVariants(a, alt backend.Attempt) []backend.Attempt {
	var out []backend.Attempt
	for _, set := range []func(*backend.Attempt){
		func(v *backend.Attempt) { v.Status = alt.Status },
		func(v *backend.Attempt) { v.SideEffect = alt.SideEffect },
		func(v *backend.Attempt) { v.Intent = alt.Intent },
		func(v *backend.Attempt) { v.IntentChecksum = alt.IntentChecksum },
		func(v *backend.Attempt) { v.Receipt = alt.Receipt },
		func(v *backend.Attempt) { v.Handoff = alt.Handoff },
		func(v *backend.Attempt) { v.Detail = alt.Detail },
		func(v *backend.Attempt) { v.PreparedMS = alt.PreparedMS },
		func(v *backend.Attempt) { v.AdmittedMS = alt.AdmittedMS },
		func(v *backend.Attempt) { v.TerminalMS = alt.TerminalMS },
		func(v *backend.Attempt) { v.HandoffToken = alt.HandoffToken },
	} {
		v := a
		set(&v)
		out = append(out, v)
	}
	return out
}

// testSwapRollback: an Update that swaps and then fails leaves every row
// as it was.
func testSwapRollback(e *env) {
	requireSwapper(e, e.B)
	atts := swapFixture(e, "swap-rollback")
	boom := errors.New("rolled back")
	var got []bool
	err := e.B.Update(e.Ctx, func(tx backend.Tx) error {
		var err error
		got, err = swap(e, tx, backend.AttemptSwap{Old: atts[0], New: flipped(atts[0], "t0")},
			backend.AttemptSwap{Old: atts[1], New: flipped(atts[1], "t1")})
		if err != nil {
			return err
		}
		if err := tx.Apply(e.Ctx, marker(300)); err != nil {
			return err
		}
		return boom
	})
	require.ErrorIs(e.T, err, boom)
	require.Equal(e.T, []bool{true, true}, got)
	for _, want := range atts {
		a, ok := e.attempt(e.B, want.Key)
		require.True(e.T, ok)
		e.equal("an attempt swapped in a rolled-back Update", want, a)
	}
	if e.hasMarker(300) {
		e.T.Errorf("a write of the rolled-back Update committed")
	}
}

// testSwapConcurrent: swappers on two instances (one, where the adapter
// is not MultiInstance) flip the same rows from the same Old at once,
// each in its own Update that also inserts a marker event: each row has
// exactly one winner, whose New is stored, and every marker commits.
func testSwapConcurrent(e *env) {
	bs := []backend.Backend{e.B}
	if e.Caps.MultiInstance {
		bs = append(bs, e.Open())
	}
	requireSwapper(e, e.B)
	const swappers, rounds = 6, 4
	for round := range rounds {
		atts := swapFixture(e, fmt.Sprintf("swap-race-%d", round))
		won := make([][]bool, swappers)
		errs := make([]error, swappers)
		start := make(chan struct{})
		var wg sync.WaitGroup
		for s := range swappers {
			wg.Go(func() {
				<-start
				errs[s] = bs[s%len(bs)].Update(e.Ctx, func(tx backend.Tx) error {
					sw := make([]backend.AttemptSwap, len(atts))
					for i, a := range atts {
						// Each swapper names the rows in its own order.
						a = atts[(i+s)%len(atts)]
						sw[i] = backend.AttemptSwap{Old: a, New: flipped(a, fmt.Sprintf("swapper-%d", s))}
					}
					res, err := swap(e, tx, sw...)
					if err != nil {
						return err
					}
					won[s] = make([]bool, len(atts))
					for i, ok := range res {
						won[s][(i+s)%len(atts)] = ok
					}
					return tx.Apply(e.Ctx, ins(fullEvent(markerRun, int64(1000*(round+1)+s))))
				})
			})
		}
		close(start)
		wg.Wait()
		for s := range swappers {
			require.NoError(e.T, errs[s], "round %d: swapper %d", round, s)
			if !e.hasMarker(int64(1000*(round+1) + s)) {
				e.T.Errorf("round %d: swapper %d's other write did not commit", round, s)
			}
		}
		for i, a := range atts {
			winner := -1
			for s := range swappers {
				if !won[s][i] {
					continue
				}
				if winner >= 0 {
					e.T.Fatalf("round %d: swappers %d and %d both report they changed attempt %d", round, winner, s, i)
				}
				winner = s
			}
			if winner < 0 {
				e.T.Fatalf("round %d: no swapper changed attempt %d, which was stored as every Old", round, i)
			}
			stored, _ := e.attempt(e.B, a.Key)
			e.equal(fmt.Sprintf("round %d: attempt %d after the race", round, i), flipped(a, fmt.Sprintf("swapper-%d", winner)), stored)
		}
	}
}

// testSwapInvalid: a call naming a key twice, or whose New changes the
// key or identity, fails with ErrInvalidSwap.
func testSwapInvalid(e *env) {
	requireSwapper(e, e.B)
	atts := swapFixture(e, "swap-invalid")
	other := flipped(atts[0], "t")
	other.Identity = "another identity"
	moved := flipped(atts[0], "t")
	moved.Key = atts[1].Key
	for what, sw := range map[string][]backend.AttemptSwap{
		"a repeated key": {{Old: atts[0], New: flipped(atts[0], "a")}, {Old: atts[0], New: flipped(atts[0], "b")}},
		"a new identity": {{Old: atts[0], New: other}},
		"a new key":      {{Old: atts[0], New: moved}},
	} {
		err := e.B.Update(e.Ctx, func(tx backend.Tx) error {
			_, err := swap(e, tx, sw...)
			return err
		})
		e.wantErr("a swap call with "+what, err, backend.ErrInvalidSwap)
	}
	for _, want := range atts {
		a, _ := e.attempt(e.B, want.Key)
		e.equal("an attempt after refused swap calls", want, a)
	}
}

package conformance

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/wfstore/wfstore/backend"
	"github.com/wfstore/wfstore/workflow"
)

// Advisory claims (backend.Claimer), an optional capability: a case skips,
// saying so, on an adapter without it. The contract cases check the
// capability itself across two instances over one store; the store case
// checks that a claim only spreads work: one that expires while its
// holder plans costs that holder a wasted plan, never a second admission.

func claimCases() []testCase {
	return []testCase{
		{Name: "claims_taken_concurrently_across_instances_are_disjoint", Run: testClaimsDisjoint},
		{Name: "claims_expire_extend_and_release_per_holder", Run: testClaimLifecycle},
	}
}

func claimStoreCases() []testCase {
	return []testCase{
		{Name: "claims_a_claim_that_expires_mid_prepare_costs_a_rerun_never_a_second_admission", Run: caseClaimExpiresMidPrepare},
		{Name: "claims_receipt_passes_of_two_stores_ask_about_each_attempt_once", Run: caseClaimReceiptPassesOfTwoStores},
		{Name: "claims_a_pass_reads_past_a_run_another_store_holds", Run: caseClaimPassReadsPastHeldRun},
	}
}

// claimers returns the instances a claim case uses: e.B and, where the
// adapter is MultiInstance, a second instance over the same store. It
// skips the case when the adapter has no Claimer.
func claimers(e *env) []backend.Claimer {
	c, ok := e.B.(backend.Claimer)
	if !ok {
		e.T.Skipf("capability Claimer=false: %s does not implement backend.Claimer (optional); workflow falls back to deciding at the prepare transaction alone", e.H.Name)
	}
	out := []backend.Claimer{c}
	if e.Caps.MultiInstance {
		out = append(out, e.Open().(backend.Claimer))
	}
	return out
}

// testClaimsDisjoint: holders on two instances claim overlapping key sets,
// each in its own order, at the same moment: every key ends up held by
// exactly one of them, and each holder's answer says so.
func testClaimsDisjoint(e *env) {
	cs := claimers(e)
	const holders, keys, rounds = 8, 40, 5
	for round := range rounds {
		all := make([]string, keys)
		for i := range all {
			all[i] = fmt.Sprintf("disjoint-%d-%03d", round, i)
		}
		won := make([][]bool, holders)
		mine := make([][]string, holders)
		errs := make([]error, holders)
		start := make(chan struct{})
		var wg sync.WaitGroup
		for h := range holders {
			// Each holder claims a random two thirds of the keys, shuffled.
			ks := append([]string(nil), all...)
			rand.Shuffle(len(ks), func(i, j int) { ks[i], ks[j] = ks[j], ks[i] })
			mine[h] = ks[:2*keys/3]
			wg.Go(func() {
				<-start
				won[h], errs[h] = cs[h%len(cs)].Claim(e.Ctx, fmt.Sprintf("holder-%d", h), mine[h], time.Minute)
			})
		}
		close(start)
		wg.Wait()
		holder := map[string]int{}
		for h := range holders {
			require.NoError(e.T, errs[h], "round %d: holder %d", round, h)
			require.Len(e.T, won[h], len(mine[h]), "round %d: holder %d: one answer per key", round, h)
			for i, k := range mine[h] {
				if !won[h][i] {
					continue
				}
				if prev, ok := holder[k]; ok {
					e.T.Fatalf("round %d: holders %d and %d both hold %q: concurrent claims must be disjoint", round, prev, h, k)
				}
				holder[k] = h
			}
		}
		// Every key some holder asked for was free: one of them holds it.
		for h := range holders {
			for _, k := range mine[h] {
				if _, ok := holder[k]; !ok {
					e.T.Fatalf("round %d: nobody holds %q, which was free when claimed", round, k)
				}
			}
		}
	}
}

// testClaimLifecycle: a held claim refuses other holders and is extended
// by its own; it expires after its ttl, after which another holder takes
// it; Release gives back only the releasing holder's claims.
func testClaimLifecycle(e *env) {
	cs := claimers(e)
	a, b := cs[0], cs[len(cs)-1]
	claim := func(c backend.Claimer, holder string, ttl time.Duration, keys ...string) []bool {
		e.T.Helper()
		got, err := c.Claim(e.Ctx, holder, keys, ttl)
		require.NoError(e.T, err)
		return got
	}
	const ttl = 400 * time.Millisecond
	require.Equal(e.T, []bool{true, true}, claim(a, "A", ttl, "k1", "k2"))
	require.Equal(e.T, []bool{false, true}, claim(b, "B", time.Minute, "k1", "k3"), "k1 is A's until it expires")
	require.Equal(e.T, []bool{true}, claim(a, "A", time.Minute, "k1"), "A holds k1 already: extended")
	require.Equal(e.T, []bool{false}, claim(b, "B", ttl, "k2"), "k2 is still A's")

	time.Sleep(ttl + 200*time.Millisecond)
	require.Equal(e.T, []bool{false, true}, claim(b, "B", time.Minute, "k1", "k2"), "k1 was extended; k2 expired")
	require.Equal(e.T, []bool{false}, claim(a, "A", time.Minute, "k2"), "k2 is B's now")

	require.NoError(e.T, a.Release(e.Ctx, "A", []string{"k2", "k3"}), "releasing what another holds")
	require.Equal(e.T, []bool{false, false}, claim(a, "C", time.Minute, "k2", "k3"), "A's Release left B's claims alone")
	require.NoError(e.T, b.Release(e.Ctx, "B", []string{"k2", "k3"}))
	require.Equal(e.T, []bool{true, true, false}, claim(a, "C", time.Minute, "k2", "k3", "k1"), "released claims are free; k1 is still A's")
	require.NoError(e.T, b.Release(e.Ctx, "B", nil), "releasing nothing")
}

// caseClaimExpiresMidPrepare: Store A's pass claims activation a1 and
// plans it. While A plans, a pass of Store B (another instance, as
// another process would be) takes a2, which nobody claimed, rather than
// a1, which A holds. Then A's claim expires (A's claim lease is short)
// and a pass of Store C admits a1. A's prepare loses at the single-winner
// gate: A reports a1 raced, and each activation has one attempt and one
// owner call. Without claims (the fallback), B takes a1 first and A loses
// to B instead: still one admission each.
func caseClaimExpiresMidPrepare(e *env) {
	_, claims := e.B.(backend.Claimer)
	other := e.B
	if e.Caps.MultiInstance {
		other = e.Open()
	}
	// Long enough that A's claim outlives B's whole Dispatch on a loaded
	// machine (a few round trips to a busy cluster), short enough to wait
	// out.
	const lease = 2 * time.Second
	sa := workflow.New(e.B, workflow.WithBatchSize(e.batch), workflow.WithClaimLease(lease))
	sb := workflow.New(other, workflow.WithBatchSize(e.batch))
	// A Store that has not met A's claim yet (a Store remembers, for a
	// while, the work it found claimed, and takes it last).
	sc := workflow.New(other, workflow.WithBatchSize(e.batch))
	mkRun(e, sa, "claimed", workflow.Limits{ConcurrencyCap: 10}, nil)
	a1, a2 := key("claimed", "n", "a1"), key("claimed", "n", "a2")
	mkAct(e, sa, a1)
	mkAct(e, sa, a2)

	oa, ob := newOwner(), newOwner()
	var bHeld, cExpired workflow.DispatchSummary
	var bErr error
	one := workflow.DispatchOptions{RunID: "claimed", Limit: 1}
	oa.onPlan = func(ctx context.Context, _ workflow.Activation) error {
		oa.onPlan = nil
		bHeld, bErr = sb.Dispatch(ctx, ob, one, ms(10))
		if bErr != nil {
			return bErr
		}
		time.Sleep(lease + 100*time.Millisecond)
		// A's claim expired mid-prepare.
		cExpired, bErr = sc.Dispatch(ctx, ob, one, ms(10))
		return bErr
	}
	sumA, err := sa.Dispatch(e.Ctx, oa, one, ms(10))
	require.NoError(e.T, err)
	require.NoError(e.T, bErr)

	require.Len(e.T, bHeld.Admitted, 1, "B admits one activation: %+v", bHeld)
	require.Len(e.T, cExpired.Admitted, 1, "C admits one activation: %+v", cExpired)
	if claims {
		require.Equal(e.T, a2, bHeld.Admitted[0].Key.ActivationKey, "B took the activation nobody claimed, not the one A's claim held")
		require.Equal(e.T, a1, cExpired.Admitted[0].Key.ActivationKey, "C took a1 once A's claim expired")
	}
	require.Empty(e.T, sumA.Admitted, "A admitted a1, which another Store admitted: a second admission")
	require.Equal(e.T, []workflow.ActivationKey{a1}, sumA.Raced, "A lost at the prepare transaction")
	for _, k := range []workflow.ActivationKey{a1, a2} {
		require.Equal(e.T, 1, oa.calls[identity(k, 1)]+ob.calls[identity(k, 1)], "owner calls of %v", k)
	}
	n := 0
	e.view(e.B, func(r backend.ReadTx) error {
		c, err := r.CountAttempts(e.Ctx, backend.AttemptCountQuery{RunID: "claimed", Limit: 10})
		n = c
		return err
	})
	require.Equal(e.T, 2, n, "one attempt per activation")
}

// caseClaimReceiptPassesOfTwoStores: while a receipt-backed pass of one
// Store asks its owner about two attempts, a pass of another Store (on
// another instance, as another process would) asks about none of them;
// its next pass looks past them and takes the third.
func caseClaimReceiptPassesOfTwoStores(e *env) {
	claimers(e)
	other := e.B
	if e.Caps.MultiInstance {
		other = e.Open()
	}
	s := store(e)
	sb := e.newStore(other)
	ids := admittedIn(e, s, "r", workflow.Mutating, nil, "a", "b", "c")
	first, second := newObserver(), newObserver()
	var inner, again workflow.ReceiptPassSummary
	first.hook = func(ctx context.Context, _ workflow.Attempt) {
		first.hook = nil
		var err error
		inner, err = sb.Engine().ReconcileReceiptBacked(ctx, second, workflow.ReceiptPassOptions{Limit: 2}, ms(21))
		require.NoError(e.T, err)
		again, err = sb.Engine().ReconcileReceiptBacked(ctx, second, workflow.ReceiptPassOptions{Limit: 2}, ms(21))
		require.NoError(e.T, err)
	}
	sum := receiptPass(e, s, first, workflow.ReceiptPassOptions{Limit: 2}, 20)
	require.Len(e.T, first.askedAbout(), 2)
	require.Len(e.T, sum.Attempts, 2)
	require.Empty(e.T, inner.Attempts, "the other Store's first pass found both attempts it selected claimed")
	require.Len(e.T, again.Attempts, 1, "its next pass looks past them")
	require.ElementsMatch(e.T, ids, append(first.askedAbout(), second.askedAbout()...), "each attempt is asked about once")
}

// caseClaimPassReadsPastHeldRun: while a pass of Store A plans the first
// two activations of run "a-held", which has more pending activations
// than a pass of Limit 2 reads, a pass of Store B (on another instance,
// as another process would be) admits two activations of run "b-free",
// which nobody holds, rather than more of "a-held": it reads past the
// held run instead of spending its bounded reads on it.
func caseClaimPassReadsPastHeldRun(e *env) {
	claimers(e)
	other := e.B
	if e.Caps.MultiInstance {
		other = e.Open()
	}
	sa, sb := store(e), e.newStore(other)
	for run, n := range map[string]int{"a-held": 12, "b-free": 4} {
		mkRun(e, sa, run, workflow.Limits{ConcurrencyCap: 20}, nil)
		for i := range n {
			mkAct(e, sa, key(run, "n", fmt.Sprintf("x%02d", i)))
		}
	}
	oa, ob := newOwner(), newOwner()
	var sumB workflow.DispatchSummary
	var errB error
	two := workflow.DispatchOptions{Limit: 2}
	oa.onPlan = func(ctx context.Context, _ workflow.Activation) error {
		oa.onPlan = nil
		sumB, errB = sb.Dispatch(ctx, ob, two, ms(10))
		return errB
	}
	sumA, err := sa.Dispatch(e.Ctx, oa, two, ms(10))
	require.NoError(e.T, err)
	require.NoError(e.T, errB)
	keys := func(sum workflow.DispatchSummary) []workflow.ActivationKey {
		var out []workflow.ActivationKey
		for _, a := range sum.Admitted {
			out = append(out, a.Key.ActivationKey)
		}
		return out
	}
	require.Equal(e.T, []workflow.ActivationKey{key("a-held", "n", "x00"), key("a-held", "n", "x01")}, keys(sumA))
	require.Equal(e.T, []workflow.ActivationKey{key("b-free", "n", "x00"), key("b-free", "n", "x01")}, keys(sumB),
		"Store B's pass took the run nobody held, not more of the run Store A held")
}

package workflow

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/wfstore/wfstore/backend"
	"github.com/wfstore/wfstore/memstore"
)

// withoutClaims hides the backend's Claimer, as SQLite and bbolt have none.
type withoutClaims struct{ backend.Backend }

// On a backend without shared claims a pass names no claim: claiming its
// candidates and giving its claims back allocate nothing (measured before:
// 221 allocations and 96 hashes to name the claims of 96 candidates in 12
// runs, and 100 allocations to name the claims to keep when giving them
// back).
func TestAPassWithoutSharedClaimsNamesNoClaim(t *testing.T) {
	ctx := context.Background()
	mem := memstore.New()
	t.Cleanup(func() { mem.Close() })
	s := New(withoutClaims{mem})
	now := time.UnixMilli(1_700_000_000_000)
	for r := range 12 {
		run := fmt.Sprint("r", r)
		_, err := s.CreateRun(ctx, NewRun{ID: run}, now)
		require.NoError(t, err)
		for i := range 8 { // within the default run concurrency
			_, err := s.AddActivation(ctx, NewActivation{
				Key:   ActivationKey{RunID: run, NodeID: "n", ActivationID: fmt.Sprint("x", i)},
				Input: json.RawMessage(`{}`),
			}, now)
			require.NoError(t, err)
		}
	}
	cands, release, err := s.discoverClaimed(ctx, "", 100, now.UnixMilli())
	require.NoError(t, err)
	require.Len(t, cands, 96)

	var mine, runLost, lost []candidate
	allocs := testing.AllocsPerRun(20, func() {
		mine, runLost, lost, _ = s.claimCandidates(ctx, "holder", cands, true)
	})
	require.Equal(t, cands, mine, "the pass holds every candidate")
	require.Empty(t, runLost)
	require.Empty(t, lost)
	require.Zero(t, allocs, "claimCandidates")

	admitted := make([]AttemptRef, len(cands))
	for i, c := range cands {
		k := AttemptKey{ActivationKey: c.act.Key, Attempt: c.act.LastAttempt + 1}
		admitted[i] = AttemptRef{Key: k, Identity: k.Identity()}
	}
	require.Zero(t, testing.AllocsPerRun(20, func() { release(admitted) }), "release")
}

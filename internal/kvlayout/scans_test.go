package kvlayout

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/wfstore/wfstore/backend"
)

// scanKeys returns the codec keys of s's range of space sp in mem.
func scanKeys(t *testing.T, mem *memStore, sp *Space, s Scan) []string {
	t.Helper()
	keys, err := mem.Keys(context.Background(), sp, s.From, s.Until, -1)
	require.NoError(t, err)
	var out []string
	for _, k := range keys {
		ck, ok := sp.Unstored(k)
		require.True(t, ok)
		out = append(out, string(ck))
	}
	if s.Desc {
		for i, j := 0, len(out)-1; i < j; i, j = i+1, j-1 {
			out[i], out[j] = out[j], out[i]
		}
	}
	return out
}

// A query's range holds exactly the keys it returns, in either layout:
// one run's, after the cursor, up to the bound.
func TestScanRanges(t *testing.T) {
	t.Parallel()
	for name, l := range layouts() {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			mem := newMem()
			var c backend.Changes
			for _, run := range []string{"a", "a\x00", "b"} {
				for seq := int64(1); seq <= 3; seq++ {
					c.Insert.Events = append(c.Insert.Events, backend.Event{RunID: run, Seq: seq})
					c.Insert.Schedules = append(c.Insert.Schedules, backend.RetrySchedule{
						Key: backend.ActivationKey{RunID: run, NodeID: "n", ActivationID: string(rune('0' + seq))}, DueMS: 10 * seq})
				}
				for i, st := range []backend.AttemptStatus{backend.AttemptAdmitted, backend.AttemptPrepared, backend.AttemptAdmitted} {
					a := testAttempt(string(rune('x'+i)), run+string(rune('x'+i)), st)
					a.Key.RunID, a.PreparedMS = run, int64(i)
					c.Insert.Attempts = append(c.Insert.Attempts, a)
				}
			}
			require.NoError(t, l.Apply(ctx, mem, &c))

			ev := func(run string, seq int64) string { return string(eventKey(backend.EventKey{RunID: run, Seq: seq})) }
			require.Equal(t, []string{ev("a", 2), ev("a", 3)}, scanKeys(t, mem, &l.Event.Space, l.EventScan(backend.EventQuery{RunID: "a", After: 1})))
			require.Empty(t, scanKeys(t, mem, &l.Event.Space, l.EventScan(backend.EventQuery{RunID: "c"})))

			due := scanKeys(t, mem, &l.ScheduleDue.Space, l.DueScan(backend.ScheduleQuery{RunID: "a\x00", DueBy: 20}))
			require.Len(t, due, 2, "due_ms 10 and 20 of run a\\x00 only")

			ix, s := l.AttemptScan(backend.AttemptQuery{RunID: "a", Status: backend.AttemptAdmitted, Descending: true})
			require.Same(t, l.AttemptRunStatus, ix)
			got := scanKeys(t, mem, &ix.Space, s)
			require.Len(t, got, 2)
			pk, err := ix.Primary([]byte(got[0]))
			require.NoError(t, err)
			require.Equal(t, string(attemptKey(backend.AttemptKey{ActivationKey: backend.ActivationKey{RunID: "a", NodeID: "n", ActivationID: "z"}, Attempt: 1})), string(pk), "descending: prepared_ms 2 first")

			ix, s = l.AttemptScan(backend.AttemptQuery{Status: backend.AttemptPrepared, After: backend.AttemptCursor{PreparedMS: 1, Identity: "a\x00y"}})
			require.Same(t, l.AttemptStatus, ix)
			require.Len(t, scanKeys(t, mem, &ix.Space, s), 2, "identities \"ay\" and \"by\" sort after \"a\\x00y\"")

			n := scanKeys(t, mem, &l.Attempt.Space, l.AttemptCountScan(backend.AttemptCountQuery{RunID: "b", Limit: 10}))
			require.Len(t, n, 3)
		})
	}
}

package conformance

import (
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/wfstore/wfstore/workflow"
)

// caseRetryScan pages Retries one run at a time: failed runs in id
// order, then running ones, each read once with its earliest schedule;
// paused runs are passed over; a one-run scan reads that run whatever its
// status; bad limits and ids are refused; nothing is written.
func caseRetryScan(e *env) {
	s := store(e)
	ka, _ := retryable(e, s, "a", 100)
	kb, _ := retryable(e, s, "b", 300)
	mkRun(e, s, "c", workflow.Limits{}, nil)
	mkRun(e, s, "d", workflow.Limits{}, nil)
	require.NoError(e.T, s.PauseRun(e.Ctx, "d", nil, ms(40)))
	before := digest(e, "a", "b", "c", "d")

	var got []workflow.RunRetry
	var cur workflow.Cursor
	pages := 0
	for ; ; pages++ {
		require.Less(e.T, pages, 10, "the scan must end")
		page, err := s.Retries(e.Ctx, workflow.RetryQuery{After: cur, Limit: 1})
		require.NoError(e.T, err)
		assert.LessOrEqual(e.T, len(page.Items), 1, "a page reads at most Limit runs")
		got = append(got, page.Items...)
		if page.Next == "" {
			break
		}
		cur = page.Next
	}
	assert.Equal(e.T, 2, pages, "three runs in pages of one: the third page is the last, no empty round trip")
	ids := make([]string, len(got))
	for i, rr := range got {
		ids[i] = rr.RunID
	}
	require.Equal(e.T, []string{"a", "b", "c"}, ids, "failed runs by id, then running ones; the paused run is passed over")
	require.NotNil(e.T, got[0].Earliest)
	assert.Equal(e.T, ka, got[0].Earliest.Key)
	assert.Equal(e.T, ms(120), got[0].Earliest.Due)
	require.NotNil(e.T, got[1].Earliest)
	assert.Equal(e.T, kb, got[1].Earliest.Key)
	assert.Equal(e.T, ms(320), got[1].Earliest.Due)
	assert.Nil(e.T, got[2].Earliest, "run c holds no schedule")

	whole, err := s.Retries(e.Ctx, workflow.RetryQuery{})
	require.NoError(e.T, err)
	assert.Empty(e.T, whole.Next, "the default limit covers four runs")
	assert.Equal(e.T, got, whole.Items, "one page reads what the small pages read")

	one, err := s.Retries(e.Ctx, workflow.RetryQuery{RunID: "d", After: cur})
	require.NoError(e.T, err)
	assert.Equal(e.T, []workflow.RunRetry{{RunID: "d"}}, one.Items, "a one-run scan reads that run, paused or not")
	assert.Empty(e.T, one.Next)

	for _, q := range []workflow.RetryQuery{{Limit: -1}, {Limit: workflow.MaxPageLimit + 1}, {RunID: "x\x00"}, {After: "garbage"}} {
		_, err := s.Retries(e.Ctx, q)
		requireIs(e.T, err, workflow.ErrInvalidInput, "scan %+v", q)
	}
	unchanged(e, before, "retry scans", "a", "b", "c", "d")
}

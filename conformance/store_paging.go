package conformance

import (
	"fmt"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/wfstore/wfstore/workflow"
)

func pagingCases() []testCase {
	return []testCase{
		{Name: "paging_every_listing_visits_each_item_once_and_ends_with_an_empty_next", Run: casePagingVisitsOnce},
		{Name: "paging_refuses_foreign_and_garbage_cursors_before_reading", Run: casePagingRefusesCursors},
	}
}

// listing is one paged listing of the Store or the Engine, seen as item
// keys: list reads the page after `after` of at most limit items.
type listing struct {
	name string
	// exact: the listing returns every row it reads, so a non-empty Next
	// promises at least one more item; a filtering scan only promises
	// that more rows remain.
	exact bool
	list  func(s *workflow.Store, after workflow.Cursor, limit int) ([]string, workflow.Cursor, error)
}

// pagingFixture builds runs with something in every listing: run "r" with
// five admitted attempts holding leases and two prepared ones, a fan-in
// group of five members, two failed runs with retry schedules and a run
// whose cancellation is requested. It returns every listing over them.
func pagingFixture(e *env, s *workflow.Store) []listing {
	e.T.Helper()
	retryable(e, s, "fa", 100) // dispatches every run: first
	retryable(e, s, "fb", 100)
	mkRun(e, s, "r", workflow.Limits{ConcurrencyCap: 100, NodeExecutionCap: 100}, nil)
	for i := range 5 {
		mkAct(e, s, key("r", "n", fmt.Sprintf("a%d", i)), withClaims(claim(fmt.Sprintf("res%d", i), workflow.LeaseWrite)))
	}
	dispatch(e, s, newOwner(), workflow.DispatchOptions{RunID: "r"}, ms(10))
	for i := range 2 {
		k := key("r", "p", fmt.Sprintf("b%d", i))
		mkAct(e, s, k)
		prep(e, s, k, workflow.ReadOnly, ms(11))
	}
	ctl, _ := fanInRun(e, s, "g", 5, 5, workflow.WaitAll)
	mkRun(e, s, "c", workflow.Limits{}, nil)
	for i := range 3 {
		k := key("c", "n", fmt.Sprintf("a%d", i))
		mkAct(e, s, k)
		prep(e, s, k, workflow.ReadOnly, ms(12))
	}
	_, err := s.RequestCancellation(e.Ctx, "c", nil, ms(13))
	require.NoError(e.T, err)
	mkRun(e, s, "c2", workflow.Limits{}, nil)
	mkAct(e, s, key("c2", "n", "a"))
	prep(e, s, key("c2", "n", "a"), workflow.ReadOnly, ms(12))
	_, err = s.RequestCancellation(e.Ctx, "c2", nil, ms(13))
	require.NoError(e.T, err)

	now := ms(100_000)
	return []listing{
		{"Events", true, func(s *workflow.Store, after workflow.Cursor, limit int) ([]string, workflow.Cursor, error) {
			p, err := s.Events(e.Ctx, workflow.EventQuery{RunID: "r", After: after, Limit: limit})
			out := []string{}
			for _, ev := range p.Items {
				out = append(out, fmt.Sprint(ev.Seq))
			}
			return out, p.Next, err
		}},
		{"Attempts", true, func(s *workflow.Store, after workflow.Cursor, limit int) ([]string, workflow.Cursor, error) {
			p, err := s.Attempts(e.Ctx, workflow.AttemptQuery{After: after, Limit: limit})
			return identitiesOf(p.Items), p.Next, err
		}},
		{"Attempts descending", true, func(s *workflow.Store, after workflow.Cursor, limit int) ([]string, workflow.Cursor, error) {
			p, err := s.Attempts(e.Ctx, workflow.AttemptQuery{RunID: "r", Descending: true, After: after, Limit: limit})
			return identitiesOf(p.Items), p.Next, err
		}},
		{"FanOutMembers", true, func(s *workflow.Store, after workflow.Cursor, limit int) ([]string, workflow.Cursor, error) {
			p, err := s.FanOutMembers(e.Ctx, workflow.MemberQuery{Controller: ctl, After: after, Limit: limit})
			out := []string{}
			for _, m := range p.Items {
				out = append(out, fmt.Sprint(m.Index))
			}
			return out, p.Next, err
		}},
		{"Retries", true, func(s *workflow.Store, after workflow.Cursor, limit int) ([]string, workflow.Cursor, error) {
			p, err := s.Retries(e.Ctx, workflow.RetryQuery{After: after, Limit: limit})
			out := []string{}
			for _, rr := range p.Items {
				out = append(out, rr.RunID)
			}
			return out, p.Next, err
		}},
		{"ActiveAttempts", true, func(s *workflow.Store, after workflow.Cursor, limit int) ([]string, workflow.Cursor, error) {
			p, err := s.Engine().ActiveAttempts(e.Ctx, workflow.ActiveAttemptQuery{RunID: "r", After: after, Limit: limit})
			return identitiesOf(p.Items), p.Next, err
		}},
		{"ActiveLeases", true, func(s *workflow.Store, after workflow.Cursor, limit int) ([]string, workflow.Cursor, error) {
			p, err := s.Engine().ActiveLeases(e.Ctx, workflow.LeaseQuery{RunID: "r", After: after, Limit: limit})
			out := []string{}
			for _, l := range p.Items {
				out = append(out, fmt.Sprintf("%v", l.Key))
			}
			return out, p.Next, err
		}},
		{"Cancellations", false, func(s *workflow.Store, after workflow.Cursor, limit int) ([]string, workflow.Cursor, error) {
			p, err := s.Engine().Cancellations(e.Ctx, workflow.CancellationQuery{After: after, Limit: limit})
			out := []string{}
			for _, rc := range p.Items {
				out = append(out, rc.RunID)
			}
			return out, p.Next, err
		}},
		{"StuckAttempts", false, func(s *workflow.Store, after workflow.Cursor, limit int) ([]string, workflow.Cursor, error) {
			p, err := s.Engine().StuckAttempts(e.Ctx, workflow.StuckQuery{OlderThan: time.Millisecond, After: after, Limit: limit}, now)
			out := []string{}
			for _, sa := range p.Items {
				out = append(out, sa.Attempt.Identity)
			}
			return out, p.Next, err
		}},
		{"TimedOutAttempts", false, func(s *workflow.Store, after workflow.Cursor, limit int) ([]string, workflow.Cursor, error) {
			p, err := s.Engine().TimedOutAttempts(e.Ctx, workflow.TimeoutQuery{Default: time.Millisecond, After: after, Limit: limit}, now)
			out := []string{}
			for _, t := range p.Items {
				out = append(out, t.Attempt.Identity)
			}
			return out, p.Next, err
		}},
	}
}

// casePagingVisitsOnce: every listing, paged with limits 1, 2 and 3,
// returns what one large page returns, each item once and in order; no
// page holds more than its limit; the last page's Next is empty and only
// the last page's is; a listing that returns every row it reads never
// returns an empty page, so it takes exactly ceil(n/limit) pages.
func casePagingVisitsOnce(e *env) {
	s := store(e)
	ls := pagingFixture(e, s)
	for _, l := range ls {
		whole, next, err := l.list(s, "", workflow.MaxPageLimit)
		require.NoError(e.T, err, l.name)
		assert.Empty(e.T, next, "%s: one page of MaxPageLimit holds everything", l.name)
		require.GreaterOrEqual(e.T, len(whole), 2, "%s: the fixture gives it items", l.name)
		for _, limit := range []int{1, 2, 3} {
			var got []string
			var after workflow.Cursor
			pages := 0
			for ; ; pages++ {
				require.Less(e.T, pages, 100, "%s limit %d: the listing ends", l.name, limit)
				items, next, err := l.list(s, after, limit)
				require.NoError(e.T, err, "%s limit %d", l.name, limit)
				assert.LessOrEqual(e.T, len(items), limit, "%s: a page holds at most its limit", l.name)
				if l.exact {
					assert.NotEmpty(e.T, items, "%s limit %d: no empty page", l.name, limit)
				}
				got = append(got, items...)
				if next == "" {
					break
				}
				assert.NotEqual(e.T, after, next, "%s: Next moves on", l.name)
				after = next
			}
			assert.Equal(e.T, whole, got, "%s limit %d: small pages return what one page returns, each item once, in order", l.name, limit)
			if l.exact {
				assert.Equal(e.T, (len(whole)+limit-1)/limit, pages+1, "%s limit %d: Next is empty on the last item's page", l.name, limit)
			}
		}
	}
}

// casePagingRefusesCursors: a cursor is refused with ErrInvalidInput by
// every listing that did not produce it (another listing's, a string that
// is not a cursor, a cursor that names no position) and the refusal reads
// nothing.
func casePagingRefusesCursors(e *env) {
	s := store(e)
	ls := pagingFixture(e, s)
	ctr := newCounting(e.B)
	cs := e.newStore(ctr)
	own := map[string]workflow.Cursor{}
	for _, l := range ls {
		_, next, err := l.list(s, "", 1)
		require.NoError(e.T, err, l.name)
		require.NotEmpty(e.T, next, "%s: a page of one has a next page", l.name)
		own[l.name] = next
		_, _, err = l.list(s, next, 1)
		require.NoError(e.T, err, "%s takes its own cursor", l.name)
	}
	garbage := []workflow.Cursor{"garbage", "!!", "AQ", workflow.Cursor("x" + string(own["Events"])),
		own["Events"][:len(own["Events"])-1], workflow.EventCursor(-1), workflow.MemberCursor(-1)}
	for _, l := range ls {
		var bad []workflow.Cursor
		for name, c := range own {
			if name != l.name && !(l.name+" descending" == name || name+" descending" == l.name) {
				bad = append(bad, c)
			}
		}
		bad = append(bad, garbage...)
		for _, c := range bad {
			ctr.reset()
			_, _, err := l.list(cs, c, 1)
			requireIs(e.T, err, workflow.ErrInvalidInput, "%s given cursor %q", l.name, c)
			assert.Zero(e.T, ctr.rows.Load(), "%s: a refused cursor reads nothing", l.name)
		}
	}
	// Constructors resume where a caller stands.
	evs, _, err := ls[0].list(s, "", 3)
	require.NoError(e.T, err)
	var seq int64
	_, err = fmt.Sscan(evs[1], &seq)
	require.NoError(e.T, err)
	page, err := s.Events(e.Ctx, workflow.EventQuery{RunID: "r", After: workflow.EventCursor(seq), Limit: 1})
	require.NoError(e.T, err)
	require.Len(e.T, page.Items, 1)
	assert.Equal(e.T, evs[2], fmt.Sprint(page.Items[0].Seq), "EventCursor(seq) resumes after that event")
	first, err := s.Events(e.Ctx, workflow.EventQuery{RunID: "r", After: workflow.EventCursor(0), Limit: 1})
	require.NoError(e.T, err)
	assert.Equal(e.T, evs[0], fmt.Sprint(first.Items[0].Seq), "EventCursor(0) is the beginning")
	atts := attemptsOf(e, s, "r")
	ap, err := s.Attempts(e.Ctx, workflow.AttemptQuery{RunID: "r", After: workflow.AttemptCursor(atts[0]), Limit: 1})
	require.NoError(e.T, err)
	require.Len(e.T, ap.Items, 1)
	assert.Equal(e.T, atts[1].Identity, ap.Items[0].Identity, "AttemptCursor(a) resumes after a")
	_, err = s.Attempts(e.Ctx, workflow.AttemptQuery{After: workflow.AttemptCursor(workflow.Attempt{})})
	requireIs(e.T, err, workflow.ErrInvalidInput, "the zero attempt is no position")
}

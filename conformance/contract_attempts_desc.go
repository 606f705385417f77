package conformance

import (
	"fmt"
	"slices"

	"github.com/wfstore/wfstore/backend"
)

// testAttemptsDescending checks AttemptQuery.Descending: the reverse of the
// ascending order under every filter, pages that resume strictly before the
// cursor, and cursors that fall between rows.
func testAttemptsDescending(e *env) {
	asc := attemptFixture(e)
	want := slices.Clone(asc)
	slices.Reverse(want)
	e.equal("Attempts(all, descending) records", want, e.attempts(backend.AttemptQuery{Descending: true, Limit: 100}))
	for _, q := range []backend.AttemptQuery{
		{RunID: "run-1"}, {RunID: "run-2"}, {Status: backend.AttemptPrepared}, {Status: backend.AttemptRunning},
		{RunID: "run-1", Status: backend.AttemptRunning}, {RunID: "run-2", Status: backend.AttemptSucceeded}, {},
	} {
		w := pick(want, func(a backend.Attempt) bool {
			return (q.RunID == "" || a.Key.RunID == q.RunID) && (q.Status == "" || a.Status == q.Status)
		})
		q.Descending, q.Limit = true, 100
		e.equal(fmt.Sprintf("Attempts(run %q, status %q, descending)", q.RunID, q.Status), identities(w), identities(e.attempts(q)))
		for _, limit := range []int{1, 2, 4} {
			var got []string
			q.Limit, q.After = limit, backend.AttemptCursor{}
			for range 20 {
				page := e.attempts(q)
				if len(page) == 0 {
					break
				}
				got = append(got, identities(page)...)
				last := page[len(page)-1]
				q.After = backend.AttemptCursor{PreparedMS: last.PreparedMS, Identity: last.Identity}
			}
			e.equal(fmt.Sprintf("Attempts(run %q, status %q, descending) pages of %d", q.RunID, q.Status, limit), identities(w), got)
		}
	}
	// Ascending order: z zz B Z a é BB m x. Strictly before (10, "") is
	// PreparedMS < 10; strictly before (10, "Z") adds (10, "B").
	got := e.attempts(backend.AttemptQuery{Descending: true, After: backend.AttemptCursor{PreparedMS: 10}, Limit: 100})
	e.equal("Attempts descending before (10, \"\")", []string{"zz", "z"}, identities(got))
	got = e.attempts(backend.AttemptQuery{Descending: true, After: backend.AttemptCursor{PreparedMS: 10, Identity: "Z"}, Limit: 100})
	e.equal("Attempts descending before (10, \"Z\")", []string{"B", "zz", "z"}, identities(got))
	got = e.attempts(backend.AttemptQuery{RunID: "run-1", Descending: true, After: backend.AttemptCursor{PreparedMS: 10, Identity: "Z"}, Limit: 100})
	e.equal("Attempts(run-1) descending before (10, \"Z\")", []string{"B", "zz"}, identities(got))
	if n := len(e.attempts(backend.AttemptQuery{Descending: true, Limit: 0})); n != 0 {
		e.T.Errorf("Attempts(descending, Limit 0) returned %d rows", n)
	}
}

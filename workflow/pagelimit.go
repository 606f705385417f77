package workflow

// Every page or batch limit of the API (DispatchOptions.Limit,
// ReconcileOptions.Limit for ReconcilePrepared and Redispatch, the Limit of
// every listing's query: EventQuery, AttemptQuery, MemberQuery, RetryQuery,
// ActiveAttemptQuery, LeaseQuery, CancellationQuery, StuckQuery,
// TimeoutQuery) follows one rule:
//
//   - 0 means DefaultPageLimit;
//   - 1 to MaxPageLimit is taken as given;
//   - a negative limit or one above MaxPageLimit fails with an error
//     matching ErrInvalidInput, before anything is read or written.
//
// The same "zero means the default" reading applies to the fields of a
// run's Limits (zero fields take the Default* run limits) and of a child
// run's Limits (zero fields inherit the parent's). Sizes that describe what
// is created rather than how much is read, a fan-out group's member count
// (1 to MaxPageLimit) and MaxConcurrency (positive), have no default and
// must be given.

// MaxPageLimit is the largest limit any list, scan or batch accepts.
const MaxPageLimit = 1000

// DefaultPageLimit is the limit a zero limit stands for.
const DefaultPageLimit = 100

// pageLimit applies the page-limit rule to limit, returning the limit to
// use. field names the limit, e.g. "history limit", giving the error text
// "workflow: history limit must be 0 to 1000 (0 means 100)".
func pageLimit(field string, limit int) (int, error) {
	switch {
	case limit == 0:
		return DefaultPageLimit, nil
	case limit < 0 || limit > MaxPageLimit:
		return 0, invalid(field, "must be 0 to %d (0 means %d)", MaxPageLimit, DefaultPageLimit)
	}
	return limit, nil
}

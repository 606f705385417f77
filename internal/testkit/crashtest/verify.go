package crashtest

import (
	"context"
	"fmt"

	"github.com/wfstore/wfstore/workflow"
)

// AllAttempts reads every attempt of s, page by page.
func AllAttempts(ctx context.Context, s *workflow.Store) ([]workflow.Attempt, error) {
	var atts []workflow.Attempt
	q := workflow.AttemptQuery{Limit: workflow.MaxPageLimit}
	for {
		page, err := s.Attempts(ctx, q)
		if err != nil {
			return nil, err
		}
		atts = append(atts, page.Items...)
		if page.Next == "" {
			return atts, nil
		}
		q.After = page.Next
	}
}

// LedgerProblems checks a crash test's final attempts against its owner's
// ledger, and returns one message per problem: each activation of keys
// has exactly one attempt; every identity the ledger names (called,
// refused, receipted) is an attempt's; a mutating attempt was called at
// most once; every receipt the owner holds is persisted on its attempt.
func LedgerProblems(atts []workflow.Attempt, st LedgerState, keys []workflow.ActivationKey) []string {
	var out []string
	byIdentity := map[string]workflow.Attempt{}
	perAct := map[workflow.ActivationKey]int{}
	for _, a := range atts {
		byIdentity[a.Identity] = a
		perAct[a.Key.ActivationKey]++
	}
	for _, k := range keys {
		if n := perAct[k]; n != 1 {
			out = append(out, fmt.Sprintf("activation %v has %d attempts, want exactly 1", k, n))
		}
	}
	for id, n := range st.Calls {
		a, ok := byIdentity[id]
		if !ok {
			out = append(out, fmt.Sprintf("the owner's ledger names %s, which matches no attempt", id))
			continue
		}
		if a.SideEffect == workflow.Mutating && n > 1 {
			out = append(out, fmt.Sprintf("the owner was called %d times for mutating attempt %s", n, id))
		}
	}
	for id := range st.Refused {
		if _, ok := byIdentity[id]; !ok {
			out = append(out, fmt.Sprintf("the owner's ledger refuses %s, which matches no attempt", id))
		}
	}
	for id := range st.Receipts {
		if a, ok := byIdentity[id]; !ok || string(a.Receipt) != string(ReceiptOf(id)) {
			out = append(out, fmt.Sprintf("the owner holds a receipt for %s that was not persisted (status %s)", id, a.Status))
		}
	}
	return out
}

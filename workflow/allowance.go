package workflow

import (
	"context"

	"github.com/wfstore/wfstore/backend"
)

// Allowance is an execution-allowance observation. A nil count is unknown:
// the observation read at most AllowanceReadBudget+1 rows and could not
// tell. Counts saturate at their cap. Reading it grants nothing.
type Allowance struct {
	RunCap       int64
	RunConsumed  *int64
	RootCap      int64
	RootConsumed *int64
}

// Exhausted is three-valued: exhausted reports whether a known budget is
// used up; known is false when that cannot be told (a count unknown with
// the other below its cap, or inconsistent facts such as consumed > cap).
func (a Allowance) Exhausted() (exhausted, known bool) {
	valid := func(c *int64, cap int64) (ex, ok bool) {
		if c == nil || cap <= 0 || *c > cap {
			return false, false
		}
		return *c == cap, true
	}
	rex, rok := valid(a.RunConsumed, a.RunCap)
	tex, tok := valid(a.RootConsumed, a.RootCap)
	if rex || tex {
		return true, true
	}
	if rok && tok {
		return false, true
	}
	return false, false
}

// AllowanceObservation observes the run's and its composition root's
// execution allowance by bounded counting: it never reads
// more than AllowanceReadBudget+1 attempts or links per count, and reports
// a count as unknown rather than estimating it. (Enforcement uses O(1)
// durable counters instead; this is the independent, bounded view.)
func (s *Engine) AllowanceObservation(ctx context.Context, runID string) (Allowance, error) {
	var out Allowance
	if err := ValidateID("run id", runID); err != nil {
		return out, err
	}
	err := s.view(ctx, func(r backend.ReadTx) error {
		run, err := backend.GetRun(ctx, r, runID)
		if err != nil {
			return notFoundFrom(err, "run %q", runID)
		}
		out, err = allowanceIn(ctx, r, run)
		return err
	})
	return out, err
}

// allowanceIn is AllowanceObservation of run inside the snapshot r.
func allowanceIn(ctx context.Context, r backend.ReadTx, run backend.Run) (Allowance, error) {
	var out Allowance
	const b = AllowanceReadBudget
	root := run
	if run.RootID != run.ID {
		var err error
		if root, err = backend.GetRun(ctx, r, run.RootID); err != nil {
			return out, notFoundFrom(err, "root run %q", run.RootID)
		}
	}
	out.RunCap, out.RootCap = run.Limits.NodeExecutionCap, root.Limits.NodeExecutionCap
	if out.RunCap <= 0 || out.RootCap <= 0 {
		return out, stateErr(ErrConflict, "execution allowance cap must be positive")
	}
	c, err := r.CountAttempts(ctx, backend.AttemptCountQuery{RunID: run.ID, Limit: int(min(out.RunCap, b+1))})
	if err != nil {
		return out, err
	}
	if n := int64(c); n <= b || n == out.RunCap {
		out.RunConsumed = &n
	}
	links, err := r.ChildRuns(ctx, backend.ChildRunQuery{RootRunID: root.ID, Limit: b + 1})
	if err != nil {
		return out, err
	}
	if len(links) > b {
		return out, nil
	}
	consumed := int64(0)
	ids := make([]string, 0, len(links)+1)
	ids = append(ids, root.ID)
	for _, l := range links {
		ids = append(ids, l.ChildRunID)
	}
	for _, id := range ids {
		if consumed >= out.RootCap || consumed > b {
			break
		}
		limit := min(out.RootCap-consumed, b+1-consumed)
		n, err := r.CountAttempts(ctx, backend.AttemptCountQuery{RunID: id, Limit: int(limit)})
		if err != nil {
			return out, err
		}
		consumed += int64(n)
	}
	if consumed <= b || consumed == out.RootCap {
		out.RootConsumed = &consumed
	}
	return out, nil
}

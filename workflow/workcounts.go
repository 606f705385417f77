package workflow

import (
	"context"
	"time"

	"github.com/wfstore/wfstore/backend"
)

// Bounds of WorkCounts.
const (
	// DefaultWorkBound is the bound a zero bound stands for.
	DefaultWorkBound = 10000
	// MaxWorkBound is the largest bound WorkCounts accepts.
	MaxWorkBound = 1000000
)

// WorkCount is one count of WorkCounts: N records, or at least N when
// Capped (the scan stopped at the bound; more may exist).
type WorkCount struct {
	N      int64
	Capped bool
}

// WorkCounts is the work a store holds, as one snapshot read it.
type WorkCounts struct {
	// Pending counts the admissible activations (those a dispatch pass
	// may admit).
	Pending WorkCount
	// Admitted counts the admitted and running attempts (handed to their
	// owner, not observed terminal).
	Admitted WorkCount
	// OldestAdmitted is the age at now of the earliest admitted time
	// among the admitted and running attempts counted (0 when there is
	// none). When Admitted is capped it is taken over the attempts read,
	// those prepared earliest.
	OldestAdmitted time.Duration
	// RetriesDue counts the automatic retries due at now (retry
	// schedules due by now) of failed and running runs.
	RetriesDue WorkCount
	// Runs counts the runs by status; every status is present.
	Runs map[RunStatus]WorkCount
}

// workRunStatuses are the run statuses WorkCounts counts, in order.
var workRunStatuses = []backend.RunStatus{backend.RunRunning, backend.RunPaused, backend.RunCompleted,
	backend.RunFailed, backend.RunCancelled, backend.RunRepairRequired}

// WorkCounts counts, from one snapshot, the admissible activations, the
// admitted and running attempts (and the oldest one's age at now), the
// retries due at now and the runs by status. It writes nothing and reads
// no store-wide counter: each count pages its own index (the admissible
// index, the attempt index by status, the runs by status and each failed
// or running run's due schedules) and stops at bound records, reporting
// at least bound with Capped set. bound is 0 (DefaultWorkBound) to
// MaxWorkBound; the retries due are read from the runs the runs-by-status
// count read, so they are capped when the failed or running runs are, and it reads at most MaxPageLimit
// due schedules of one run (Capped when a run holds more).
//
// Cost: at most about bound rows per count (runs by status: per status),
// read in pages of MaxPageLimit, in one read transaction.
func (s *Store) WorkCounts(ctx context.Context, bound int, now time.Time) (WorkCounts, error) {
	switch {
	case bound == 0:
		bound = DefaultWorkBound
	case bound < 0 || bound > MaxWorkBound:
		return WorkCounts{}, invalid("work bound", "must be 0 to %d, got %d", MaxWorkBound, bound)
	}
	at, err := toMS("now", now)
	if err != nil {
		return WorkCounts{}, err
	}
	var wc WorkCounts
	err = s.view(ctx, func(r backend.ReadTx) error {
		wc = WorkCounts{Runs: map[RunStatus]WorkCount{}}
		// Admissible activations.
		var after backend.ActivationKey
		for wc.Pending.N < int64(bound) {
			n := min(MaxPageLimit, bound-int(wc.Pending.N))
			rows, err := r.AdmissibleActivations(ctx, backend.AdmissibleQuery{After: after, Limit: n})
			if err != nil {
				return err
			}
			wc.Pending.N += int64(len(rows))
			if len(rows) < n {
				break
			}
			after = rows[len(rows)-1].Key
		}
		wc.Pending.Capped, err = more(wc.Pending.N, bound, func() (bool, error) {
			rows, err := r.AdmissibleActivations(ctx, backend.AdmissibleQuery{After: after, Limit: 1})
			return len(rows) > 0, err
		})
		if err != nil {
			return err
		}
		// Admitted and running attempts.
		oldest := int64(0)
		for _, st := range []backend.AttemptStatus{backend.AttemptAdmitted, backend.AttemptRunning} {
			var cur backend.AttemptCursor
			for {
				if wc.Admitted.N >= int64(bound) {
					rows, err := r.Attempts(ctx, backend.AttemptQuery{Status: st, After: cur, Limit: 1})
					if err != nil {
						return err
					}
					wc.Admitted.Capped = wc.Admitted.Capped || len(rows) > 0
					break
				}
				n := min(MaxPageLimit, bound-int(wc.Admitted.N))
				rows, err := r.Attempts(ctx, backend.AttemptQuery{Status: st, After: cur, Limit: n})
				if err != nil {
					return err
				}
				for _, a := range rows {
					if a.AdmittedMS > 0 && (oldest == 0 || a.AdmittedMS < oldest) {
						oldest = a.AdmittedMS
					}
				}
				wc.Admitted.N += int64(len(rows))
				if len(rows) < n {
					break
				}
				last := rows[len(rows)-1]
				cur = backend.AttemptCursor{PreparedMS: last.PreparedMS, Identity: last.Identity}
			}
		}
		if oldest > 0 && oldest < at {
			wc.OldestAdmitted = msToDuration(at - oldest)
		}
		// Runs by status, and the due retries of failed and running runs.
		for _, st := range workRunStatuses {
			c, ids := WorkCount{}, []string(nil)
			after := ""
			for {
				if c.N >= int64(bound) {
					rows, err := r.Runs(ctx, backend.RunQuery{Status: st, After: after, Limit: 1})
					if err != nil {
						return err
					}
					c.Capped = len(rows) > 0
					break
				}
				n := min(MaxPageLimit, bound-int(c.N))
				rows, err := r.Runs(ctx, backend.RunQuery{Status: st, After: after, Limit: n})
				if err != nil {
					return err
				}
				c.N += int64(len(rows))
				if st == backend.RunFailed || st == backend.RunRunning {
					for _, run := range rows {
						ids = append(ids, run.ID)
					}
				}
				if len(rows) < n {
					break
				}
				after = rows[len(rows)-1].ID
			}
			wc.Runs[RunStatus(st)] = c
			if c.Capped && len(ids) > 0 {
				wc.RetriesDue.Capped = true // runs of this status not read
			}
			for _, id := range ids {
				if wc.RetriesDue.N >= int64(bound) {
					wc.RetriesDue.Capped = true
					break
				}
				n := min(MaxPageLimit, bound-int(wc.RetriesDue.N))
				sc, err := r.DueSchedules(ctx, backend.ScheduleQuery{RunID: id, DueBy: at, Limit: n + 1})
				if err != nil {
					return err
				}
				if len(sc) > n {
					wc.RetriesDue.Capped = true
					sc = sc[:n]
				}
				wc.RetriesDue.N += int64(len(sc))
			}
		}
		return nil
	})
	if err != nil {
		return WorkCounts{}, err
	}
	return wc, nil
}

// more reports whether a count that reached bound has more records to
// read (probe reads one past it); false when it stayed under bound.
func more(n int64, bound int, probe func() (bool, error)) (bool, error) {
	if n < int64(bound) {
		return false, nil
	}
	return probe()
}

package workflow

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/wfstore/wfstore/backend"
	"github.com/wfstore/wfstore/event"
	"github.com/wfstore/wfstore/wftype"
	"github.com/wfstore/wfstore/workflow/internal/state"
)

// Pruning (retention) deletes the bulky history of finished runs: their
// events, attempts, leases and retry schedules. It keeps the run record, its
// link, its activations and fan-out groups, so the run can still be read,
// and leaves one run_pruned event as the run's only event, whose payload
// counts what was deleted.
//
// Which runs can be pruned: a run that can never change again on its own.
// That is a completed or cancelled run, or a failed run with no retry
// schedule and no active attempt, whose whole tree (its root and every run
// linked to that root) is each of these: settling a child run reads its
// parents. A failed run with a retry schedule or an active attempt is
// refused; RequestTreeCancellation of its root deletes its schedules
// (keeping it failed), and once its active attempts settle it can be
// pruned. Pruning a failed run ends it: without its attempts it can no
// longer be retried, so a failed run is pruned only when named, never
// chosen by AllFinished.
//
// What a pruned run still answers: GetRun (the record, with LastEventSeq
// advanced by the marker), GetActivation, the activations of RunSummary
// and Events (the run_pruned event). Operations that name one of its
// attempts (GetAttempt, ApplyObservation, Repair, ...) fail with
// ErrNotFound, and operations on the run itself keep refusing as they do
// for any completed, cancelled or failed run (ErrIneligible). The run's counters
// (AttemptCount, TreeAttemptCount) are kept, so allowances stay as they were.

// PruneOptions selects the runs to prune and bounds the work.
type PruneOptions struct {
	// Runs names the runs to prune: 1 to MaxPageLimit distinct run ids.
	// Every one must exist and be prunable (see Prune), or the call
	// refuses as a whole before writing anything.
	Runs []string
	// FinishedBefore, when set, is the cut-off: a named run whose record
	// was last updated (by its terminal transition or later) at or after
	// it is skipped, not pruned, and reported so. Zero means no cut-off.
	FinishedBefore time.Time
	// BatchSize bounds the records one transaction deletes: 0 means
	// DefaultPageLimit, 1 to MaxPageLimit is taken as given. An attempt is
	// deleted with its leases in one transaction, so a transaction whose
	// first attempt has more leases than BatchSize-1 deletes that attempt
	// and its leases alone.
	BatchSize int
	// DryRun counts, per run, what would be deleted, and writes nothing.
	DryRun bool
	// AllFinished, with Runs empty, lets Prune choose the runs: it reads
	// the store's runs in id order, strictly after After, and takes the
	// completed or cancelled ones whose whole tree is prunable (see Prune)
	// and that finished before FinishedBefore (a required
	// cut-off in this mode), at most Limit of them (0 means
	// DefaultPageLimit). Runs it passes over are not refused. It reads at
	// most 10×Limit runs per call; PruneReport.Next resumes after them.
	AllFinished bool
	After       string
	Limit       int
}

// PruneCounts is package wftype's PruneCounts.
type PruneCounts = wftype.PruneCounts

// addCounts adds d to c.
func addCounts(c *PruneCounts, d PruneCounts) {
	c.Events += d.Events
	c.Attempts += d.Attempts
	c.Leases += d.Leases
	c.Schedules += d.Schedules
}

// PrunedRun reports one named run.
type PrunedRun struct {
	RunID  string    `json:"run_id"`
	Status RunStatus `json:"status"`
	// Skipped says why the run was left alone (it finished at or after
	// the cut-off); empty when it was pruned (or, in a dry run, would be).
	Skipped string `json:"skipped,omitempty"`
	// AlreadyPruned: the run had been pruned before and had nothing left
	// to delete; nothing was written.
	AlreadyPruned bool `json:"already_pruned,omitempty"`
	// Deleted counts what was deleted (in a dry run: what would be).
	Deleted PruneCounts `json:"deleted"`
	// Transactions is the number of committed transactions that pruned the
	// run (0 in a dry run).
	Transactions int `json:"transactions"`
}

// PruneReport is what Prune did, run by run in the order named.
type PruneReport struct {
	DryRun bool        `json:"dry_run"`
	Runs   []PrunedRun `json:"runs"`
	// Next, in AllFinished mode, is the After of the next call: empty when
	// the scan reached the last run.
	Next string `json:"next,omitempty"`
}

// Prune deletes the events, attempts, leases and retry schedules of the
// named finished runs, in transactions of at most BatchSize deleted
// records each, and leaves each pruned run with one run_pruned event.
//
// It first checks every named run in one snapshot: a missing run fails
// with ErrNotFound; a run that is not completed, cancelled, or failed with
// no retry schedule and no active attempt, or whose tree holds a run that
// is not, fails with ErrIneligible; either way
// nothing is written. Each transaction checks the run's status again.
// Runs of other trees, and the records Prune keeps, are not touched. A
// prune that takes several transactions marks the run in its first one
// with a run_prune_started event counting what the run holds (then the
// run's last event); the transaction that finishes deletes that marker and
// appends run_pruned with its counts. So a prune interrupted part-way
// leaves the run partly pruned, still terminal and marked, which Verify
// accepts; pruning it again finishes the work and the run_pruned event
// counts everything the run held when the prune began, however many
// invocations it took. Pruning a pruned run writes nothing. now dates the
// events.
func (s *Store) Prune(ctx context.Context, opts PruneOptions, now time.Time) (PruneReport, error) {
	rep := PruneReport{DryRun: opts.DryRun}
	at, err := toMS("now", now)
	if err != nil {
		return rep, err
	}
	cutoff, err := optionalMS("finished-before cut-off", opts.FinishedBefore)
	if err != nil {
		return rep, err
	}
	batchSize, err := pageLimit("prune batch size", opts.BatchSize)
	if err != nil {
		return rep, err
	}
	var runs []backend.Run
	if opts.AllFinished {
		if runs, rep.Next, err = s.finishedRuns(ctx, opts, cutoff); err != nil {
			return rep, err
		}
	} else {
		ids, err := pruneCandidates(opts)
		if err != nil {
			return rep, err
		}
		if runs, err = s.pruneEligible(ctx, ids); err != nil {
			return rep, err
		}
	}
	for _, run := range runs {
		pr := PrunedRun{RunID: run.ID, Status: RunStatus(run.Status)}
		if cutoff != 0 && run.UpdatedMS >= cutoff {
			pr.Skipped = "finished at or after the cut-off"
			rep.Runs = append(rep.Runs, pr)
			continue
		}
		if opts.DryRun {
			pr.Deleted, pr.AlreadyPruned, err = s.pruneCount(ctx, run.ID)
		} else {
			err = s.pruneRun(ctx, run.ID, batchSize, at, &pr)
		}
		if err != nil {
			return rep, err
		}
		rep.Runs = append(rep.Runs, pr)
	}
	return rep, nil
}

// pruneCandidates validates the named runs (Runs mode).
func pruneCandidates(opts PruneOptions) ([]string, error) {
	switch {
	case len(opts.Runs) == 0:
		return nil, invalid("prune runs", "must name at least one run, or set AllFinished")
	case len(opts.Runs) > MaxPageLimit:
		return nil, invalid("prune runs", "must name at most %d runs", MaxPageLimit)
	}
	seen := make(map[string]bool, len(opts.Runs))
	for _, id := range opts.Runs {
		if err := ValidateID("run id", id); err != nil {
			return nil, err
		}
		if seen[id] {
			return nil, invalid("prune runs", "name run %q twice", id)
		}
		seen[id] = true
	}
	return opts.Runs, nil
}

// finishedRuns selects, in one snapshot, up to opts.Limit prunable runs of
// finished trees that finished before cutoff, after opts.After in id order,
// reading at most 10×Limit runs. It returns them and the cursor of the
// next call ("" once the last run was read).
func (s *Store) finishedRuns(ctx context.Context, opts PruneOptions, cutoff int64) ([]backend.Run, string, error) {
	if len(opts.Runs) > 0 {
		return nil, "", invalid("prune runs", "name runs or set AllFinished, not both")
	}
	if cutoff == 0 {
		return nil, "", invalid("finished-before cut-off", "is required to prune every finished run")
	}
	if opts.After != "" {
		if err := ValidateID("prune cursor", opts.After); err != nil {
			return nil, "", err
		}
	}
	limit, err := pageLimit("prune run limit", opts.Limit)
	if err != nil {
		return nil, "", err
	}
	var out []backend.Run
	var next string
	err = s.view(ctx, func(r backend.ReadTx) error {
		out, next = out[:0], ""
		settled := map[string]bool{} // root → whole tree prunable
		q := backend.RunQuery{After: opts.After, Limit: limit}
		for read := 0; read < 10*limit && len(out) < limit; {
			page, err := r.Runs(ctx, q)
			if err != nil {
				return err
			}
			for _, run := range page {
				read++
				q.After, next = run.ID, run.ID
				if (run.Status != backend.RunCompleted && run.Status != backend.RunCancelled) || run.UpdatedMS >= cutoff {
					continue // a failed run is pruned only when named
				}
				ok, seen := settled[run.RootID]
				if !seen {
					err := pruneTreeSettled(ctx, r, run)
					if err != nil && !isIneligible(err) {
						return err
					}
					ok = err == nil
					settled[run.RootID] = ok
				}
				if ok {
					out = append(out, run)
				}
				if len(out) == limit || read == 10*limit {
					return nil
				}
			}
			if len(page) < q.Limit {
				next = ""
				return nil
			}
		}
		return nil
	})
	return out, next, err
}

// prunable reports whether run can never change again on its own: it is
// completed or cancelled, or it is failed with no retry schedule left to
// requeue it and no active attempt whose settlement could still change it.
// (An explicit retry of a failed run is an operator's choice; pruning it is
// the operator's choice to end it.)
func prunable(ctx context.Context, r backend.ReadTx, run backend.Run) (bool, error) {
	switch run.Status {
	case backend.RunCompleted, backend.RunCancelled:
		return true, nil
	case backend.RunFailed:
		if run.ActiveCount > 0 {
			return false, nil
		}
		due, err := r.DueSchedules(ctx, backend.ScheduleQuery{RunID: run.ID, DueBy: math.MaxInt64, Limit: 1})
		return len(due) == 0, err
	}
	return false, nil
}

// notPrunable is the refusal of a run that prunable rejects.
func notPrunable(run backend.Run) error {
	if run.Status == backend.RunFailed {
		return stateErr(ErrIneligible, "run %q is failed with a retry schedule or an active attempt: it may still change", run.ID)
	}
	return stateErr(ErrIneligible, "run %q is %s: only completed, cancelled and finished failed runs are pruned", run.ID, run.Status)
}

// pruneEligible reads the named runs and their trees in one snapshot and
// refuses unless every run and every run of their trees is prunable.
func (s *Store) pruneEligible(ctx context.Context, ids []string) ([]backend.Run, error) {
	var out []backend.Run
	err := s.view(ctx, func(r backend.ReadTx) error {
		out = out[:0]
		f, err := r.Load(ctx, backend.Lookup{Runs: ids})
		if err != nil {
			return err
		}
		checked := map[string]bool{} // roots whose tree is prunable
		for _, id := range ids {
			run, ok := f.Runs[id]
			if !ok {
				return stateErr(ErrNotFound, "run %q", id)
			}
			if ok, err := prunable(ctx, r, run); err != nil || !ok {
				if err != nil {
					return err
				}
				return notPrunable(run)
			}
			if !checked[run.RootID] {
				if err := pruneTreeSettled(ctx, r, run); err != nil {
					return err
				}
				checked[run.RootID] = true
			}
			out = append(out, run)
		}
		return nil
	})
	return out, err
}

// pruneTreeSettled fails with ErrIneligible unless the root of run's tree
// and every run linked to that root are prunable. It reads
// the tree a page at a time.
func pruneTreeSettled(ctx context.Context, r backend.ReadTx, run backend.Run) error {
	root := run.RootID
	ids := []string{root}
	q := backend.ChildRunQuery{RootRunID: root, Limit: MaxPageLimit}
	for {
		links, err := r.ChildRuns(ctx, q)
		if err != nil {
			return err
		}
		for _, l := range links {
			ids = append(ids, l.ChildRunID)
		}
		f, err := r.Load(ctx, backend.Lookup{Runs: ids})
		if err != nil {
			return err
		}
		for _, id := range ids {
			t, ok := f.Runs[id]
			if !ok {
				continue // a link whose run is not there yet cannot hold work
			}
			if ok, err := prunable(ctx, r, t); err != nil || !ok {
				if err != nil {
					return err
				}
				return stateErr(ErrIneligible, "run %q is in the tree of %q, whose run %q is %s and may still change", run.ID, root, id, t.Status)
			}
		}
		if len(links) < q.Limit {
			return nil
		}
		last := links[len(links)-1]
		q.After = backend.ChildRunCursor{CreatedMS: last.CreatedMS, ChildRunID: last.ChildRunID}
		ids = ids[:0]
	}
}

// attemptLeases returns the stored leases of atts: each attempt's leases
// are keyed by its activation's claims.
func attemptLeases(ctx context.Context, r backend.ReadTx, atts []backend.Attempt) (map[backend.AttemptKey][]backend.Lease, error) {
	var actKeys []backend.ActivationKey
	seen := map[backend.ActivationKey]bool{}
	for _, a := range atts {
		if !seen[a.Key.ActivationKey] {
			seen[a.Key.ActivationKey] = true
			actKeys = append(actKeys, a.Key.ActivationKey)
		}
	}
	f, err := r.Load(ctx, backend.Lookup{Activations: actKeys})
	if err != nil {
		return nil, err
	}
	var keys []backend.LeaseKey
	for _, a := range atts {
		for _, c := range f.Activations[a.Key.ActivationKey].Claims {
			keys = append(keys, backend.LeaseKey{AttemptKey: a.Key, Resource: c.Resource, Mode: c.Mode})
		}
	}
	out := map[backend.AttemptKey][]backend.Lease{}
	if len(keys) == 0 {
		return out, nil
	}
	g, err := r.Load(ctx, backend.Lookup{Leases: keys})
	if err != nil {
		return nil, err
	}
	for _, k := range keys {
		if l, ok := g.Leases[k]; ok {
			out[k.AttemptKey] = append(out[k.AttemptKey], l)
		}
	}
	return out, nil
}

// pruneRun deletes the run's records, at most batchSize per transaction,
// and writes the run_pruned event in the transaction that deletes the last
// of them.
func (s *Store) pruneRun(ctx context.Context, runID string, batchSize int, at int64, pr *PrunedRun) error {
	for {
		var c PruneCounts
		var done, wrote bool
		err := s.update(ctx, func(tx backend.Tx, w *batch) error {
			c, done, wrote = PruneCounts{}, false, false
			run, err := backend.GetRun(ctx, tx, runID)
			if err != nil {
				return notFoundFrom(err, "run %q", runID)
			}
			if ok, err := prunable(ctx, tx, run); err != nil || !ok {
				if err != nil {
					return err
				}
				return notPrunable(run)
			}
			// The prune's marker, when an earlier transaction began it.
			started, plan, err := pruneStartedMarker(ctx, tx, run)
			if err != nil {
				return err
			}
			var full PruneCounts
			if started == nil {
				if full, _, err = countPrune(ctx, tx, runID); err != nil {
					return err
				}
			}
			budget := batchSize
			if started != nil && budget > 1 {
				budget-- // the transaction that finishes deletes the marker too
			}

			scheds, err := tx.DueSchedules(ctx, backend.ScheduleQuery{RunID: runID, DueBy: math.MaxInt64, Limit: budget})
			if err != nil {
				return err
			}
			schedDone := len(scheds) < budget
			for _, sc := range scheds {
				state.Remove(w, backend.RetrySchedule{Key: sc.Key})
				c.Schedules++
			}
			budget -= len(scheds)

			attDone, leaseDone, evDone, marked := false, false, false, false
			if budget > 0 {
				atts, err := tx.Attempts(ctx, backend.AttemptQuery{RunID: runID, Limit: budget})
				if err != nil {
					return err
				}
				attDone = len(atts) < budget
				held, err := attemptLeases(ctx, tx, atts)
				if err != nil {
					return err
				}
				for _, a := range atts {
					ls := held[a.Key]
					if 1+len(ls) > budget && c.Total() > 0 {
						attDone = false
						break
					}
					for _, l := range ls {
						state.Remove(w, backend.Lease{Key: l.Key})
						c.Leases++
					}
					state.Remove(w, backend.Attempt{Key: a.Key})
					c.Attempts++
					budget -= 1 + len(ls)
				}
			}
			if attDone && budget > 0 {
				// Unreleased leases not named by their activation's claims.
				if err := w.Apply(ctx, tx); err != nil {
					return err
				}
				ls, err := tx.Leases(ctx, backend.LeaseQuery{RunID: runID, Limit: budget})
				if err != nil {
					return err
				}
				leaseDone = len(ls) < budget
				for _, l := range ls {
					state.Remove(w, backend.Lease{Key: l.Key})
					c.Leases++
				}
				budget -= len(ls)
			}
			if leaseDone && budget > 0 {
				evs, err := tx.Events(ctx, backend.EventQuery{RunID: runID, Limit: budget + 1})
				if err != nil {
					return err
				}
				evDone = len(evs) <= budget
				for _, ev := range evs {
					if ev.Type == string(event.RunPruned) {
						marked = true
						continue
					}
					if ev.Type == string(event.RunPruneStarted) {
						continue
					}
					if budget == 0 {
						evDone = false
						break
					}
					state.Remove(w, backend.Event{RunID: ev.RunID, Seq: ev.Seq})
					c.Events++
					budget--
				}
			}
			done = schedDone && attDone && leaseDone && evDone
			switch {
			case !done && started == nil:
				// The first transaction of a prune that takes several
				// marks the run with what it holds: Verify reads the
				// marker to understand the partial prune, and the
				// transaction that finishes reports these counts.
				state.MarkPruneStarted(w, &run, full, at)
				state.Replace(w, run)
			case done && started != nil:
				state.Remove(w, backend.Event{RunID: runID, Seq: started.Seq})
				state.MarkPruned(w, &run, plan, at)
				state.Replace(w, run)
			case done && !marked:
				total := pr.Deleted
				addCounts(&total, c)
				state.MarkPruned(w, &run, total, at)
				state.Replace(w, run)
			}
			if w.Empty() && c.Total() == 0 {
				return errNoop
			}
			wrote = true
			return nil
		})
		if errors.Is(err, errNoop) {
			err = nil
		}
		if err != nil {
			return err
		}
		if wrote {
			pr.Transactions++
		}
		addCounts(&pr.Deleted, c)
		if done {
			pr.AlreadyPruned = pr.Transactions == 0
			return nil
		}
	}
}

// pruneCount counts, in one snapshot, what pruneRun would delete.
func (s *Store) pruneCount(ctx context.Context, runID string) (c PruneCounts, alreadyPruned bool, err error) {
	err = s.view(ctx, func(r backend.ReadTx) error {
		var err error
		c, alreadyPruned, err = countPrune(ctx, r, runID)
		return err
	})
	return c, alreadyPruned, err
}

// pruneStartedMarker returns the run_prune_started event that marks run as
// being pruned, and the counts it holds; nil when the run's last event is
// not that marker.
func pruneStartedMarker(ctx context.Context, r backend.ReadTx, run backend.Run) (*backend.Event, PruneCounts, error) {
	if run.LastEventSeq == 0 {
		return nil, PruneCounts{}, nil
	}
	last, err := r.Events(ctx, backend.EventQuery{RunID: run.ID, After: run.LastEventSeq - 1, Limit: 1})
	if err != nil {
		return nil, PruneCounts{}, err
	}
	if len(last) != 1 || last[0].Seq != run.LastEventSeq || last[0].Type != string(event.RunPruneStarted) {
		return nil, PruneCounts{}, nil
	}
	var p event.RunPruneStartedPayload
	if err := json.Unmarshal(last[0].Payload, &p); err != nil {
		return nil, PruneCounts{}, fmt.Errorf("run %q: its %s event: %w", run.ID, event.RunPruneStarted, err)
	}
	return &last[0], p.Deleting, nil
}

// countPrune counts, in r's snapshot, what pruning runID would delete.
func countPrune(ctx context.Context, r backend.ReadTx, runID string) (c PruneCounts, alreadyPruned bool, err error) {
	page := MaxPageLimit
	aq := backend.ActivationQuery{RunID: runID, Limit: page}
	for {
		acts, err := r.Activations(ctx, aq)
		if err != nil {
			return c, false, err
		}
		keys := make([]backend.ActivationKey, len(acts))
		for i, a := range acts {
			keys[i] = a.Key
		}
		f, err := r.Load(ctx, backend.Lookup{Schedules: keys})
		if err != nil {
			return c, false, err
		}
		c.Schedules += len(f.Schedules)
		if len(acts) < page {
			break
		}
		last := acts[len(acts)-1].Key
		aq.After = backend.NodeRef{NodeID: last.NodeID, ActivationID: last.ActivationID}
	}
	counted := map[backend.LeaseKey]bool{}
	tq := backend.AttemptQuery{RunID: runID, Limit: page}
	for {
		atts, err := r.Attempts(ctx, tq)
		if err != nil {
			return c, false, err
		}
		c.Attempts += len(atts)
		held, err := attemptLeases(ctx, r, atts)
		if err != nil {
			return c, false, err
		}
		for _, ls := range held {
			for _, l := range ls {
				counted[l.Key] = true
			}
		}
		if len(atts) < page {
			break
		}
		last := atts[len(atts)-1]
		tq.After = backend.AttemptCursor{PreparedMS: last.PreparedMS, Identity: last.Identity}
	}
	lq := backend.LeaseQuery{RunID: runID, Limit: page}
	for {
		ls, err := r.Leases(ctx, lq)
		if err != nil {
			return c, false, err
		}
		for _, l := range ls {
			counted[l.Key] = true
		}
		if len(ls) < page {
			break
		}
		k := ls[len(ls)-1].Key
		lq.After = k
	}
	c.Leases = len(counted)
	eq := backend.EventQuery{RunID: runID, Limit: page}
	for {
		evs, err := r.Events(ctx, eq)
		if err != nil {
			return c, false, err
		}
		for _, ev := range evs {
			switch ev.Type {
			case string(event.RunPruned):
				alreadyPruned = true
			case string(event.RunPruneStarted):
			default:
				c.Events++
			}
		}
		if len(evs) < page {
			break
		}
		eq.After = evs[len(evs)-1].Seq
	}
	alreadyPruned = alreadyPruned && c.Total() == 0
	return c, alreadyPruned, nil
}

package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/wfstore/wfstore/workflow"
)

// runIDs is a repeatable --run flag.
type runIDs []string

func (r *runIDs) String() string { return strings.Join(*r, ",") }

func (r *runIDs) Set(v string) error {
	*r = append(*r, v)
	return nil
}

func pruneCmd(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	var sf storeFlags
	var runs runIDs
	var before string
	var batch int
	var dry, asJSON, all bool
	var after, olderThan string
	var limit int
	fs := flag.NewFlagSet("prune", flag.ContinueOnError)
	fs.SetOutput(stderr)
	sf.register(fs)
	fs.Var(&runs, "run", "a run to prune (repeat the flag for several; at most 1000)")
	fs.StringVar(&before, "finished-before", "", "cut-off, RFC 3339: skip runs last updated at or after it")
	fs.IntVar(&batch, "batch", 0, "records deleted per transaction, 1..1000 (0 = 100; etcd: --max-txn-ops/16)")
	fs.BoolVar(&dry, "dry-run", false, "count what would be deleted and write nothing")
	fs.BoolVar(&asJSON, "json", false, "print the report as JSON")
	fs.StringVar(&olderThan, "older-than", "", "cut-off as an age, instead of --finished-before: skip runs last updated within it ("+ageForms+")")
	fs.BoolVar(&all, "all-finished", false, "instead of --run: every completed or cancelled run of a finished tree that finished before the cut-off (--older-than or --finished-before, required), a page at a time (failed runs are pruned only when named)")
	fs.StringVar(&after, "after", "", "with --all-finished: resume after this run id (the next: cursor a call prints)")
	fs.IntVar(&limit, "limit", 0, "with --all-finished: runs pruned per call, 1..1000 (0 = 100)")
	fs.Usage = func() {
		fmt.Fprint(stderr, `wfstore prune: delete the history of finished runs.

For each named run, deletes its events, attempts, leases and retry
schedules in transactions of at most --batch deleted records, and keeps the
run record and its activations, so the run can still be read; a pruned run
keeps one run_pruned event counting what went. A prune killed part-way
leaves the run marked (a run_prune_started event that verify accepts); run
the same prune again to finish it: its run_pruned event counts everything
the run held when the first invocation began.

Only runs that can never change again on their own are pruned:
completed or cancelled runs, and failed runs with no retry schedule and no
active attempt, whose whole tree (root and every linked run) is such. A
failed run with a retry schedule is refused; tree-cancel its root first
(it stays failed and loses its schedules). --all-finished never chooses a
failed run: pruning one ends it, so name it. If any named run is missing or not prunable, nothing is written
and the command exits 1. --dry-run reports what would be deleted.

  wfstore prune --db wfstore-demo.db --run RUN --dry-run
  wfstore prune --db wfstore-demo.db --all-finished --older-than 30d
  wfstore prune --db wfstore-demo.db --all-finished --finished-before 2026-12-01T00:00:00Z
  wfstore prune --backend postgres --dsn postgres://... --run A --run B --json

Flags:
`)
		fs.PrintDefaults()
	}
	if ok, err := parseFlags(fs, args, stderr); !ok {
		return err
	}
	if err := sf.check(); err != nil {
		return err
	}
	switch {
	case all && len(runs) > 0:
		return errors.New("give --run or --all-finished, not both")
	case !all && len(runs) == 0:
		return errors.New("name the runs to prune with --run ID (repeatable), or use --all-finished")
	case before != "" && olderThan != "":
		return errors.New("give --older-than or --finished-before, not both")
	case all && before == "" && olderThan == "":
		return fmt.Errorf("--all-finished needs --finished-before TIME (RFC 3339) or --older-than AGE (%s)", ageForms)
	case !all && (after != "" || limit != 0):
		return errors.New("--after and --limit go with --all-finished")
	}
	if batch == 0 {
		batch = sf.spec().writeBatch(&sf)
	}
	opts := workflow.PruneOptions{Runs: runs, BatchSize: batch, DryRun: dry, AllFinished: all, After: after, Limit: limit}
	if before != "" {
		t, err := time.Parse(time.RFC3339Nano, before)
		if err != nil {
			return usageErrorf("--finished-before %q is not an RFC 3339 time (e.g. 2026-12-01T00:00:00Z)", before)
		}
		if t.IsZero() {
			return usageErrorf("--finished-before %s is the zero time, before any run can have finished: give a cut-off after 1970-01-01T00:00:00Z", before)
		}
		opts.FinishedBefore = t
	}
	now := time.Now()
	if olderThan != "" {
		age, err := parseAge(olderThan)
		if err != nil {
			return usageErrorf("--older-than %q: %v", olderThan, err)
		}
		opts.FinishedBefore = now.Add(-age)
	}
	b, err := sf.open(ctx)
	if err != nil {
		return err
	}
	defer b.Close()
	p := newProgress(stderr, "prune")
	what := "pruning"
	if dry {
		what = "counting what a prune would delete"
	}
	p.begin(what, "")
	rep, err := workflow.New(b).Prune(ctx, opts, now)
	p.finish()
	if err != nil {
		return sf.explain(err)
	}
	if asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(rep)
	}
	printPrune(stdout, sf.where(), rep)
	return nil
}

func printPrune(w io.Writer, where string, rep workflow.PruneReport) {
	verb := "pruned"
	if rep.DryRun {
		verb = "would delete"
		fmt.Fprintf(w, "dry run on %s: nothing was written\n", where)
	} else {
		fmt.Fprintf(w, "pruned %s\n", where)
	}
	var total workflow.PruneCounts
	for _, r := range rep.Runs {
		switch {
		case r.Skipped != "":
			fmt.Fprintf(w, "  %s (%s): skipped, %s\n", r.RunID, r.Status, r.Skipped)
		case r.AlreadyPruned:
			fmt.Fprintf(w, "  %s (%s): already pruned, nothing to delete\n", r.RunID, r.Status)
		default:
			d := r.Deleted
			fmt.Fprintf(w, "  %s (%s): %s %d events, %d attempts, %d leases, %d schedules", r.RunID, r.Status, verb,
				d.Events, d.Attempts, d.Leases, d.Schedules)
			if !rep.DryRun {
				fmt.Fprintf(w, " in %s", countOf(r.Transactions, "transaction"))
			}
			fmt.Fprintln(w)
		}
		total.Events += r.Deleted.Events
		total.Attempts += r.Deleted.Attempts
		total.Leases += r.Deleted.Leases
		total.Schedules += r.Deleted.Schedules
	}
	fmt.Fprintf(w, "total: %d records (%d events, %d attempts, %d leases, %d schedules)\n",
		total.Total(), total.Events, total.Attempts, total.Leases, total.Schedules)
	if rep.Next != "" {
		fmt.Fprintf(w, "next: --after %q\n", rep.Next)
	}
}

// ageForms are the forms --older-than takes.
const ageForms = "a whole number of days, hours or minutes: 30d, 12h, 90m"

// errBadAge: an --older-than that is not an age of the accepted forms.
var errBadAge = errors.New("not an age")

// parseAge parses an age of the form N followed by d (days of 24 hours),
// h or m, N a whole number above 0.
func parseAge(s string) (time.Duration, error) {
	units := map[byte]time.Duration{'d': 24 * time.Hour, 'h': time.Hour, 'm': time.Minute}
	if len(s) < 2 {
		return 0, fmt.Errorf("%w: want %s", errBadAge, ageForms)
	}
	unit, ok := units[s[len(s)-1]]
	digits := s[:len(s)-1]
	n, err := strconv.ParseInt(digits, 10, 64)
	switch {
	case !ok || err != nil || digits[0] < '0' || digits[0] > '9':
		return 0, fmt.Errorf("%w: want %s", errBadAge, ageForms)
	case n == 0:
		return 0, fmt.Errorf("%w: an age of 0 would prune runs that finished a moment ago; want %s", errBadAge, ageForms)
	case n > int64(math.MaxInt64/unit):
		return 0, fmt.Errorf("%w: too long; want %s", errBadAge, ageForms)
	}
	return time.Duration(n) * unit, nil
}

// countOf is "1 thing" or "N things".
func countOf(n int, thing string) string {
	if n == 1 {
		return "1 " + thing
	}
	return strconv.Itoa(n) + " " + thing + "s"
}

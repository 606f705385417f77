package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"reflect"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/wfstore/wfstore/backend"
	"github.com/wfstore/wfstore/workflow"
)

const inspectUsage = `wfstore inspect: read a store's runs, one run, or a run's events. It writes nothing
and never creates a store: a path or schema holding none is refused.

  wfstore inspect runs [--status S] [--after ID] [--cursor C] [--limit N] [flags]
  wfstore inspect run ID [--limit N] [flags]
  wfstore inspect activations ID [--cursor C] [--limit N] [flags]
  wfstore inspect attempts ID [--cursor C] [--limit N] [flags]
  wfstore inspect events ID [--after SEQ] [--cursor C] [--limit N] [flags]

"runs" lists runs in run id order (only those of --status, read through
the store's run status index); "run" shows the run, its allowance
and a bounded summary (activations, attempts newest first, unreleased
leases, retry schedules); "activations" and "attempts" page through all
of a run's activations (in key order) and attempts (newest first);
"events" lists events in sequence order. Output is a table unless --json.

A listing cut at --limit prints a cursor for the next page ("next: --cursor
C"; "next_cursor" in JSON, empty on the last page); a section of "run" cut
at --limit prints the command that goes on ("more: ..."). A cursor is an
opaque token: pass it back as printed, with the same listing, run and
--status; its contents may change between releases. --after starts a
listing at a point you choose instead: after a run id (runs) or an event
sequence number (events).

Flags:
`

// parseInterleaved parses flags that may come before or after positional
// arguments and returns the positional ones.
func parseInterleaved(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		if fs.NArg() == 0 {
			return pos, nil
		}
		pos = append(pos, fs.Arg(0))
		args = fs.Args()[1:]
	}
}

func inspectCmd(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	var sf storeFlags
	fs := flag.NewFlagSet("inspect", flag.ContinueOnError)
	fs.SetOutput(stderr)
	sf.register(fs)
	status := fs.String("status", "", "runs: only runs in this status")
	after := fs.String("after", "", "runs: start after this run id; events: after this sequence number")
	cursor := fs.String("cursor", "", "continue a listing: the opaque token a previous page printed (\"next: --cursor\", \"next_cursor\")")
	limit := fs.Int("limit", 50, "rows per listing (1..1000)")
	asJSON := fs.Bool("json", false, "print JSON instead of a table")
	fs.Usage = func() {
		fmt.Fprint(stderr, inspectUsage)
		fs.PrintDefaults()
	}
	pos, err := parseInterleaved(fs, args)
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil
		}
		return errUsage
	}
	if len(pos) == 0 {
		fs.Usage()
		return errUsage
	}
	verb, rest := pos[0], pos[1:]
	want := 1
	if verb == "runs" {
		want = 0
	}
	var (
		from pageCursor
		cerr error
	)
	if *cursor != "" && verb != "run" && len(rest) == want {
		run := ""
		if want == 1 {
			run = rest[0]
		}
		from, cerr = decodeCursor(*cursor, verb, run, *status)
	}
	switch {
	case verb != "runs" && verb != "run" && verb != "activations" && verb != "attempts" && verb != "events":
		fmt.Fprintf(stderr, "wfstore inspect: unknown subcommand %q (want runs, run, activations, attempts or events)\n", verb)
		return errUsage
	case cerr != nil:
		fmt.Fprintf(stderr, "wfstore inspect %s: %v\n", verb, cerr)
		return errUsage
	case *after != "" && *cursor != "":
		fmt.Fprintf(stderr, "wfstore inspect %s: give --after or --cursor, not both\n", verb)
		return errUsage
	case (verb == "activations" || verb == "attempts") && *after != "":
		fmt.Fprintf(stderr, "wfstore inspect %s: takes no --after; continue a listing with the --cursor a page printed\n", verb)
		return errUsage
	case verb == "run" && *cursor != "":
		fmt.Fprintln(stderr, "wfstore inspect run: takes no --cursor (page with inspect activations or inspect attempts)")
		return errUsage
	case verb == "run" && *after != "":
		fmt.Fprintln(stderr, "wfstore inspect run: takes no --after (page with inspect activations or inspect attempts)")
		return errUsage
	case len(rest) != want:
		fmt.Fprintf(stderr, "wfstore inspect %s: takes %d argument(s), got %d\n", verb, want, len(rest))
		return errUsage
	case !knownRunStatus(backend.RunStatus(*status)):
		fmt.Fprintf(stderr, "wfstore inspect: unknown --status %q (valid values: %s, %s, %s, %s, %s, %s)\n", *status,
			backend.RunRunning, backend.RunPaused, backend.RunCompleted, backend.RunFailed, backend.RunCancelled, backend.RunRepairRequired)
		return errUsage
	case *limit < 1 || *limit > workflow.MaxPageLimit:
		fmt.Fprintf(stderr, "wfstore inspect: --limit must be 1..%d\n", workflow.MaxPageLimit)
		return errUsage
	}
	if err := sf.check(); err != nil {
		return err
	}
	b, err := sf.openExisting(ctx)
	if err != nil {
		return err // names the file or the DSN
	}
	defer b.Close()
	s := workflow.New(b)
	switch verb {
	case "runs":
		start := *after
		if from.RunID != "" {
			start = from.RunID
		}
		return inspectRuns(ctx, b, backend.RunStatus(*status), start, *limit, *asJSON, stdout)
	case "run":
		return inspectRun(ctx, s, rest[0], *limit, *asJSON, stdout)
	case "activations":
		return inspectActivations(ctx, s, rest[0], backend.NodeRef{NodeID: from.NodeID, ActivationID: from.ActivationID}, *limit, *asJSON, stdout)
	case "attempts":
		return inspectAttempts(ctx, s, rest[0], backend.AttemptCursor{PreparedMS: from.PreparedMS, Identity: from.Identity}, *limit, *asJSON, stdout)
	default:
		seq := from.Seq
		if *after != "" {
			if seq, err = strconv.ParseInt(*after, 10, 64); err != nil || seq < 0 {
				fmt.Fprintf(stderr, "wfstore inspect events: --after must be a sequence number, got %q\n", *after)
				return errUsage
			}
		}
		return inspectEvents(ctx, s, rest[0], seq, *limit, *asJSON, stdout)
	}
}

func inspectRuns(ctx context.Context, b backend.Backend, status backend.RunStatus, after string, limit int, asJSON bool, w io.Writer) error {
	var runs []backend.Run
	if err := b.View(ctx, func(r backend.ReadTx) error {
		var err error
		runs, err = r.Runs(ctx, backend.RunQuery{Status: status, After: after, Limit: limit + 1})
		return err
	}); err != nil {
		return err
	}
	cursor := func(r backend.Run) string { return runsCursor(status, r) }
	return printPage(w, runs, limit, cursor, "runs", asJSON,
		func(tw *tabwriter.Writer, runs []backend.Run) {
			fmt.Fprintln(tw, "RUN\tSTATUS\tROOT\tDEPTH\tATTEMPTS\tACTIVE\tLAST_SEQ\tUPDATED")
			for _, r := range runs {
				fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%d\t%d\t%d\t%s\n", r.ID, r.Status, r.RootID, r.Depth, r.AttemptCount, r.ActiveCount, r.LastEventSeq, msTime(r.UpdatedMS))
			}
		})
}

func inspectRun(ctx context.Context, s *workflow.Store, runID string, limit int, asJSON bool, w io.Writer) error {
	sum, err := s.RunSummary(ctx, runID)
	if err != nil {
		return err
	}
	// inspect shows the durable records as stored (counters and index
	// flags included), so it reads them through the backend; the summary
	// gives the counts and the allowance.
	var run backend.Run
	var acts []backend.Activation
	var atts []backend.Attempt
	var leases []backend.Lease
	var scheds []backend.RetrySchedule
	if err := s.Engine().Backend().View(ctx, func(r backend.ReadTx) error {
		var err error
		if run, err = backend.GetRun(ctx, r, runID); err != nil {
			return err
		}
		if acts, err = r.Activations(ctx, backend.ActivationQuery{RunID: runID, Limit: limit + 1}); err != nil {
			return err
		}
		if atts, err = r.Attempts(ctx, backend.AttemptQuery{RunID: runID, Descending: true, Limit: limit + 1}); err != nil {
			return err
		}
		if leases, err = r.Leases(ctx, backend.LeaseQuery{RunID: runID, Limit: limit}); err != nil {
			return err
		}
		scheds, err = r.DueSchedules(ctx, backend.ScheduleQuery{RunID: runID, DueBy: math.MaxInt64, Limit: limit})
		return err
	}); err != nil {
		return err
	}
	// One row more than shown tells whether a list goes on.
	moreActs, moreAtts := "", ""
	if len(acts) > limit {
		acts = acts[:limit]
		last := acts[limit-1].Key
		moreActs = activationCursor(runID, backend.NodeRef{NodeID: last.NodeID, ActivationID: last.ActivationID})
	}
	if len(atts) > limit {
		atts = atts[:limit]
		moreAtts = attemptCursor(runID, atts[limit-1])
	}
	if asJSON {
		return writeJSON(w, map[string]any{
			"activations_next_cursor": moreActs, "attempts_next_cursor": moreAtts,
			"run": jsonRecord(run), "allowance": jsonRecord(sum.Allowance),
			"activation_counts": sum.Activations, "activation_counts_complete": sum.ActivationsComplete,
			"attempt_counts": sum.Attempts, "attempt_counts_complete": sum.AttemptsComplete,
			"activations": jsonRecords(acts), "attempts_newest_first": jsonRecords(atts),
			"leases": jsonRecords(leases), "retry_schedules": jsonRecords(scheds),
			"next_retry": jsonRecord(sum.NextRetry),
		})
	}
	r := run
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "run\t%s\n", r.ID)
	fmt.Fprintf(tw, "status\t%s\n", statusText(r.Status, sum.NextRetry))
	fmt.Fprintf(tw, "root / parent / depth\t%s / %s / %d\n", r.RootID, orDash(r.ParentID), r.Depth)
	fmt.Fprintf(tw, "limits\tnodes %d, concurrency %d, cycles %d, retries %d\n", r.Limits.NodeExecutionCap, r.Limits.ConcurrencyCap, r.Limits.CycleCap, r.Limits.RetryCap)
	fmt.Fprintf(tw, "counters\tattempts %d, active %d, tree attempts %d, descendants %d, last event %d\n", r.AttemptCount, r.ActiveCount, r.TreeAttemptCount, r.DescendantCount, r.LastEventSeq)
	fmt.Fprintf(tw, "allowance\trun %s of %d, root %s of %d\n", optCount(sum.Allowance.RunConsumed), sum.Allowance.RunCap, optCount(sum.Allowance.RootConsumed), sum.Allowance.RootCap)
	fmt.Fprintf(tw, "activations\t%s%s\n", countsText(sum.Activations), incomplete(sum.ActivationsComplete))
	fmt.Fprintf(tw, "attempts\t%s%s\n", countsText(sum.Attempts), incomplete(sum.AttemptsComplete))
	fmt.Fprintf(tw, "created / updated\t%s / %s\n", msTime(r.CreatedMS), msTime(r.UpdatedMS))
	if err := tw.Flush(); err != nil {
		return err
	}
	section := func(title string, n int) {
		fmt.Fprintf(w, "\n%s (%d shown, at most %d)\n", title, n, limit)
	}
	section("ACTIVATIONS", len(acts))
	tw = tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	writeActivations(tw, acts)
	tw.Flush()
	if moreActs != "" {
		fmt.Fprintln(w, moreHint("activations", runID, moreActs))
	}
	section("ATTEMPTS, NEWEST FIRST", len(atts))
	tw = tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	writeAttempts(tw, atts)
	tw.Flush()
	if moreAtts != "" {
		fmt.Fprintln(w, moreHint("attempts", runID, moreAtts))
	}
	section("UNRELEASED LEASES", len(leases))
	tw = tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NODE\tACTIVATION\tATTEMPT\tRESOURCE\tMODE\tACQUIRED")
	for _, l := range leases {
		fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%s\t%s\n", l.Key.NodeID, l.Key.ActivationID, l.Key.Attempt, l.Key.Resource, l.Key.Mode, msTime(l.AcquiredMS))
	}
	tw.Flush()
	section("RETRY SCHEDULES", len(scheds))
	tw = tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NODE\tACTIVATION\tFAILED\tNEXT\tKIND\tDUE")
	for _, sc := range scheds {
		fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%s\t%s\n", sc.Key.NodeID, sc.Key.ActivationID, sc.FailedAttempt, sc.NextAttempt, sc.FailureKind, msTime(sc.DueMS))
	}
	return tw.Flush()
}

func inspectEvents(ctx context.Context, s *workflow.Store, runID string, after int64, limit int, asJSON bool, w io.Writer) error {
	if _, err := s.GetRun(ctx, runID); err != nil {
		return err
	}
	// One row more than asked tells whether there is a next page; at the
	// largest limit a full page is taken to have one.
	var evs []backend.Event
	if err := s.Engine().Backend().View(ctx, func(r backend.ReadTx) error {
		var err error
		evs, err = r.Events(ctx, backend.EventQuery{RunID: runID, After: after, Limit: min(limit+1, workflow.MaxPageLimit)})
		return err
	}); err != nil {
		return err
	}
	next := ""
	if len(evs) > limit || len(evs) == workflow.MaxPageLimit {
		evs = evs[:limit]
		next = eventCursor(runID, evs[limit-1].Seq)
	}
	if asJSON {
		return writeJSON(w, map[string]any{"events": jsonRecords(evs), "next_cursor": next})
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "SEQ\tTYPE\tCREATED\tPAYLOAD")
	for _, e := range evs {
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\n", e.Seq, e.Type, msTime(e.CreatedMS), e.Payload)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if next != "" {
		fmt.Fprintf(w, "next: --cursor %s\n", next)
	}
	return nil
}

func knownRunStatus(s backend.RunStatus) bool {
	switch s {
	case "", backend.RunRunning, backend.RunPaused, backend.RunCompleted, backend.RunFailed,
		backend.RunCancelled, backend.RunRepairRequired:
		return true
	}
	return false
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func optCount(c *int64) string {
	if c == nil {
		return "unknown"
	}
	return strconv.FormatInt(*c, 10)
}

func incomplete(complete bool) string {
	if complete {
		return ""
	}
	return fmt.Sprintf(" (first %d only)", workflow.SummaryReadBudget)
}

func countsText[K ~string](m map[K]int) string {
	if len(m) == 0 {
		return "none"
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, string(k))
	}
	sortStrings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%s %d", k, m[K(k)])
	}
	return strings.Join(parts, ", ")
}

func sortStrings(xs []string) {
	for i := 1; i < len(xs); i++ {
		for j := i; j > 0 && xs[j] < xs[j-1]; j-- {
			xs[j], xs[j-1] = xs[j-1], xs[j]
		}
	}
}

func msTime(ms int64) string {
	if ms == 0 {
		return "-"
	}
	return time.UnixMilli(ms).UTC().Format("2006-01-02T15:04:05.000Z")
}

func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// jsonRecord renders a record for reading: its fields under their
// snake_case names (see snakeName), with JSON byte fields inlined as JSON
// rather than base64.
// An attempt also gets "age_ms", the age the table's AGE column shows
// (see attemptAge), in whole milliseconds as of now.
func jsonRecord(rec any) any { return jsonRecordAt(rec, time.Now()) }

func jsonRecordAt(rec any, now time.Time) any {
	out := readable(reflect.ValueOf(rec))
	if a, ok := rec.(backend.Attempt); ok {
		if m, ok := out.(map[string]any); ok {
			m["age_ms"] = attemptAgeMS(a, now)
		}
	}
	return out
}

func jsonRecords[T any](xs []T) []any {
	now := time.Now()
	out := make([]any, len(xs))
	for i, x := range xs {
		out[i] = jsonRecordAt(x, now)
	}
	return out
}

func readable(v reflect.Value) any {
	switch v.Kind() {
	case reflect.Pointer, reflect.Interface:
		if v.IsNil() {
			return nil
		}
		return readable(v.Elem())
	case reflect.Struct:
		if encodesItself(v.Type()) {
			return v.Interface()
		}
		m := make(map[string]any, v.NumField())
		t := v.Type()
		for i := 0; i < v.NumField(); i++ {
			f := t.Field(i)
			if !f.IsExported() {
				continue
			}
			if f.Anonymous && f.Type.Kind() == reflect.Struct {
				if inner, ok := readable(v.Field(i)).(map[string]any); ok {
					for k, x := range inner {
						m[k] = x
					}
				}
				continue
			}
			if k, ok := jsonKey(f); ok {
				m[snakeName(k)] = readable(v.Field(i))
			}
		}
		return m
	case reflect.Slice:
		if v.Type().Elem().Kind() == reflect.Uint8 {
			b := v.Bytes()
			if b == nil {
				return nil
			}
			if json.Valid(b) {
				return json.RawMessage(b)
			}
			return string(b)
		}
		out := make([]any, v.Len())
		for i := range out {
			out[i] = readable(v.Index(i))
		}
		return out
	}
	return v.Interface()
}

// statusText is a run's status as an operator reads it: a failed run whose
// automatic retry is still pending is "failed, retry due at T", not failed
// for good; any run with a pending retry says when it is due.
func statusText(st backend.RunStatus, next *workflow.RetrySchedule) string {
	if next == nil {
		return string(st)
	}
	return fmt.Sprintf("%s, retry due at %s", st, msTime(next.Due.UnixMilli()))
}

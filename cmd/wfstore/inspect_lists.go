package main

import (
	"context"
	"fmt"
	"io"
	"strconv"
	"text/tabwriter"
	"time"

	"github.com/wfstore/wfstore/backend"
	"github.com/wfstore/wfstore/workflow"
)

// moreHint is the line that tells where a listing cut at its limit goes
// on.
func moreHint(verb, runID, cursor string) string {
	return fmt.Sprintf("more: wfstore inspect %s %s --cursor %s", verb, strconv.Quote(runID), cursor)
}

// inspectActivations lists one run's activations in (node, activation)
// order after the cursor, a page at a time.
func inspectActivations(ctx context.Context, s *workflow.Store, runID string, from backend.NodeRef, limit int, asJSON bool, w io.Writer) error {
	if _, err := s.GetRun(ctx, runID); err != nil {
		return err
	}
	var acts []backend.Activation
	if err := s.Engine().Backend().View(ctx, func(r backend.ReadTx) error {
		var err error
		acts, err = r.Activations(ctx, backend.ActivationQuery{RunID: runID, After: from, Limit: limit + 1})
		return err
	}); err != nil {
		return err
	}
	cursor := func(a backend.Activation) string {
		return activationCursor(runID, backend.NodeRef{NodeID: a.Key.NodeID, ActivationID: a.Key.ActivationID})
	}
	return printPage(w, acts, limit, cursor, "activations", asJSON, writeActivations)
}

// inspectAttempts lists one run's attempts newest first, a page at a time.
func inspectAttempts(ctx context.Context, s *workflow.Store, runID string, from backend.AttemptCursor, limit int, asJSON bool, w io.Writer) error {
	if _, err := s.GetRun(ctx, runID); err != nil {
		return err
	}
	var atts []backend.Attempt
	if err := s.Engine().Backend().View(ctx, func(r backend.ReadTx) error {
		var err error
		atts, err = r.Attempts(ctx, backend.AttemptQuery{RunID: runID, After: from, Descending: true, Limit: limit + 1})
		return err
	}); err != nil {
		return err
	}
	cursor := func(a backend.Attempt) string { return attemptCursor(runID, a) }
	return printPage(w, atts, limit, cursor, "attempts_newest_first", asJSON, writeAttempts)
}

// printPage prints one page of a listing read with limit+1 rows: as JSON
// under key with "next_cursor", or as a table with a "next: --cursor"
// line: the opaque cursor of the page's last row when a further row
// exists (empty, and no line, on the last page).
func printPage[T any](w io.Writer, rows []T, limit int, cursor func(T) string, key string, asJSON bool, table func(*tabwriter.Writer, []T)) error {
	next := ""
	if len(rows) > limit {
		rows = rows[:limit]
		next = cursor(rows[limit-1])
	}
	if asJSON {
		return writeJSON(w, map[string]any{key: jsonRecords(rows), "next_cursor": next})
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	table(tw, rows)
	if err := tw.Flush(); err != nil {
		return err
	}
	if next != "" {
		fmt.Fprintf(w, "next: --cursor %s\n", next)
	}
	return nil
}

func writeActivations(tw *tabwriter.Writer, acts []backend.Activation) {
	fmt.Fprintln(tw, "NODE\tACTIVATION\tSTATUS\tADMISSIBLE\tLAST_ATTEMPT")
	for _, a := range acts {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%t\t%d\n", a.Key.NodeID, a.Key.ActivationID, a.Status, a.Admissible, a.LastAttempt)
	}
}

func writeAttempts(tw *tabwriter.Writer, atts []backend.Attempt) {
	writeAttemptsAt(tw, atts, time.Now())
}

// writeAttemptsAt writes the attempt table with each attempt's age as of
// now (see attemptAge).
func writeAttemptsAt(tw *tabwriter.Writer, atts []backend.Attempt, now time.Time) {
	fmt.Fprintln(tw, "IDENTITY\tSTATUS\tAGE\tHANDOFF\tRECEIPT\tPREPARED")
	for _, a := range atts {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%t\t%s\n", a.Identity, a.Status, attemptAge(a, now), a.Handoff, a.Receipt != nil, msTime(a.PreparedMS))
	}
}

// attemptAge is how long the attempt has been in its status, as of now:
// since it settled, else since it was admitted, else since it was
// prepared; whole seconds from a second on, else milliseconds. An
// unsettled attempt's age is what the stuck-work check
// (workflow.Engine.StuckAttempts) compares with its age limit.
func attemptAge(a backend.Attempt, now time.Time) time.Duration {
	d := time.Duration(attemptAgeMS(a, now)) * time.Millisecond
	if d >= time.Second {
		return d.Truncate(time.Second)
	}
	return d.Truncate(time.Millisecond)
}

// attemptAgeMS is the attempt's age as of now (see attemptAge), in whole
// milliseconds, untruncated: the "age_ms" of inspect's JSON.
func attemptAgeMS(a backend.Attempt, now time.Time) int64 {
	since := max(a.PreparedMS, a.AdmittedMS, a.TerminalMS)
	return max(now.UnixMilli()-since, 0)
}

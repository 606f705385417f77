package main

import (
	"encoding/base64"
	"math"
	"net/http"
	"strconv"
	"time"

	"github.com/wfstore/wfstore/backend"
	"github.com/wfstore/wfstore/workflow"
)

// consoleCountBound bounds each per-status count of the runs page: a
// count that reaches it is shown as "N+", never by a full scan.
const consoleCountBound = 500

// consoleRunStatuses are the run statuses the console filters by, in the order it shows them.
var consoleRunStatuses = []backend.RunStatus{backend.RunRunning, backend.RunPaused, backend.RunRepairRequired,
	backend.RunFailed, backend.RunCancelled, backend.RunCompleted}

// Cursors in the console's links are opaque: the inspect command's cursor
// text, base64url encoded.
func encCursor(s string) string { return base64.RawURLEncoding.EncodeToString([]byte(s)) }

func decCursor(s string) (string, error) {
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil {
		return "", consoleErr(http.StatusBadRequest, "malformed page cursor")
	}
	return string(b), nil
}

type statusCount struct {
	Status   string
	Count    int
	AtLeast  bool
	Selected bool
}

type runRow struct {
	backend.Run
	// RetryDue is the earliest retry schedule's due time ("" when none).
	RetryDue    string
	RetryDueNow bool
}

type runsView struct {
	Status string
	Counts []statusCount
	Runs   []runRow
	Next   string
	Limit  int
}

// runsPage lists runs in id order, of one status when ?status= is set,
// with bounded per-status counts and, per listed run, its earliest retry
// due time.
func (c *console) runsPage(r *http.Request) (string, any, error) {
	ctx := r.Context()
	q := r.URL.Query()
	status := backend.RunStatus(q.Get("status"))
	if !knownRunStatus(status) {
		return "", nil, consoleErr(http.StatusBadRequest, "unknown status "+strconv.Quote(string(status))+" (want running, paused, repair_required, failed, cancelled or completed)")
	}
	after := ""
	if a := q.Get("after"); a != "" {
		var err error
		if after, err = decCursor(a); err != nil {
			return "", nil, err
		}
	}
	v := runsView{Status: string(status), Limit: c.cfg.PageSize}
	now := c.cfg.Now().UnixMilli()
	err := c.b.View(ctx, func(tx backend.ReadTx) error {
		for _, st := range consoleRunStatuses {
			rs, err := tx.Runs(ctx, backend.RunQuery{Status: st, Limit: consoleCountBound})
			if err != nil {
				return err
			}
			v.Counts = append(v.Counts, statusCount{Status: string(st), Count: len(rs), AtLeast: len(rs) == consoleCountBound, Selected: st == status})
		}
		runs, err := tx.Runs(ctx, backend.RunQuery{Status: status, After: after, Limit: c.cfg.PageSize + 1})
		if err != nil {
			return err
		}
		if len(runs) > c.cfg.PageSize {
			runs = runs[:c.cfg.PageSize]
			v.Next = encCursor(runs[len(runs)-1].ID)
		}
		for _, run := range runs {
			row := runRow{Run: run}
			sc, err := tx.DueSchedules(ctx, backend.ScheduleQuery{RunID: run.ID, DueBy: math.MaxInt64, Limit: 1})
			if err != nil {
				return err
			}
			if len(sc) > 0 {
				row.RetryDue, row.RetryDueNow = msTime(sc[0].DueMS), sc[0].DueMS <= now
			}
			v.Runs = append(v.Runs, row)
		}
		return nil
	})
	title := "Runs"
	if status != "" {
		title = "Runs: " + string(status)
	}
	return title, v, err
}

type attemptRow struct {
	backend.Attempt
	Receipt bool
	Age     string
	// Report is the owner's last report (the attempt's detail), cut for
	// a table cell.
	Report string
}

func newAttemptRow(a backend.Attempt, age string) attemptRow {
	r := attemptRow{Attempt: a, Receipt: a.Receipt != nil, Age: age, Report: string(a.Detail)}
	if rs := []rune(r.Report); len(rs) > 120 {
		r.Report = string(rs[:119]) + "…"
	}
	return r
}

type eventRow struct {
	Seq     int64
	Type    string
	Created string
	Fields  []eventField
	Err     string
}

type scheduleRow struct {
	backend.RetrySchedule
	Due    string
	DueNow bool
}

type runView struct {
	Run          backend.Run
	Summary      workflow.RunSummary
	Activations  []backend.Activation
	ActNext      string
	Attempts     []attemptRow
	AttNext      string
	Leases       []backend.Lease
	Schedules    []scheduleRow
	Events       []eventRow
	EvNext       string
	EvAfter      int64
	HasTree      bool
	Done         string
	CanCancel    bool
	CanTree      bool
	CanRaise     bool
	RaiseRefusal string
	CanRetry     bool
	ID           string
	Limit        int
}

// doneText is what the run page says after an action redirected to it.
var doneText = map[string]string{
	"cancel":    "Cancellation requested.",
	"tree":      "Cancellation of the whole tree requested.",
	"allowance": "Allowance raised.",
	"retry":     "Failed node requeued for an explicit retry.",
	"repair":    "Attempt repaired.",
}

// runPage shows one run: its record and summary, a page each of its
// activations, attempts (newest first) and events, its unreleased leases
// and its retry schedules.
func (c *console) runPage(r *http.Request) (string, any, error) {
	ctx := r.Context()
	q := r.URL.Query()
	id := q.Get("id")
	sum, err := c.store.RunSummary(ctx, id)
	if err != nil {
		return "", nil, err
	}
	var actFrom backend.NodeRef
	var attFrom backend.AttemptCursor
	if a := q.Get("act"); a != "" {
		s, err := decCursor(a)
		if err == nil {
			actFrom, err = parseActivationCursor(s)
		}
		if err != nil {
			return "", nil, consoleErr(http.StatusBadRequest, "malformed activation cursor")
		}
	}
	if a := q.Get("att"); a != "" {
		s, err := decCursor(a)
		if err == nil {
			attFrom, err = parseAttemptCursor(s)
		}
		if err != nil {
			return "", nil, consoleErr(http.StatusBadRequest, "malformed attempt cursor")
		}
	}
	var evAfter int64
	if a := q.Get("ev"); a != "" {
		if evAfter, err = strconv.ParseInt(a, 10, 64); err != nil || evAfter < 0 {
			return "", nil, consoleErr(http.StatusBadRequest, "malformed event cursor")
		}
	}
	limit := c.cfg.PageSize
	v := runView{Summary: sum, ID: id, Limit: limit, EvAfter: evAfter, Done: doneText[q.Get("done")]}
	now := c.cfg.Now()
	var evs []backend.Event
	err = c.b.View(ctx, func(tx backend.ReadTx) error {
		var err error
		if v.Run, err = backend.GetRun(ctx, tx, id); err != nil {
			return err
		}
		if v.Activations, err = tx.Activations(ctx, backend.ActivationQuery{RunID: id, After: actFrom, Limit: limit + 1}); err != nil {
			return err
		}
		atts, err := tx.Attempts(ctx, backend.AttemptQuery{RunID: id, After: attFrom, Descending: true, Limit: limit + 1})
		if err != nil {
			return err
		}
		if len(atts) > limit {
			atts = atts[:limit]
			v.AttNext = encCursor(attemptPos(atts[limit-1]))
		}
		for _, a := range atts {
			v.Attempts = append(v.Attempts, newAttemptRow(a, c.age(a.PreparedMS)))
		}
		if v.Leases, err = tx.Leases(ctx, backend.LeaseQuery{RunID: id, Limit: limit}); err != nil {
			return err
		}
		scheds, err := tx.DueSchedules(ctx, backend.ScheduleQuery{RunID: id, DueBy: math.MaxInt64, Limit: limit})
		if err != nil {
			return err
		}
		for _, s := range scheds {
			v.Schedules = append(v.Schedules, scheduleRow{RetrySchedule: s, Due: msTime(s.DueMS), DueNow: s.DueMS <= now.UnixMilli()})
		}
		if evs, err = tx.Events(ctx, backend.EventQuery{RunID: id, After: evAfter, Limit: limit + 1}); err != nil {
			return err
		}
		if v.Run.RootID == v.Run.ID {
			links, err := tx.ChildRuns(ctx, backend.ChildRunQuery{RootRunID: id, Limit: 1})
			if err != nil {
				return err
			}
			v.HasTree = len(links) > 0
		}
		return nil
	})
	if err != nil {
		return "", nil, err
	}
	if len(v.Activations) > limit {
		v.Activations = v.Activations[:limit]
		last := v.Activations[limit-1].Key
		v.ActNext = encCursor(activationPos(backend.NodeRef{NodeID: last.NodeID, ActivationID: last.ActivationID}))
	}
	if len(evs) > limit {
		evs = evs[:limit]
		v.EvNext = strconv.FormatInt(evs[limit-1].Seq, 10)
	}
	for _, e := range evs {
		v.Events = append(v.Events, decodeEvent(e))
	}
	run := v.Run
	open := run.Status == backend.RunRunning || run.Status == backend.RunPaused || run.Status == backend.RunRepairRequired
	v.CanCancel = open && run.CancelRequestedMS == 0
	v.CanTree = run.RootID == run.ID && v.HasTree && run.Status != backend.RunCompleted && run.Status != backend.RunCancelled
	v.CanRaise = run.Status != backend.RunCompleted && run.Status != backend.RunCancelled && run.CancelRequestedMS == 0
	if v.CanRaise && run.Authority != nil {
		v.RaiseRefusal = raiseRefusal
	}
	v.CanRetry = (run.Status == backend.RunFailed || run.Status == backend.RunRunning) && run.CancelRequestedMS == 0
	return "Run " + id, v, nil
}

type treeRow struct {
	Indent string
	ID     string
	Status string
	Parent string
	Depth  int64
	Known  bool
}

type treeView struct {
	Root backend.Run
	Rows []treeRow
	Next string
}

// treePage shows a page of a composition root's child runs as a tree:
// each child under the run of its parent attempt (a child whose parent is
// on another page is listed after the tree).
func (c *console) treePage(r *http.Request) (string, any, error) {
	ctx := r.Context()
	q := r.URL.Query()
	id := q.Get("root")
	if err := workflow.ValidateID("run id", id); err != nil {
		return "", nil, err
	}
	var after backend.ChildRunCursor
	if a := q.Get("after"); a != "" {
		s, err := decCursor(a)
		if err != nil {
			return "", nil, err
		}
		ms, cid, ok := cutCursor(s)
		if !ok {
			return "", nil, consoleErr(http.StatusBadRequest, "malformed tree cursor")
		}
		after = backend.ChildRunCursor{CreatedMS: ms, ChildRunID: cid}
	}
	limit := c.cfg.PageSize
	var v treeView
	var links []backend.RunLink
	runs := map[string]backend.Run{}
	err := c.b.View(ctx, func(tx backend.ReadTx) error {
		var err error
		if v.Root, err = backend.GetRun(ctx, tx, id); err != nil {
			return err
		}
		if v.Root.RootID != v.Root.ID {
			return consoleErr(http.StatusBadRequest, "run "+strconv.Quote(id)+" is not a composition root; its root is "+strconv.Quote(v.Root.RootID))
		}
		if links, err = tx.ChildRuns(ctx, backend.ChildRunQuery{RootRunID: id, After: after, Limit: limit + 1}); err != nil {
			return err
		}
		if len(links) > limit {
			links = links[:limit]
			l := links[limit-1]
			v.Next = encCursor(strconv.FormatInt(l.CreatedMS, 10) + ":" + l.ChildRunID)
		}
		ids := make([]string, len(links))
		for i, l := range links {
			ids[i] = l.ChildRunID
		}
		f, err := tx.Load(ctx, backend.Lookup{Runs: ids})
		runs = f.Runs
		return err
	})
	if err != nil {
		return "", nil, err
	}
	children := map[string][]backend.RunLink{}
	placed := map[string]bool{}
	for _, l := range links {
		children[l.Parent.RunID] = append(children[l.Parent.RunID], l)
	}
	row := func(l backend.RunLink, indent string) treeRow {
		run, ok := runs[l.ChildRunID]
		return treeRow{Indent: indent, ID: l.ChildRunID, Status: string(run.Status), Parent: l.Parent.RunID, Depth: l.Depth, Known: ok}
	}
	var walk func(parent, indent string)
	walk = func(parent, indent string) {
		for _, l := range children[parent] {
			if placed[l.ChildRunID] {
				continue
			}
			placed[l.ChildRunID] = true
			v.Rows = append(v.Rows, row(l, indent+"└─ "))
			walk(l.ChildRunID, indent+"   ")
		}
	}
	walk(id, "")
	for _, l := range links {
		if !placed[l.ChildRunID] {
			placed[l.ChildRunID] = true
			v.Rows = append(v.Rows, row(l, "… "))
			walk(l.ChildRunID, "   ")
		}
	}
	return "Tree of " + id, v, nil
}

func cutCursor(s string) (int64, string, bool) {
	for i := 0; i < len(s); i++ {
		if s[i] == ':' {
			ms, err := strconv.ParseInt(s[:i], 10, 64)
			return ms, s[i+1:], err == nil && ms > 0 && i+1 < len(s)
		}
	}
	return 0, "", false
}

type stuckView struct {
	Status string
	Older  string
	Rows   []attemptRow
	Next   string
}

// stuckPage lists attempts admitted (or running) longer than ?older=
// (default --stuck-after), oldest first, a bounded page at a time.
func (c *console) stuckPage(r *http.Request) (string, any, error) {
	ctx := r.Context()
	q := r.URL.Query()
	older := c.cfg.StuckAfter
	if o := q.Get("older"); o != "" {
		d, err := time.ParseDuration(o)
		if err != nil || d < 0 {
			return "", nil, consoleErr(http.StatusBadRequest, "older must be a duration such as 5m or 1h30m")
		}
		older = d
	}
	status := backend.AttemptAdmitted
	if q.Get("status") == string(backend.AttemptRunning) {
		status = backend.AttemptRunning
	}
	var from backend.AttemptCursor
	if a := q.Get("after"); a != "" {
		s, err := decCursor(a)
		if err == nil {
			from, err = parseAttemptCursor(s)
		}
		if err != nil {
			return "", nil, consoleErr(http.StatusBadRequest, "malformed attempt cursor")
		}
	}
	cut := c.cfg.Now().Add(-older).UnixMilli()
	limit := c.cfg.PageSize
	var atts []backend.Attempt
	if err := c.b.View(ctx, func(tx backend.ReadTx) error {
		var err error
		atts, err = tx.Attempts(ctx, backend.AttemptQuery{Status: status, After: from, Limit: limit + 1})
		return err
	}); err != nil {
		return "", nil, err
	}
	v := stuckView{Status: string(status), Older: older.String()}
	// Attempts come in prepared-time order and one is admitted after it
	// was prepared: the first prepared after the cut ends the listing.
	for i, a := range atts {
		if a.PreparedMS > cut {
			break
		}
		if i == limit {
			v.Next = encCursor(attemptPos(atts[limit-1]))
			break
		}
		since := a.AdmittedMS
		if since == 0 {
			since = a.PreparedMS
		}
		if since <= cut {
			v.Rows = append(v.Rows, newAttemptRow(a, c.age(since)))
		}
	}
	return "Attempts " + string(status) + " longer than " + older.String(), v, nil
}

type attemptView struct {
	Att         backend.Attempt
	Run         backend.Run
	IntentOK    bool
	IntentError string
	Leases      []backend.Lease
	Repairable  bool
	Age         string
}

// attemptPage shows one attempt by dispatch identity: its intent (checked
// against its checksum), handoff, receipt and last detail.
func (c *console) attemptPage(r *http.Request) (string, any, error) {
	v, err := c.attemptEvidence(r, r.URL.Query().Get("id"))
	if err != nil {
		return "", nil, err
	}
	return "Attempt " + shortID(v.Att.Identity), v, nil
}

func (c *console) attemptEvidence(r *http.Request, identity string) (attemptView, error) {
	ctx := r.Context()
	var v attemptView
	if _, err := c.store.GetAttempt(ctx, identity); err != nil {
		return v, err
	}
	err := c.b.View(ctx, func(tx backend.ReadTx) error {
		var err error
		if v.Att, err = backend.GetAttemptByIdentity(ctx, tx, identity); err != nil {
			return err
		}
		if v.Run, err = backend.GetRun(ctx, tx, v.Att.Key.RunID); err != nil {
			return err
		}
		ls, err := tx.Leases(ctx, backend.LeaseQuery{RunID: v.Att.Key.RunID, After: backend.LeaseKey{AttemptKey: prevAttemptKey(v.Att.Key)}, Limit: 64})
		for _, l := range ls {
			if l.Key.AttemptKey == v.Att.Key {
				v.Leases = append(v.Leases, l)
			}
		}
		return err
	})
	if err != nil {
		return v, err
	}
	if _, err := c.store.Engine().DispatchIntent(ctx, identity); err != nil {
		v.IntentError = err.Error()
	} else {
		v.IntentOK = true
	}
	v.Repairable = v.Att.Status == backend.AttemptRepairRequired && v.Att.SideEffect == backend.Mutating
	v.Age = c.age(v.Att.PreparedMS)
	return v, nil
}

// prevAttemptKey is the key just before k's leases in lease order: the
// same activation with attempt k.Attempt-1 (a lease key sorts after its
// attempt key's zero-resource position).
func prevAttemptKey(k backend.AttemptKey) backend.AttemptKey {
	p := k
	p.Attempt--
	return p
}

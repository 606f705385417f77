package postgres

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/wfstore/wfstore/backend"
)

// readRows reads one query's rows from a batch with scan, calling add for
// each record.
func readRows[T any](br pgx.BatchResults, scan func(pgx.Row) (T, error), add func(T)) error {
	rows, err := br.Query()
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		v, err := scan(rows)
		if err != nil {
			return fmt.Errorf("%w: %w", errDecode, err)
		}
		add(v)
	}
	return rows.Err()
}

// query runs one scan statement and collects its records (nil when none).
func query[T any](ctx context.Context, t *txn, what, sql string, scan func(pgx.Row) (T, error), args ...any) ([]T, error) {
	var out []T
	err := t.exchange(ctx,
		func(b *pgx.Batch) { b.Queue(sql, args...) },
		func(br pgx.BatchResults) error {
			return readRows(br, scan, func(v T) { out = append(out, v) })
		})
	if err != nil {
		return nil, fmt.Errorf("postgres: %s: %w", what, err)
	}
	return out, nil
}

// smallKeySet is the largest key set Load reads with one statement per key.
// A key statement (WHERE key = $1 ...) has a generic plan exactly as good as
// a custom one, so the server plans it a few times per connection and then
// reuses the cached plan; the array form's row estimate never matches a
// custom plan's, so the server plans it again on every call (about 30–70 µs
// measured here, more than reading a few keys one statement each).
const smallKeySet = 8

// loader collects the statements of one Load and how to read each result.
type loader struct {
	queued []func(*pgx.Batch)
	reads  []func(pgx.BatchResults) error
}

func (l *loader) add(sql string, args []any, read func(pgx.BatchResults) error) {
	l.queued = append(l.queued, func(b *pgx.Batch) { b.Queue(sql, args...) })
	l.reads = append(l.reads, read)
}

// keySet is how one table's key set is read: keySQL with keyArgs(k) reads
// one key, setSQL with setArgs(keys) reads them all.
type keySet[K, R any] struct {
	keySQL  string
	keyArgs func(K) []any
	setSQL  string
	setArgs func([]K) []any
	scan    func(pgx.Row) (R, error)
}

// load queues the statements reading keys into l: one per key when there
// are at most smallKeySet, else one for the whole set. put receives every
// record read.
func (s keySet[K, R]) load(l *loader, keys []K, put func(R)) {
	read := func(br pgx.BatchResults) error { return readRows(br, s.scan, put) }
	if len(keys) > smallKeySet {
		l.add(s.setSQL, s.setArgs(keys), read)
		return
	}
	for _, k := range keys {
		l.add(s.keySQL, s.keyArgs(k), read)
	}
}

// Load implements backend.ReadTx: all its statements (see keySet.load) are
// sent in one batch, so a whole Lookup costs one round trip.
func (t *txn) Load(ctx context.Context, l backend.Lookup) (backend.Found, error) {
	f := backend.Found{
		Runs:        make(map[string]backend.Run, len(l.Runs)),
		Links:       make(map[string]backend.RunLink, len(l.Links)),
		Activations: make(map[backend.ActivationKey]backend.Activation, len(l.Activations)),
		Groups:      make(map[backend.ActivationKey]backend.FanOutGroup, len(l.Groups)),
		Attempts:    make(map[backend.AttemptKey]backend.Attempt, len(l.Attempts)),
		Identities:  make(map[string]backend.Attempt, len(l.Identities)),
		Leases:      make(map[backend.LeaseKey]backend.Lease, len(l.Leases)),
		Schedules:   make(map[backend.ActivationKey]backend.RetrySchedule, len(l.Schedules)),
		Resources:   make(map[backend.ResourceRef][]backend.Lease, len(l.Resources)),
	}
	q := t.b.q
	var ld loader
	keySet[string, backend.Run]{q.loadRun, idArg, q.loadRuns, idsArg, scanRun}.
		load(&ld, l.Runs, func(r backend.Run) { f.Runs[r.ID] = r })
	keySet[string, backend.RunLink]{q.loadLink, idArg, q.loadLinks, idsArg, scanLink}.
		load(&ld, l.Links, func(r backend.RunLink) { f.Links[r.ChildRunID] = r })
	keySet[backend.ActivationKey, backend.Activation]{q.loadActivation, actKeyArg, q.loadActivations, actKeyArgs, scanActivation}.
		load(&ld, l.Activations, func(r backend.Activation) { f.Activations[r.Key] = r })
	keySet[backend.ActivationKey, backend.FanOutGroup]{q.loadGroup, actKeyArg, q.loadGroups, actKeyArgs, scanGroup}.
		load(&ld, l.Groups, func(r backend.FanOutGroup) { f.Groups[r.Controller] = r })
	keySet[backend.AttemptKey, backend.Attempt]{q.loadAttempt, attemptKeyArg, q.loadAttempts, attemptKeyArgs, scanAttempt}.
		load(&ld, l.Attempts, func(r backend.Attempt) { f.Attempts[r.Key] = r })
	keySet[string, backend.Attempt]{q.loadIdentity, idArg, q.loadIdentities, idsArg, scanAttempt}.
		load(&ld, l.Identities, func(r backend.Attempt) { f.Identities[r.Identity] = r })
	keySet[backend.LeaseKey, backend.Lease]{q.loadLease, leaseKeyArg, q.loadLeases, leaseKeyArgs, scanLease}.
		load(&ld, l.Leases, func(r backend.Lease) { f.Leases[r.Key] = r })
	keySet[backend.ActivationKey, backend.RetrySchedule]{q.loadSchedule, actKeyArg, q.loadSchedules, actKeyArgs, scanSchedule}.
		load(&ld, l.Schedules, func(r backend.RetrySchedule) { f.Schedules[r.Key] = r })
	// Each distinct resource once, so that its leases are not repeated.
	var refs []backend.ResourceRef
	seen := make(map[backend.ResourceRef]bool, len(l.Resources))
	for _, r := range l.Resources {
		if !seen[r] {
			seen[r] = true
			refs = append(refs, r)
		}
	}
	keySet[backend.ResourceRef, backend.Lease]{q.loadResource, resourceArg, q.loadResources, resourceArgs, scanLease}.
		load(&ld, refs, func(r backend.Lease) {
			ref := backend.ResourceRef{RunID: r.Key.RunID, Resource: r.Key.Resource}
			f.Resources[ref] = append(f.Resources[ref], r)
		})
	if len(ld.queued) == 0 {
		return f, nil
	}
	err := t.exchange(ctx,
		func(b *pgx.Batch) {
			for _, q := range ld.queued {
				q(b)
			}
		},
		func(br pgx.BatchResults) error {
			for _, r := range ld.reads {
				if err := r(br); err != nil {
					return err
				}
			}
			return nil
		})
	if err != nil {
		return backend.Found{}, fmt.Errorf("postgres: load: %w", err)
	}
	return f, nil
}

// The arguments of the key and array statements of Load, in column order.

func idArg(id string) []any     { return []any{id} }
func idsArg(ids []string) []any { return []any{ids} }
func actKeyArg(k backend.ActivationKey) []any {
	return []any{k.RunID, k.NodeID, k.ActivationID}
}

func actKeyArgs(keys []backend.ActivationKey) []any {
	runs, nodes, acts := make([]string, len(keys)), make([]string, len(keys)), make([]string, len(keys))
	for i, k := range keys {
		runs[i], nodes[i], acts[i] = k.RunID, k.NodeID, k.ActivationID
	}
	return []any{runs, nodes, acts}
}

func attemptKeyArg(k backend.AttemptKey) []any {
	return []any{k.RunID, k.NodeID, k.ActivationID, int64(k.Attempt)}
}

func attemptKeyArgs(keys []backend.AttemptKey) []any {
	n := len(keys)
	runs, nodes, acts, nums := make([]string, n), make([]string, n), make([]string, n), make([]int64, n)
	for i, k := range keys {
		runs[i], nodes[i], acts[i], nums[i] = k.RunID, k.NodeID, k.ActivationID, int64(k.Attempt)
	}
	return []any{runs, nodes, acts, nums}
}

func leaseKeyArg(k backend.LeaseKey) []any {
	return []any{k.RunID, k.NodeID, k.ActivationID, int64(k.Attempt), k.Resource, string(k.Mode)}
}

func leaseKeyArgs(keys []backend.LeaseKey) []any {
	n := len(keys)
	runs, nodes, acts, nums, res, modes := make([]string, n), make([]string, n), make([]string, n), make([]int64, n), make([]string, n), make([]string, n)
	for i, k := range keys {
		runs[i], nodes[i], acts[i], nums[i], res[i], modes[i] = k.RunID, k.NodeID, k.ActivationID, int64(k.Attempt), k.Resource, string(k.Mode)
	}
	return []any{runs, nodes, acts, nums, res, modes}
}

func resourceArg(r backend.ResourceRef) []any { return []any{r.RunID, r.Resource} }

func resourceArgs(refs []backend.ResourceRef) []any {
	runs, res := make([]string, len(refs)), make([]string, len(refs))
	for i, r := range refs {
		runs[i], res[i] = r.RunID, r.Resource
	}
	return []any{runs, res}
}

// AdmissibleActivations implements backend.ReadTx. It walks the partial
// index activations_admissible in key order.
func (t *txn) AdmissibleActivations(ctx context.Context, q backend.AdmissibleQuery) ([]backend.Activation, error) {
	if q.Limit <= 0 {
		return nil, nil
	}
	sql, args := t.b.q.admissibleQuery(q)
	return query(ctx, t, "admissible activations", sql, scanActivation, args...)
}

func (q *queries) admissibleQuery(p backend.AdmissibleQuery) (string, []any) {
	lim := int64(p.Limit)
	start := !p.AfterRun && p.After == (backend.ActivationKey{})
	switch {
	case p.RunID == "" && start:
		return q.admissibleStart, []any{lim}
	case p.RunID == "" && p.AfterRun:
		return q.admissibleAfterRun, []any{p.After.RunID, lim}
	case p.RunID == "":
		return q.admissibleAfter, []any{p.After.RunID, p.After.NodeID, p.After.ActivationID, lim}
	case start:
		return q.admissibleRunStart, []any{p.RunID, lim}
	case p.AfterRun:
		return q.admissibleRunAfterRun, []any{p.RunID, p.After.RunID, lim}
	}
	return q.admissibleRunAfter, []any{p.RunID, p.After.RunID, p.After.NodeID, p.After.ActivationID, lim}
}

// Activations implements backend.ReadTx.
func (t *txn) Activations(ctx context.Context, q backend.ActivationQuery) ([]backend.Activation, error) {
	if q.Limit <= 0 {
		return nil, nil
	}
	if q.After == (backend.NodeRef{}) {
		return query(ctx, t, "activations", t.b.q.activationsStart, scanActivation, q.RunID, int64(q.Limit))
	}
	return query(ctx, t, "activations", t.b.q.activationsAfter, scanActivation,
		q.RunID, q.After.NodeID, q.After.ActivationID, int64(q.Limit))
}

// Attempts implements backend.ReadTx. A scan of one run walks
// attempts_run_group_order, any other attempts_group_order, each in
// (…, status_group, prepared_ms, identity) order (see attemptScan).
func (t *txn) Attempts(ctx context.Context, q backend.AttemptQuery) ([]backend.Attempt, error) {
	if q.Limit <= 0 {
		return nil, nil
	}
	sql, args := t.b.q.attemptQuery(q)
	return query(ctx, t, "attempts", sql, scanAttempt, args...)
}

func (q *queries) attemptQuery(a backend.AttemptQuery) (string, []any) {
	var args []any
	run, status, after := 0, 0, 0
	if a.RunID != "" {
		run = 1
		args = append(args, a.RunID)
	}
	if a.Status != "" {
		status = 1
		args = append(args, statusGroup(string(a.Status)), string(a.Status))
	}
	// The zero cursor is before every attempt in ascending order and after
	// every one in descending order: no condition at all.
	if a.After != (backend.AttemptCursor{}) {
		after = 1
		args = append(args, a.After.PreparedMS, a.After.Identity)
	}
	desc := 0
	if a.Descending {
		desc = 1
	}
	return q.attempts[run][status][after][desc], append(args, int64(a.Limit))
}

// CountAttempts implements backend.ReadTx, reading at most q.Limit index
// entries.
func (t *txn) CountAttempts(ctx context.Context, q backend.AttemptCountQuery) (int, error) {
	if q.Limit <= 0 {
		return 0, nil
	}
	var n int64
	err := t.exchange(ctx,
		func(b *pgx.Batch) { b.Queue(t.b.q.countAttempts, q.RunID, int64(q.Limit)) },
		func(br pgx.BatchResults) error { return br.QueryRow().Scan(&n) })
	if err != nil {
		return 0, fmt.Errorf("postgres: count attempts: %w", err)
	}
	return int(n), nil
}

// ChildRuns implements backend.ReadTx.
func (t *txn) ChildRuns(ctx context.Context, q backend.ChildRunQuery) ([]backend.RunLink, error) {
	if q.Limit <= 0 {
		return nil, nil
	}
	if q.After == (backend.ChildRunCursor{}) {
		return query(ctx, t, "child runs", t.b.q.childRunsStart, scanLink, q.RootRunID, int64(q.Limit))
	}
	return query(ctx, t, "child runs", t.b.q.childRunsAfter, scanLink,
		q.RootRunID, q.After.CreatedMS, q.After.ChildRunID, int64(q.Limit))
}

// DueSchedules implements backend.ReadTx.
func (t *txn) DueSchedules(ctx context.Context, q backend.ScheduleQuery) ([]backend.RetrySchedule, error) {
	if q.Limit <= 0 {
		return nil, nil
	}
	return query(ctx, t, "due schedules", t.b.q.dueSchedules, scanSchedule, q.RunID, q.DueBy, int64(q.Limit))
}

// Events implements backend.ReadTx.
func (t *txn) Events(ctx context.Context, q backend.EventQuery) ([]backend.Event, error) {
	if q.Limit <= 0 {
		return nil, nil
	}
	return query(ctx, t, "events", t.b.q.events, scanEvent, q.RunID, q.After, int64(q.Limit))
}

// Leases implements backend.ReadTx: unreleased leases walk the partial
// index leases_active, all leases the primary key.
func (t *txn) Leases(ctx context.Context, q backend.LeaseQuery) ([]backend.Lease, error) {
	if q.Limit <= 0 {
		return nil, nil
	}
	start, after := t.b.q.activeLeasesStart, t.b.q.activeLeasesAfter
	if q.IncludeReleased {
		start, after = t.b.q.allLeasesStart, t.b.q.allLeasesAfter
	}
	if q.After == (backend.LeaseKey{}) {
		return query(ctx, t, "leases", start, scanLease, q.RunID, int64(q.Limit))
	}
	k := q.After
	return query(ctx, t, "leases", after, scanLease,
		q.RunID, k.RunID, k.NodeID, k.ActivationID, int64(k.Attempt), k.Resource, string(k.Mode), int64(q.Limit))
}

// Runs implements backend.ReadTx.
func (t *txn) Runs(ctx context.Context, q backend.RunQuery) ([]backend.Run, error) {
	if q.Limit <= 0 {
		return nil, nil
	}
	if q.Status == "" {
		return query(ctx, t, "runs", t.b.q.runsScan, scanRun, q.After, int64(q.Limit))
	}
	return query(ctx, t, "runs", t.b.q.runsScanStatus, scanRun, q.After, string(q.Status), int64(q.Limit))
}

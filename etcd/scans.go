package etcd

import (
	"context"

	"github.com/wfstore/wfstore/backend"
	"github.com/wfstore/wfstore/internal/kvlayout"
)

// This file holds the ordered, bounded scans of ReadTx. Each is one range
// request [from, until) with a limit over one space (kvlayout's scans.go
// says which): an index, whose entries name the records then read in one
// batch, or a record space whose key order is the scan's order.

// recordScan returns up to limit records of tb's kind in the range of sc.
func recordScan[K comparable, R any](ctx context.Context, t *readTx, op string, tb *kvlayout.Table[K, R], sc kvlayout.Scan, limit int) ([]R, error) {
	if limit <= 0 {
		return nil, nil
	}
	got, err := t.scan(ctx, op, t.b.key(sc.From), t.b.key(sc.Until), limit, scanOpts{desc: sc.Desc, perKey: true})
	if err != nil {
		return nil, err
	}
	out := make([]R, len(got))
	for i, e := range got {
		if out[i], err = tb.Decode(e.value); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// indexScan returns up to limit records named by the entries of ix in the
// range of sc, read in one batch.
func indexScan[K comparable, R any](ctx context.Context, t *readTx, op string, ix *kvlayout.IndexOf[R], tb *kvlayout.Table[K, R], sc kvlayout.Scan, limit int) ([]R, error) {
	if limit <= 0 {
		return nil, nil
	}
	got, err := t.scan(ctx, op, t.b.key(sc.From), t.b.key(sc.Until), limit, scanOpts{desc: sc.Desc, keysOnly: true})
	if err != nil || len(got) == 0 {
		return nil, err
	}
	entries := make([][]byte, len(got))
	for i, e := range got {
		entries[i] = t.b.stored(e.key)
	}
	return tb.Named(ctx, store{t: t, op: ix.Name}, ix.Index, entries)
}

// AdmissibleActivations scans the pending index: global key order, or one
// run's prefix of it.
func (t *readTx) AdmissibleActivations(ctx context.Context, q backend.AdmissibleQuery) ([]backend.Activation, error) {
	if err := t.check(ctx, "admissible activations"); err != nil {
		return nil, err
	}
	return indexScan(ctx, t, "admissible activations", layout.Pending, layout.Activation, layout.AdmissibleScan(q), q.Limit)
}

// Activations scans one run's range of the activation space.
func (t *readTx) Activations(ctx context.Context, q backend.ActivationQuery) ([]backend.Activation, error) {
	if err := t.check(ctx, "activations"); err != nil {
		return nil, err
	}
	return recordScan(ctx, t, "activations", layout.Activation, layout.ActivationScan(q), q.Limit)
}

// Attempts scans the attempt index that matches the query's filters; each
// is ordered by (prepared_ms, identity) after its filter parts.
func (t *readTx) Attempts(ctx context.Context, q backend.AttemptQuery) ([]backend.Attempt, error) {
	if err := t.check(ctx, "attempts"); err != nil {
		return nil, err
	}
	ix, sc := layout.AttemptScan(q)
	return indexScan(ctx, t, "attempts", ix, layout.Attempt, sc, q.Limit)
}

// CountAttempts counts keys of the run's range of the attempt space, up
// to q.Limit, reading keys only.
func (t *readTx) CountAttempts(ctx context.Context, q backend.AttemptCountQuery) (int, error) {
	if err := t.check(ctx, "count attempts"); err != nil {
		return 0, err
	}
	if q.Limit <= 0 {
		return 0, nil
	}
	sc := layout.AttemptCountScan(q)
	got, err := t.scan(ctx, "count attempts", t.b.key(sc.From), t.b.key(sc.Until), q.Limit, scanOpts{keysOnly: true, perKey: true})
	return len(got), err
}

// ChildRuns scans one root's range of the link index.
func (t *readTx) ChildRuns(ctx context.Context, q backend.ChildRunQuery) ([]backend.RunLink, error) {
	if err := t.check(ctx, "child runs"); err != nil {
		return nil, err
	}
	return indexScan(ctx, t, "child runs", layout.LinkRoot, layout.Link, layout.ChildRunScan(q), q.Limit)
}

// DueSchedules scans one run's range of the schedule index up to the
// first entry due after q.DueBy.
func (t *readTx) DueSchedules(ctx context.Context, q backend.ScheduleQuery) ([]backend.RetrySchedule, error) {
	if err := t.check(ctx, "due schedules"); err != nil {
		return nil, err
	}
	return indexScan(ctx, t, "due schedules", layout.ScheduleDue, layout.Schedule, layout.DueScan(q), q.Limit)
}

// Events scans one run's range of the event space, whose keys are
// (run, seq).
func (t *readTx) Events(ctx context.Context, q backend.EventQuery) ([]backend.Event, error) {
	if err := t.check(ctx, "events"); err != nil {
		return nil, err
	}
	return recordScan(ctx, t, "events", layout.Event, layout.EventScan(q), q.Limit)
}

// Leases scans one run's range of the active-lease index, or with
// IncludeReleased of the lease space.
func (t *readTx) Leases(ctx context.Context, q backend.LeaseQuery) ([]backend.Lease, error) {
	if err := t.check(ctx, "leases"); err != nil {
		return nil, err
	}
	ix, sc := layout.LeaseScan(q)
	if ix == nil {
		return recordScan(ctx, t, "leases", layout.Lease, sc, q.Limit)
	}
	return indexScan(ctx, t, "leases", ix, layout.Lease, sc, q.Limit)
}

// Runs scans the run space, in run id order. A status filter skips the
// runs of other statuses on the way (there is no status index), reading
// on in pages until it has q.Limit runs or the space ends.
func (t *readTx) Runs(ctx context.Context, q backend.RunQuery) ([]backend.Run, error) {
	if err := t.check(ctx, "runs"); err != nil {
		return nil, err
	}
	if q.Limit <= 0 {
		return nil, nil
	}
	from := layout.RunsAfter(q.After)
	var out []backend.Run
	for {
		sfrom, suntil := layout.Run.Range("", from, nil)
		page, err := recordScan(ctx, t, "runs", layout.Run, kvlayout.Scan{From: sfrom, Until: suntil}, q.Limit)
		if err != nil {
			return nil, err
		}
		for _, r := range page {
			if q.Status == "" || r.Status == q.Status {
				out = append(out, r)
				if len(out) == q.Limit {
					return out, nil
				}
			}
		}
		if len(page) < q.Limit {
			return out, nil
		}
		from = layout.RunsAfter(page[len(page)-1].ID)
	}
}

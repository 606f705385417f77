package etcd

import (
	"bytes"
	"context"

	"github.com/wfstore/wfstore/backend"
)

// This file holds the ordered, bounded scans of ReadTx. Each is one range
// request [from, until) with a limit over one space: an index, whose
// entries name the records then read in one batch, or a record space whose
// key order is the scan's order.

// clone copies k, so that appending to the copy cannot write into k's
// spare capacity.
func (k key) clone() key { return append(key(nil), k...) }

// later returns the larger of two range starts.
func later(a, b []byte) []byte {
	if bytes.Compare(a, b) > 0 {
		return a
	}
	return b
}

// span returns the stored range of codec keys [from, until) of space s:
// a nil from is the space's start, a nil until its end.
func (t *readTx) span(s space, from, until []byte) (string, string) {
	sfrom := t.b.sk(s, from)
	if until == nil {
		return sfrom, t.b.spaceEnd(s)
	}
	return sfrom, t.b.sk(s, until)
}

// recordScan returns up to limit records of tb's kind in codec range
// [from, until).
func recordScan[K comparable, R any](ctx context.Context, t *readTx, op string, tb *table[K, R], from, until []byte, limit int) ([]R, error) {
	if limit <= 0 {
		return nil, nil
	}
	sfrom, suntil := t.span(tb.space, from, until)
	got, err := t.scan(ctx, op, sfrom, suntil, limit, scanOpts{perKey: true})
	if err != nil {
		return nil, err
	}
	out := make([]R, len(got))
	for i, e := range got {
		if out[i], err = tb.decode(e.value); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// indexScan returns up to limit records named by the entries of ix in
// codec range [from, until), ascending or (desc) descending.
func indexScan[K comparable, R any](ctx context.Context, t *readTx, op string, ix *indexOf[R], tb *table[K, R], from, until []byte, desc bool, limit int) ([]R, error) {
	if limit <= 0 {
		return nil, nil
	}
	sfrom, suntil := t.span(ix.space, from, until)
	got, err := t.scan(ctx, op, sfrom, suntil, limit, scanOpts{desc: desc, keysOnly: true})
	if err != nil || len(got) == 0 {
		return nil, err
	}
	return records(ctx, t, ix, tb, got)
}

// AdmissibleActivations scans the pending index: global key order, or one
// run's prefix of it.
func (t *readTx) AdmissibleActivations(ctx context.Context, q backend.AdmissibleQuery) ([]backend.Activation, error) {
	if err := t.check(ctx, "admissible activations"); err != nil {
		return nil, err
	}
	var from, until key
	if q.RunID != "" {
		from = key(nil).str(q.RunID)
		until = prefixEnd(from)
	}
	switch {
	case q.AfterRun:
		from = later(from, prefixEnd(key(nil).str(q.After.RunID)))
	case q.After != backend.ActivationKey{}:
		from = later(from, prefixEnd(activationKey(q.After)))
	}
	return indexScan(ctx, t, "admissible activations", ixPending, kindActivation, from, until, false, q.Limit)
}

// Activations scans one run's range of the activation space.
func (t *readTx) Activations(ctx context.Context, q backend.ActivationQuery) ([]backend.Activation, error) {
	if err := t.check(ctx, "activations"); err != nil {
		return nil, err
	}
	prefix := key(nil).str(q.RunID)
	from := []byte(prefix)
	if q.After != (backend.NodeRef{}) {
		from = later(from, prefixEnd(prefix.clone().str(q.After.NodeID).str(q.After.ActivationID)))
	}
	return recordScan(ctx, t, "activations", kindActivation, from, prefixEnd(prefix), q.Limit)
}

// Attempts scans the attempt index that matches the query's filters; each
// is ordered by (prepared_ms, identity) after its filter parts.
func (t *readTx) Attempts(ctx context.Context, q backend.AttemptQuery) ([]backend.Attempt, error) {
	if err := t.check(ctx, "attempts"); err != nil {
		return nil, err
	}
	var ix *indexOf[backend.Attempt]
	var prefix key
	switch {
	case q.RunID != "" && q.Status != "":
		ix, prefix = ixAttemptRunStatus, key(nil).str(q.RunID).str(string(q.Status))
	case q.RunID != "":
		ix, prefix = ixAttemptRun, key(nil).str(q.RunID)
	case q.Status != "":
		ix, prefix = ixAttemptStatus, key(nil).str(string(q.Status))
	default:
		ix = ixAttemptPrepared
	}
	// The filter's whole range is [prefix, end); a cursor (any but the
	// zero one) cuts it after its position (ascending) or before it
	// (descending). An index entry extends its (prepared_ms, identity)
	// part, so the cursor's own entries sort at or after that part and
	// before its prefixEnd.
	from := []byte(prefix)
	var end []byte // nil: the end of the space
	if len(prefix) > 0 {
		end = prefixEnd(prefix)
	}
	if q.After != (backend.AttemptCursor{}) {
		at := prefix.clone().i64(q.After.PreparedMS).str(q.After.Identity)
		if q.Descending {
			end = at
		} else {
			from = prefixEnd(at)
		}
	}
	return indexScan(ctx, t, "attempts", ix, kindAttempt, from, end, q.Descending, q.Limit)
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
	prefix := key(nil).str(q.RunID)
	sfrom, suntil := t.span(kindAttempt.space, prefix, prefixEnd(prefix))
	got, err := t.scan(ctx, "count attempts", sfrom, suntil, q.Limit, scanOpts{keysOnly: true, perKey: true})
	return len(got), err
}

// ChildRuns scans one root's range of the link index.
func (t *readTx) ChildRuns(ctx context.Context, q backend.ChildRunQuery) ([]backend.RunLink, error) {
	if err := t.check(ctx, "child runs"); err != nil {
		return nil, err
	}
	prefix := key(nil).str(q.RootRunID)
	from := []byte(prefix)
	if q.After != (backend.ChildRunCursor{}) {
		from = later(from, prefixEnd(prefix.clone().i64(q.After.CreatedMS).str(q.After.ChildRunID)))
	}
	return indexScan(ctx, t, "child runs", ixLinkRoot, kindLink, from, prefixEnd(prefix), false, q.Limit)
}

// DueSchedules scans one run's range of the schedule index up to the
// first entry due after q.DueBy.
func (t *readTx) DueSchedules(ctx context.Context, q backend.ScheduleQuery) ([]backend.RetrySchedule, error) {
	if err := t.check(ctx, "due schedules"); err != nil {
		return nil, err
	}
	prefix := key(nil).str(q.RunID)
	until := prefixEnd(prefix.clone().i64(q.DueBy)) // past every due_ms <= DueBy
	if end := prefixEnd(prefix); bytes.Compare(until, end) > 0 {
		until = end
	}
	return indexScan(ctx, t, "due schedules", ixScheduleDue, kindSchedule, prefix, until, false, q.Limit)
}

// Events scans one run's range of the event space, whose keys are
// (run, seq).
func (t *readTx) Events(ctx context.Context, q backend.EventQuery) ([]backend.Event, error) {
	if err := t.check(ctx, "events"); err != nil {
		return nil, err
	}
	prefix := key(nil).str(q.RunID)
	from := []byte(prefix)
	if q.After != 0 {
		from = prefixEnd(prefix.clone().i64(q.After))
	}
	return recordScan(ctx, t, "events", kindEvent, from, prefixEnd(prefix), q.Limit)
}

// Leases scans one run's range of the active-lease index, or with
// IncludeReleased of the lease space.
func (t *readTx) Leases(ctx context.Context, q backend.LeaseQuery) ([]backend.Lease, error) {
	if err := t.check(ctx, "leases"); err != nil {
		return nil, err
	}
	prefix := key(nil).str(q.RunID)
	from := []byte(prefix)
	if q.After != (backend.LeaseKey{}) {
		from = later(from, prefixEnd(leaseKey(q.After)))
	}
	if q.IncludeReleased {
		return recordScan(ctx, t, "leases", kindLease, from, prefixEnd(prefix), q.Limit)
	}
	return indexScan(ctx, t, "leases", ixLeaseActive, kindLease, from, prefixEnd(prefix), false, q.Limit)
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
	var from []byte
	if q.After != "" {
		from = prefixEnd(runKey(q.After))
	}
	var out []backend.Run
	for {
		page, err := recordScan(ctx, t, "runs", kindRun, from, nil, q.Limit)
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
		from = prefixEnd(runKey(page[len(page)-1].ID))
	}
}

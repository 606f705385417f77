package bolt

import (
	"bytes"
	"context"
	"errors"

	"go.etcd.io/bbolt"

	"github.com/wfstore/wfstore/backend"
	"github.com/wfstore/wfstore/internal/kvlayout"
)

// This file holds the ordered, bounded scans of ReadTx. Each one is a range
// [from, until) of one space (kvlayout's scans.go says which): an index, or
// a record kind whose key order is the scan's order. A scan visits exactly the entries it returns (plus,
// for DueSchedules, none: its bound is a key too), so its cost is its limit,
// not the size of the store. Limit <= 0 returns nothing.

// errStop ends a bbolt ForEach early.
var errStop = errors.New("bolt: stop")

// scan visits the keys of bk in [from, until) in order until visit returns
// false. A nil from starts at the first key; a nil until has no bound.
func (t *readTx) scan(bk *bbolt.Bucket, from, until []byte, visit func(k, v []byte) (more bool, err error)) error {
	c := bk.Cursor()
	var k, v []byte
	if from == nil {
		k, v = c.First()
	} else {
		k, v = c.Seek(from)
	}
	for ; k != nil; k, v = c.Next() {
		t.step()
		if until != nil && bytes.Compare(k, until) >= 0 {
			return nil
		}
		more, err := visit(k, v)
		if err != nil || !more {
			return err
		}
	}
	return nil
}

// scanDesc visits the keys of bk in [from, until) in descending order until
// visit returns false. A nil from has no lower bound; a nil until starts at
// the last key.
func (t *readTx) scanDesc(bk *bbolt.Bucket, from, until []byte, visit func(k, v []byte) (more bool, err error)) error {
	c := bk.Cursor()
	var k, v []byte
	if until == nil {
		k, v = c.Last()
	} else if k, _ = c.Seek(until); k == nil {
		k, v = c.Last()
	} else {
		k, v = c.Prev()
	}
	for ; k != nil; k, v = c.Prev() {
		t.step()
		if from != nil && bytes.Compare(k, from) < 0 {
			return nil
		}
		more, err := visit(k, v)
		if err != nil || !more {
			return err
		}
	}
	return nil
}

// recordScan returns up to limit records of tb's kind stored in the range
// of sc.
func recordScan[K comparable, R any](t *readTx, tb *kvlayout.Table[K, R], sc kvlayout.Scan, limit int) ([]R, error) {
	if limit <= 0 {
		return nil, nil
	}
	var out []R
	err := t.scanSpaceDir(&tb.Space, sc.From, sc.Until, sc.Desc, func(_, v []byte) (bool, error) {
		rec, err := tb.Decode(v)
		if err != nil {
			return false, err
		}
		out = append(out, rec)
		return len(out) < limit, nil
	})
	return out, err
}

// indexScan returns up to limit records named by the entries of ix stored
// in the range of sc, reading each record from tb, the table ix indexes.
func indexScan[K comparable, R any](ctx context.Context, t *readTx, ix *kvlayout.IndexOf[R], tb *kvlayout.Table[K, R], sc kvlayout.Scan, limit int) ([]R, error) {
	if limit <= 0 {
		return nil, nil
	}
	var out []R
	err := t.scanSpaceDir(&ix.Space, sc.From, sc.Until, sc.Desc, func(sk, _ []byte) (bool, error) {
		rec, err := tb.NamedBy(ctx, t, ix.Index, sk)
		if err != nil {
			return false, err
		}
		out = append(out, rec)
		return len(out) < limit, nil
	})
	return out, err
}

// AdmissibleActivations scans the pending index: global key order, or one
// run's prefix of it.
func (t *readTx) AdmissibleActivations(ctx context.Context, q backend.AdmissibleQuery) ([]backend.Activation, error) {
	if err := t.check(ctx, "admissible activations"); err != nil {
		return nil, err
	}
	return indexScan(ctx, t, layout.Pending, layout.Activation, layout.AdmissibleScan(q), q.Limit)
}

// Activations scans one run's range of the activation space.
func (t *readTx) Activations(ctx context.Context, q backend.ActivationQuery) ([]backend.Activation, error) {
	if err := t.check(ctx, "activations"); err != nil {
		return nil, err
	}
	return recordScan(t, layout.Activation, layout.ActivationScan(q), q.Limit)
}

// Attempts scans the attempt index that matches the query's filters.
func (t *readTx) Attempts(ctx context.Context, q backend.AttemptQuery) ([]backend.Attempt, error) {
	if err := t.check(ctx, "attempts"); err != nil {
		return nil, err
	}
	ix, sc := layout.AttemptScan(q)
	return indexScan(ctx, t, ix, layout.Attempt, sc, q.Limit)
}

// CountAttempts counts keys of the run's range of the attempt space, up
// to q.Limit, without decoding any value.
func (t *readTx) CountAttempts(ctx context.Context, q backend.AttemptCountQuery) (int, error) {
	if err := t.check(ctx, "count attempts"); err != nil {
		return 0, err
	}
	if q.Limit <= 0 {
		return 0, nil
	}
	sc := layout.AttemptCountScan(q)
	n := 0
	err := t.scanSpace(&layout.Attempt.Space, sc.From, sc.Until, func(_, _ []byte) (bool, error) {
		n++
		return n < q.Limit, nil
	})
	return n, err
}

// ChildRuns scans one root's range of the link index.
func (t *readTx) ChildRuns(ctx context.Context, q backend.ChildRunQuery) ([]backend.RunLink, error) {
	if err := t.check(ctx, "child runs"); err != nil {
		return nil, err
	}
	return indexScan(ctx, t, layout.LinkRoot, layout.Link, layout.ChildRunScan(q), q.Limit)
}

// DueSchedules scans one run's range of the schedule index up to the
// first entry due after q.DueBy.
func (t *readTx) DueSchedules(ctx context.Context, q backend.ScheduleQuery) ([]backend.RetrySchedule, error) {
	if err := t.check(ctx, "due schedules"); err != nil {
		return nil, err
	}
	return indexScan(ctx, t, layout.ScheduleDue, layout.Schedule, layout.DueScan(q), q.Limit)
}

// Events scans one run's range of the event space.
func (t *readTx) Events(ctx context.Context, q backend.EventQuery) ([]backend.Event, error) {
	if err := t.check(ctx, "events"); err != nil {
		return nil, err
	}
	return recordScan(t, layout.Event, layout.EventScan(q), q.Limit)
}

// Leases scans one run's range of the active-lease index, or with
// IncludeReleased of the lease space.
func (t *readTx) Leases(ctx context.Context, q backend.LeaseQuery) ([]backend.Lease, error) {
	if err := t.check(ctx, "leases"); err != nil {
		return nil, err
	}
	ix, sc := layout.LeaseScan(q)
	if ix == nil {
		return recordScan(t, layout.Lease, sc, q.Limit)
	}
	return indexScan(ctx, t, ix, layout.Lease, sc, q.Limit)
}

// Runs walks the run buckets of bucketRuns, named by the encoded run id
// and so in run id order, reading each run's record; with a status filter
// it scans that status's range of the run status index instead.
func (t *readTx) Runs(ctx context.Context, q backend.RunQuery) ([]backend.Run, error) {
	if err := t.check(ctx, "runs"); err != nil {
		return nil, err
	}
	if q.Limit <= 0 {
		return nil, nil
	}
	if q.Status != "" {
		return indexScan(ctx, t, layout.RunStatus, layout.Run, layout.RunStatusScan(q), q.Limit)
	}
	top, err := t.bucket(bucketRuns)
	if err != nil {
		return nil, err
	}
	recKey := []byte{layout.Run.Tag}
	var out []backend.Run
	err = t.scan(top, layout.RunsAfter(q.After), nil, func(k, v []byte) (bool, error) {
		if v != nil {
			return true, nil // not a run bucket
		}
		rb := top.Bucket(k)
		if rb == nil {
			return true, nil
		}
		raw := rb.Get(recKey)
		if raw == nil {
			return true, nil // the run's other records exist, its record does not
		}
		run, err := layout.Run.Decode(raw)
		if err != nil {
			return false, err
		}
		out = append(out, run)
		return len(out) < q.Limit, nil
	})
	return out, err
}

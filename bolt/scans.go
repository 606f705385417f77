package bolt

import (
	"bytes"
	"context"
	"errors"
	"fmt"

	"go.etcd.io/bbolt"

	"github.com/wfstore/wfstore/backend"
)

// This file holds the ordered, bounded scans of ReadTx. Each one is a range
// [from, until) of one bucket: an index, or a primary bucket whose key order
// is the scan's order. A scan visits exactly the entries it returns (plus,
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

// recordScan returns up to limit records of tb's kind stored in [sfrom,
// suntil) (stored keys, from tb.runSpan).
func recordScan[K comparable, R any](t *readTx, tb *table[K, R], sfrom, suntil []byte, limit int) ([]R, error) {
	if limit <= 0 {
		return nil, nil
	}
	var out []R
	err := t.scanSpace(&tb.space, sfrom, suntil, func(_, v []byte) (bool, error) {
		rec, err := tb.decode(v)
		if err != nil {
			return false, err
		}
		out = append(out, rec)
		return len(out) < limit, nil
	})
	return out, err
}

// indexScan returns up to limit records named by the entries of ix stored
// in [sfrom, suntil) (from ix.span or ix.runSpan), reading each record
// from tb, the table ix indexes.
func indexScan[K comparable, R any](t *readTx, ix *indexOf[R], tb *table[K, R], sfrom, suntil []byte, limit int) ([]R, error) {
	return indexScanDir(t, ix, tb, sfrom, suntil, false, limit)
}

// indexScanDir is indexScan in ascending or (desc) descending key order.
func indexScanDir[K comparable, R any](t *readTx, ix *indexOf[R], tb *table[K, R], sfrom, suntil []byte, desc bool, limit int) ([]R, error) {
	if limit <= 0 {
		return nil, nil
	}
	var out []R
	err := t.scanSpaceDir(&ix.space, sfrom, suntil, desc, func(sk, _ []byte) (bool, error) {
		ik, _ := ix.unstored(sk)
		pk, err := ix.primary(ik)
		if err != nil {
			return false, fmt.Errorf("bolt: index %s: %w", ix.name, err)
		}
		rec, err := getRecord(t, tb, pk)
		if err != nil {
			return false, err
		}
		out = append(out, rec)
		return len(out) < limit, nil
	})
	return out, err
}

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
	sfrom, suntil := ixPending.span(from, until)
	return indexScan(t, ixPending, kindActivation, sfrom, suntil, q.Limit)
}

// Activations scans one run's prefix of the activation bucket.
func (t *readTx) Activations(ctx context.Context, q backend.ActivationQuery) ([]backend.Activation, error) {
	if err := t.check(ctx, "activations"); err != nil {
		return nil, err
	}
	prefix := key(nil).str(q.RunID)
	from := prefix
	if q.After != (backend.NodeRef{}) {
		from = prefixEnd(prefix.clone().str(q.After.NodeID).str(q.After.ActivationID))
	}
	sfrom, suntil := kindActivation.runSpan(q.RunID, from, nil)
	return recordScan(t, kindActivation, sfrom, suntil, q.Limit)
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
	// (descending). An index entry
	// extends its (prepared_ms, identity) part, so the cursor's own
	// entries sort at or after that part and before its prefixEnd.
	from := []byte(prefix)
	var end []byte // nil: the end of the run or the space
	if q.RunID == "" || q.Status != "" {
		if len(prefix) > 0 {
			end = prefixEnd(prefix)
		}
	}
	if q.After != (backend.AttemptCursor{}) {
		at := prefix.clone().i64(q.After.PreparedMS).str(q.After.Identity)
		if q.Descending {
			end = at
		} else {
			from = prefixEnd(at)
		}
	}
	var sfrom, suntil []byte
	if q.RunID != "" {
		sfrom, suntil = ix.runSpan(q.RunID, from, end)
	} else {
		sfrom, suntil = ix.span(from, end)
	}
	return indexScanDir(t, ix, kindAttempt, sfrom, suntil, q.Descending, q.Limit)
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
	sfrom, suntil := kindAttempt.runSpan(q.RunID, nil, nil)
	n := 0
	err := t.scanSpace(&kindAttempt.space, sfrom, suntil, func(_, _ []byte) (bool, error) {
		n++
		return n < q.Limit, nil
	})
	return n, err
}

// ChildRuns scans one root's prefix of the link index.
func (t *readTx) ChildRuns(ctx context.Context, q backend.ChildRunQuery) ([]backend.RunLink, error) {
	if err := t.check(ctx, "child runs"); err != nil {
		return nil, err
	}
	prefix := key(nil).str(q.RootRunID)
	from := prefix
	if q.After != (backend.ChildRunCursor{}) {
		from = prefixEnd(prefix.clone().i64(q.After.CreatedMS).str(q.After.ChildRunID))
	}
	sfrom, suntil := ixLinkRoot.runSpan(q.RootRunID, from, nil)
	return indexScan(t, ixLinkRoot, kindLink, sfrom, suntil, q.Limit)
}

// DueSchedules scans one run's prefix of the schedule index up to the
// first entry due after q.DueBy.
func (t *readTx) DueSchedules(ctx context.Context, q backend.ScheduleQuery) ([]backend.RetrySchedule, error) {
	if err := t.check(ctx, "due schedules"); err != nil {
		return nil, err
	}
	prefix := key(nil).str(q.RunID)
	until := prefixEnd(prefix.clone().i64(q.DueBy)) // past every due_ms <= DueBy
	sfrom, suntil := ixScheduleDue.runSpan(q.RunID, prefix, until)
	return indexScan(t, ixScheduleDue, kindSchedule, sfrom, suntil, q.Limit)
}

// Events scans one run's range of the event space, whose keys are
// (run, seq).
func (t *readTx) Events(ctx context.Context, q backend.EventQuery) ([]backend.Event, error) {
	if err := t.check(ctx, "events"); err != nil {
		return nil, err
	}
	from := key(nil).str(q.RunID)
	if q.After != 0 {
		from = prefixEnd(from.i64(q.After))
	}
	sfrom, suntil := kindEvent.runSpan(q.RunID, from, nil)
	return recordScan(t, kindEvent, sfrom, suntil, q.Limit)
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
		// The lease space's key order is LeaseKey order.
		sfrom, suntil := kindLease.runSpan(q.RunID, from, nil)
		return recordScan(t, kindLease, sfrom, suntil, q.Limit)
	}
	sfrom, suntil := ixLeaseActive.runSpan(q.RunID, from, nil)
	return indexScan(t, ixLeaseActive, kindLease, sfrom, suntil, q.Limit)
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
		prefix := key(nil).str(string(q.Status))
		from := []byte(prefix)
		if q.After != "" {
			from = prefixEnd(prefix.clone().str(q.After))
		}
		sfrom, suntil := ixRunStatus.span(from, prefixEnd(prefix))
		return indexScan(t, ixRunStatus, kindRun, sfrom, suntil, q.Limit)
	}
	top, err := t.bucket(bucketRuns)
	if err != nil {
		return nil, err
	}
	var from []byte
	if q.After != "" {
		from = prefixEnd(runKey(q.After))
	}
	recKey := []byte{kindRun.tag}
	var out []backend.Run
	err = t.scan(top, from, nil, func(k, v []byte) (bool, error) {
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
		run, err := decodeRun(raw)
		if err != nil {
			return false, err
		}
		out = append(out, run)
		return len(out) < q.Limit, nil
	})
	return out, err
}

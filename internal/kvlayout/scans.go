package kvlayout

import (
	"bytes"

	"github.com/wfstore/wfstore/backend"
)

// This file turns the ordered, bounded scans of backend.ReadTx into key
// ranges: each query is one range of one space, an index whose entries
// name the records to return or a record kind whose key order is the
// query's order. A cursor ("After", whose zero value is no cursor) moves
// the range's start (or, descending, its end); a bound such as DueBy is
// its end. So a scan reads only the keys it returns.

// Scan is the stored-key range [From, Until) a query reads, in descending
// key order when Desc.
type Scan struct {
	From, Until []byte
	Desc        bool
}

func scanOf(s *Space, run string, from, until []byte) Scan {
	f, u := s.Range(run, from, until)
	return Scan{From: f, Until: u}
}

// later returns the larger of two range starts.
func later(a, b []byte) []byte {
	if bytes.Compare(a, b) > 0 {
		return a
	}
	return b
}

// AdmissibleScan is the range of l.Pending that q reads: global key order,
// or one run's prefix of it.
func (l *Layout) AdmissibleScan(q backend.AdmissibleQuery) Scan {
	var from, until []byte
	if q.RunID != "" {
		from = Key(nil).Str(q.RunID)
		until = PrefixEnd(from)
	}
	switch {
	case q.AfterRun:
		from = later(from, PrefixEnd(Key(nil).Str(q.After.RunID)))
	case q.After != backend.ActivationKey{}:
		from = later(from, PrefixEnd(activationKey(q.After)))
	}
	return scanOf(&l.Pending.Space, q.RunID, from, until)
}

// ActivationScan is the range of l.Activation's records that q reads: one
// run's.
func (l *Layout) ActivationScan(q backend.ActivationQuery) Scan {
	prefix := Key(nil).Str(q.RunID)
	from := []byte(prefix)
	if q.After != (backend.NodeRef{}) {
		from = later(from, PrefixEnd(prefix.Clone().Str(q.After.NodeID).Str(q.After.ActivationID)))
	}
	return scanOf(&l.Activation.Space, q.RunID, from, PrefixEnd(prefix))
}

// AttemptScan returns the attempt index that matches q's filters and the
// range of it q reads; each index is ordered by (prepared_ms, identity)
// after its filter parts.
func (l *Layout) AttemptScan(q backend.AttemptQuery) (*IndexOf[backend.Attempt], Scan) {
	var ix *IndexOf[backend.Attempt]
	var prefix Key
	switch {
	case q.RunID != "" && q.Status != "":
		ix, prefix = l.AttemptRunStatus, Key(nil).Str(q.RunID).Str(string(q.Status))
	case q.RunID != "":
		ix, prefix = l.AttemptRun, Key(nil).Str(q.RunID)
	case q.Status != "":
		ix, prefix = l.AttemptStatus, Key(nil).Str(string(q.Status))
	default:
		ix = l.AttemptPrepared
	}
	// The filter's whole range is [prefix, end); a cursor (any but the
	// zero one) cuts it after its position (ascending) or before it
	// (descending). An index entry extends its (prepared_ms, identity)
	// part, so the cursor's own entries sort at or after that part and
	// before its PrefixEnd.
	from := []byte(prefix)
	var end []byte // nil: the end of the space
	if len(prefix) > 0 {
		end = PrefixEnd(prefix)
	}
	if q.After != (backend.AttemptCursor{}) {
		at := prefix.Clone().I64(q.After.PreparedMS).Str(q.After.Identity)
		if q.Descending {
			end = at
		} else {
			from = PrefixEnd(at)
		}
	}
	s := scanOf(&ix.Space, q.RunID, from, end)
	s.Desc = q.Descending
	return ix, s
}

// AttemptCountScan is the range of l.Attempt's records of q's run.
func (l *Layout) AttemptCountScan(q backend.AttemptCountQuery) Scan {
	prefix := Key(nil).Str(q.RunID)
	return scanOf(&l.Attempt.Space, q.RunID, prefix, PrefixEnd(prefix))
}

// ChildRunScan is the range of l.LinkRoot that q reads: one root's.
func (l *Layout) ChildRunScan(q backend.ChildRunQuery) Scan {
	prefix := Key(nil).Str(q.RootRunID)
	from := []byte(prefix)
	if q.After != (backend.ChildRunCursor{}) {
		from = later(from, PrefixEnd(prefix.Clone().I64(q.After.CreatedMS).Str(q.After.ChildRunID)))
	}
	return scanOf(&l.LinkRoot.Space, q.RootRunID, from, PrefixEnd(prefix))
}

// DueScan is the range of l.ScheduleDue that q reads: one run's, up to the
// first entry due after q.DueBy.
func (l *Layout) DueScan(q backend.ScheduleQuery) Scan {
	prefix := Key(nil).Str(q.RunID)
	until := PrefixEnd(prefix.Clone().I64(q.DueBy)) // past every due_ms <= DueBy
	if end := PrefixEnd(prefix); bytes.Compare(until, end) > 0 {
		until = end
	}
	return scanOf(&l.ScheduleDue.Space, q.RunID, prefix, until)
}

// EventScan is the range of l.Event's records that q reads: one run's,
// whose keys are (run, seq).
func (l *Layout) EventScan(q backend.EventQuery) Scan {
	prefix := Key(nil).Str(q.RunID)
	from := []byte(prefix)
	if q.After != 0 {
		from = PrefixEnd(prefix.Clone().I64(q.After))
	}
	return scanOf(&l.Event.Space, q.RunID, from, PrefixEnd(prefix))
}

// LeaseScan is the range q reads of one run's unreleased leases in
// l.LeaseActive, or with IncludeReleased (ix nil) of l.Lease's records,
// whose key order is LeaseKey order too.
func (l *Layout) LeaseScan(q backend.LeaseQuery) (ix *IndexOf[backend.Lease], s Scan) {
	prefix := Key(nil).Str(q.RunID)
	from := []byte(prefix)
	if q.After != (backend.LeaseKey{}) {
		from = later(from, PrefixEnd(leaseKey(q.After)))
	}
	if q.IncludeReleased {
		return nil, scanOf(&l.Lease.Space, q.RunID, from, PrefixEnd(prefix))
	}
	return l.LeaseActive, scanOf(&l.LeaseActive.Space, q.RunID, from, PrefixEnd(prefix))
}

// RunStatusScan is the range of l.RunStatus (which must exist) that q,
// which has a Status, reads.
func (l *Layout) RunStatusScan(q backend.RunQuery) Scan {
	prefix := Key(nil).Str(string(q.Status))
	from := []byte(prefix)
	if q.After != "" {
		from = PrefixEnd(prefix.Clone().Str(q.After))
	}
	return scanOf(&l.RunStatus.Space, "", from, PrefixEnd(prefix))
}

// RunsAfter is the first run id key after id ("": every run), for a scan
// of runs in id order.
func (l *Layout) RunsAfter(id string) Key {
	if id == "" {
		return nil
	}
	return PrefixEnd(runKey(id))
}

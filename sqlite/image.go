package sqlite

import (
	"bytes"
	"context"
	"database/sql"
	"fmt"
	"slices"
	"strings"

	"github.com/wfstore/wfstore/backend"
)

// Row images: a read-write transaction remembers the last known stored
// value of each row it loaded or wrote, so that a Replace updates only the
// columns that differ from it. SQLite rewrites the entry of every index
// that has a column named in an UPDATE's SET list, even when its value does
// not change, and every rewritten index page is one more WAL frame on the
// commit; an attempt carries five indexes besides its table. Writing only
// the changed columns leaves the untouched indexes alone (a handoff commit
// writes 4 WAL frames instead of 9).
//
// An image is exact: it is the row as scanned in this transaction, or as
// written by it, or carried from the last committed Update (below), and
// nothing else writes while the transaction holds the write lock. A write
// that fails leaves the row (and its image) as it was; a Replace with no
// image falls back to setting every column.

// rowKey names one row: the table's replace statement and its key.
type rowKey struct {
	tbl stmtID
	key any // string or a comparable backend key struct
}

// maxPartialStmts bounds the prepared partial UPDATEs per writer
// connection; past it, a Replace sets every column.
const maxPartialStmts = 256

// partialKey names one prepared UPDATE of a subset of a table's columns.
type partialKey struct {
	tbl  stmtID
	mask uint64 // bit i: column nkey+i is set
}

// rowOf returns the row key, replace statement and table of a record that
// supports Replace.
func rowOf(r backend.Record) (rowKey, *table, bool) {
	switch r := r.(type) {
	case backend.Run:
		return rowKey{sRunRep, r.ID}, &runsT, true
	case backend.Activation:
		return rowKey{sActRep, r.Key}, &activationsT, true
	case backend.FanOutGroup:
		return rowKey{sGroupRep, r.Controller}, &groupsT, true
	case backend.Attempt:
		return rowKey{sAttRep, r.Key}, &attemptsT, true
	case backend.Lease:
		return rowKey{sLeaseRep, r.Key}, &leasesT, true
	case backend.RetrySchedule:
		return rowKey{sSchedRep, r.Key}, &schedulesT, true
	}
	return rowKey{}, nil, false
}

// argsOf returns the column values of a record, in table column order.
func argsOf(r backend.Record) []any {
	switch r := r.(type) {
	case backend.Run:
		return runArgs(&r)
	case backend.Activation:
		return activationArgs(&r)
	case backend.FanOutGroup:
		return groupArgs(&r)
	case backend.Attempt:
		return attemptArgs(&r)
	case backend.Lease:
		return leaseArgs(&r)
	case backend.RetrySchedule:
		return scheduleArgs(&r)
	}
	return nil
}

// sameArg reports whether two bound values store the same column value.
func sameArg(a, b any) bool {
	switch x := a.(type) {
	case []byte:
		y, ok := b.([]byte)
		return ok && bytes.Equal(x, y)
	case nil:
		return b == nil
	}
	if _, ok := b.([]byte); ok {
		return false
	}
	return a == b
}

// remember records the stored value of a row in a read-write transaction.
func (t *readTx) remember(r backend.Record) {
	if !t.writable {
		return
	}
	k, _, ok := rowOf(r)
	if !ok {
		return
	}
	if t.img == nil {
		t.img = make(map[rowKey]backend.Record, 8)
	}
	t.img[k] = r
	t.touched = append(t.touched, k)
}

// forget drops a row's image (after a Delete).
func (t *readTx) forget(r backend.Record) {
	if k, _, ok := rowOf(r); ok && t.img != nil {
		delete(t.img, k)
	}
}

// changed returns the bit mask of the non-key columns of args that differ
// from the row's image; ok is false when there is no usable image.
func (t *readTx) changed(r backend.Record, args []any) (mask uint64, ok bool) {
	k, tb, ok := rowOf(r)
	if !ok || t.img == nil || len(tb.cols)-tb.nkey > 64 {
		return 0, false
	}
	old, ok := t.img[k]
	if !ok {
		return 0, false
	}
	prev := argsOf(old)
	if len(prev) != len(args) {
		return 0, false
	}
	for i := tb.nkey; i < len(args); i++ {
		if !sameArg(prev[i], args[i]) {
			mask |= 1 << (i - tb.nkey)
		}
	}
	return mask, true
}

// partialUpdate returns the UPDATE of t's columns in mask: its SET list
// binds ?1.. in column order, then the key columns follow.
func (tb *table) partialUpdate(mask uint64) string {
	var set []string
	n := 0
	for i, c := range tb.cols[tb.nkey:] {
		if mask&(1<<i) != 0 {
			n++
			set = append(set, fmt.Sprintf("%s = ?%d", c, n))
		}
	}
	var where []string
	for i, c := range tb.cols[:tb.nkey] {
		where = append(where, fmt.Sprintf("%s = ?%d", c, n+i+1))
	}
	return "UPDATE " + tb.name + " SET " + strings.Join(set, ", ") + " WHERE " + strings.Join(where, " AND ")
}

// partialArgs returns the arguments of partialUpdate(mask) from a full
// column list.
func partialArgs(tb *table, mask uint64, args []any) []any {
	out := make([]any, 0, len(args))
	for i, a := range args[tb.nkey:] {
		if mask&(1<<i) != 0 {
			out = append(out, a)
		}
	}
	return append(out, args[:tb.nkey]...)
}

// partialStmt returns the writer's prepared UPDATE of the columns in mask,
// preparing it on first use; nil when the cache is full.
func (w *writer) partialStmt(ctx context.Context, id stmtID, tb *table, mask uint64) (*sql.Stmt, error) {
	k := partialKey{id, mask}
	if s, ok := w.partial[k]; ok {
		return s, nil
	}
	if len(w.partial) >= maxPartialStmts {
		return nil, nil
	}
	s, err := w.conn.PrepareContext(ctx, tb.partialUpdate(mask))
	if err != nil {
		return nil, err
	}
	if w.partial == nil {
		w.partial = make(map[partialKey]*sql.Stmt)
	}
	w.partial[k] = s
	return s, nil
}

// Images across transactions. PRAGMA data_version, read on one connection,
// changes when another connection (of this process or another) has
// committed to the database since that connection last read it, and stays
// the same across the connection's own commits. So the writer keeps the
// images of its last committed Update with the data_version read under
// that Update's write lock, and the next Update, once it holds the write
// lock, reads data_version again: unchanged, nothing but the writer has
// committed in between, the images are still the stored rows, and the
// Update starts with them (an Expect or Replace of the same row then needs
// no read). Changed, unreadable, or after an Update that did not commit,
// the next Update starts with none.

// maxCarried bounds the images one Update passes to the next.
const maxCarried = 64

// carried is what one committed Update passes to the next.
type carried struct {
	img     map[rowKey]backend.Record
	version int64
}

// takeImages is called by an Update holding the write lock: it returns the
// images the Update may start with and the data_version it read (ok false
// when it could not read it; then nothing is passed on either).
func (w *writer) takeImages() (img map[rowKey]backend.Record, version int64, ok bool) {
	c := w.carried
	w.carried = carried{}
	if err := w.stmts[sDataVersion].QueryRowContext(context.Background()).Scan(&version); err != nil {
		return nil, 0, false
	}
	if c.img != nil && c.version == version {
		return c.img, version, true
	}
	return nil, version, true
}

// keepImages passes to the next Update the images of the rows an Update
// that committed loaded or wrote itself (touched); rows it was only handed
// by the Update before are left behind, so that what is carried stays the
// last step's rows and does not pile up. The records are copied, so that a
// caller changing a byte slice or a pointed-to value of a record it wrote
// or read, once the Update has returned, cannot change what the next Update
// takes for the stored row.
func (w *writer) keepImages(img map[rowKey]backend.Record, touched []rowKey, version int64) {
	if len(touched) == 0 || len(touched) > 4*maxCarried {
		return
	}
	out := make(map[rowKey]backend.Record, len(touched))
	for _, k := range touched {
		if _, done := out[k]; done {
			continue
		}
		if r, ok := img[k]; ok { // not deleted since
			out[k] = cloneRecord(r)
			if len(out) > maxCarried {
				return
			}
		}
	}
	w.carried = carried{img: out, version: version}
}

// cloneRecord returns a copy of r sharing no memory with it (nil and
// empty slices stay as they are: Expect tells them apart).
func cloneRecord(r backend.Record) backend.Record {
	switch r := r.(type) {
	case backend.Run:
		if r.Authority != nil {
			a := *r.Authority
			r.Authority = &a
		}
		r.Metadata = bytes.Clone(r.Metadata)
		return r
	case backend.Activation:
		r.Input, r.Output, r.RetryPolicy = bytes.Clone(r.Input), bytes.Clone(r.Output), bytes.Clone(r.RetryPolicy)
		r.Claims, r.Predecessors = slices.Clone(r.Claims), slices.Clone(r.Predecessors)
		if r.Group != nil {
			g := *r.Group
			r.Group = &g
		}
		return r
	case backend.Attempt:
		r.Intent, r.Receipt, r.Detail = bytes.Clone(r.Intent), bytes.Clone(r.Receipt), bytes.Clone(r.Detail)
		return r
	}
	return r // the other replaceable records hold no references
}

// image returns the row image of an expectable record (one Expect
// accepts), if the transaction has one.
func (t *readTx) image(r backend.Record) (backend.Record, bool) {
	switch r.(type) {
	case backend.Run, backend.Activation, backend.Attempt:
	default:
		return nil, false
	}
	k, _, _ := rowOf(r)
	old, ok := t.img[k]
	return old, ok
}

package sqlite

import (
	"bytes"
	"context"
	"database/sql"
	"fmt"
	"strings"
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

// rowKey names one row: its kind's replace statement and its key.
type rowKey struct {
	tbl stmtID
	key any // the kind's key (string or a comparable backend key struct)
}

// image is the last known stored value of one row.
type image interface {
	// carried returns a copy sharing no memory with the records it was
	// made from (see keepImages).
	carried() image
}

// rowImage is the image of a row of kind kd. args, when not nil, are
// kd.args(&rec): the column values the write of rec bound, kept so that
// the next Replace of the row compares with them without building them
// again.
type rowImage[R any, K comparable] struct {
	rec  R
	kd   *kind[R, K]
	args []any
	// owned: rec shares no memory with a record any caller holds (it is
	// a copy carried made), and nothing changes it.
	owned bool
	// at is the key the image is stored under, its row key boxed once, so
	// that touching the row again appends it without boxing it anew.
	at rowKey
}

// carried keeps args: they share no memory with the record (see
// kind.args) and nothing changes them once built, so the next Update's
// Replace of the row compares with them without building them again. An
// image carried before and only read since (an Expect compared with it)
// is passed on as it is: no caller holds its record.
func (im *rowImage[R, K]) carried() image {
	if im.owned {
		return im
	}
	return &rowImage[R, K]{rec: im.kd.clone(im.rec), kd: im.kd, args: im.args, owned: true, at: im.at}
}

// maxPartialStmts bounds the prepared partial UPDATEs per writer
// connection; past it, a Replace sets every column.
const maxPartialStmts = 256

// partialKey names one prepared UPDATE of a subset of a table's columns.
type partialKey struct {
	tbl  stmtID
	mask uint64 // bit i: column nkey+i is set
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

// remember records the stored value r of the row key of kind kd in a
// read-write transaction. Kinds that cannot be replaced keep no images.
func remember[R any, K comparable](t *readTx, kd *kind[R, K], key K, r R) {
	rememberArgs(t, kd, key, r, nil)
}

// rememberArgs is remember for a record r whose column values args
// (kd.args(&r), or nil) are at hand.
func rememberArgs[R any, K comparable](t *readTx, kd *kind[R, K], key K, r R, args []any) {
	if !t.writable || kd.clone == nil {
		return
	}
	if t.img == nil {
		t.img = make(map[rowKey]image, 8)
	}
	if im, ok := t.img[rowKey{kd.rep, key}].(*rowImage[R, K]); ok {
		// Only this transaction's map holds an image (one carried in was
		// taken from the writer), so the row's image is updated in place.
		at := im.at
		*im = rowImage[R, K]{rec: r, kd: kd, args: args, at: at}
		t.touched = append(t.touched, at)
		return
	}
	k := rowKey{kd.rep, key}
	t.img[k] = &rowImage[R, K]{rec: r, kd: kd, args: args, at: k}
	t.touched = append(t.touched, k)
}

// touch records that the transaction itself read the row of im, an image
// it already has (an Expect compared with it).
func touch[R any, K comparable](t *readTx, im *rowImage[R, K]) {
	t.touched = append(t.touched, im.at)
}

// forget drops a row's image (after a Delete).
func forget[R any, K comparable](t *readTx, kd *kind[R, K], key K) {
	if t.img != nil && kd.clone != nil {
		delete(t.img, rowKey{kd.rep, key})
	}
}

// imageOf returns the image of the row key of kind kd, if the transaction
// has one.
func imageOf[R any, K comparable](t *readTx, kd *kind[R, K], key K) (*rowImage[R, K], bool) {
	im, ok := t.img[rowKey{kd.rep, key}].(*rowImage[R, K])
	return im, ok
}

// imageArgs returns the column values of the image of the row key; ok is
// false when the transaction has no image of it usable for a partial
// write (changedMask). An image without them (a row the transaction
// read) gets them built, sharing like's boxes (another row's column
// values, or nil) for the columns whose values it shares.
func imageArgs[R any, K comparable](t *readTx, kd *kind[R, K], key K, like []any) (args []any, ok bool) {
	if len(kd.tb.cols)-kd.tb.nkey > 64 {
		return nil, false
	}
	im, ok := t.img[rowKey{kd.rep, key}].(*rowImage[R, K])
	if !ok {
		return nil, false
	}
	if im.args == nil {
		im.args = kd.argsOf(&im.rec, like)
	}
	return im.args, true
}

// changedMask returns the bit mask of the non-key columns of args that
// differ from prev, the column values of the row's image (imageArgs).
func changedMask(tb *table, prev, args []any) (mask uint64) {
	for i := tb.nkey; i < len(args); i++ {
		if !sameArg(prev[i], args[i]) {
			mask |= 1 << (i - tb.nkey)
		}
	}
	return mask
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

// maxCarried bounds the images one Update passes to the next. It is sized
// for a batch admission step (a batch of 1000 activations touches 1000
// attempts, 1000 activations and their runs), so that the next step's
// Expects of those rows compare against the images without reading; an
// image is a row's column values, so the bound is a few megabytes at most.
const maxCarried = 4096

// carried is what one committed Update passes to the next.
type carried struct {
	img     map[rowKey]image
	version int64
}

// takeImages is called by an Update holding the write lock: it returns the
// images the Update may start with and the data_version it read (ok false
// when it could not read it; then nothing is passed on either).
func (w *writer) takeImages() (img map[rowKey]image, version int64, ok bool) {
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
func (w *writer) keepImages(img map[rowKey]image, touched []rowKey, version int64) {
	if len(touched) == 0 || len(touched) > 4*maxCarried {
		return
	}
	out := make(map[rowKey]image, len(touched))
	for _, k := range touched {
		if _, done := out[k]; done {
			continue
		}
		if im, ok := img[k]; ok { // not deleted since
			out[k] = im.carried()
			if len(out) > maxCarried {
				return
			}
		}
	}
	w.carried = carried{img: out, version: version}
}

package sqlite

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"fmt"
	"strings"

	"github.com/wfstore/wfstore/backend"
)

// Many-row statements. A batch admission writes slices of a hundred
// attempts, activations and events per transaction; one statement per
// record costs a database/sql call, a VDBE start and the argument
// conversions per row, which bound the batch far below the commit rate.
// A slice of at least manyFrom records is written instead with multi-row
// statements of manyChunks rows (the largest that fit first, the last
// few records one by one), each prepared once per writer connection:
//
//   - Inserts: INSERT ... VALUES (...), (...) ON CONFLICT DO NOTHING, whose
//     count of inserted rows must equal the chunk's (a duplicate, stored
//     or earlier in the slice, makes it smaller: backend.ErrConflict).
//   - Replaces whose rows have images (image.go): the records whose
//     changed columns are the same set go together in one UPDATE ... FROM
//     (VALUES ...) of those columns, joined on the key. Only records with
//     distinct keys whose unique non-key column (an attempt's identity)
//     does not change are grouped: their updates commute with every other
//     update of the slice, so the outcome is that of writing the slice in
//     order. The others are written one by one, in slice order.

// manyFrom is the shortest slice written with many-row statements.
const manyFrom = 8

// manyChunks are the row counts of the many-row statements, largest first.
var manyChunks = []int{64, 32, 16, 8, 4, 2}

// maxManyStmts bounds the prepared many-row statements (reads and writes) per writer
// connection; past it, records are written one by one.
const maxManyStmts = 256

// manyKey names one prepared many-row statement: the table's insert
// (mask 0) or the UPDATE of the columns in mask, for rows records.
type manyKey struct {
	tbl  stmtID
	mask uint64
	rows int
}

// chunkOf returns the row count of the next statement for left records (1:
// one by one).
func chunkOf(left int) int {
	for _, n := range manyChunks {
		if n <= left {
			return n
		}
	}
	return 1
}

func placeholders(b *strings.Builder, rows, cols int) {
	for r := 0; r < rows; r++ {
		if r > 0 {
			b.WriteString(", ")
		}
		b.WriteByte('(')
		for c := 0; c < cols; c++ {
			if c > 0 {
				b.WriteString(", ")
			}
			b.WriteByte('?')
		}
		b.WriteByte(')')
	}
}

// insertMany returns the insert of rows records; its arguments are the
// records' column values one record after the other.
func (tb *table) insertMany(rows int) string {
	var b strings.Builder
	b.WriteString("INSERT INTO " + tb.name + " (" + tb.list() + ") VALUES ")
	placeholders(&b, rows, len(tb.cols))
	b.WriteString(" ON CONFLICT DO NOTHING")
	return b.String()
}

// updateMany returns the UPDATE of the columns in mask for rows records;
// its arguments are, per record, the key columns then the columns of mask
// in column order (see manyUpdateArgs).
func (tb *table) updateMany(mask uint64, rows int) string {
	var set []string
	n := tb.nkey
	for i, c := range tb.cols[tb.nkey:] {
		if mask&(1<<i) != 0 {
			n++
			set = append(set, fmt.Sprintf("%s = v.column%d", c, n))
		}
	}
	var where []string
	for i, c := range tb.cols[:tb.nkey] {
		where = append(where, fmt.Sprintf("%s.%s = v.column%d", tb.name, c, i+1))
	}
	var b strings.Builder
	b.WriteString("UPDATE " + tb.name + " SET " + strings.Join(set, ", ") + " FROM (VALUES ")
	placeholders(&b, rows, n)
	b.WriteString(") AS v WHERE " + strings.Join(where, " AND "))
	return b.String()
}

// manyUpdateArgs appends the arguments of one record of updateMany(mask)
// from a full column list.
func manyUpdateArgs(out []any, tb *table, mask uint64, args []any) []any {
	out = append(out, args[:tb.nkey]...)
	for i, a := range args[tb.nkey:] {
		if mask&(1<<i) != 0 {
			out = append(out, a)
		}
	}
	return out
}

// manyStmt returns the writer's prepared many-row statement k, preparing
// it on first use; nil when the cache is full.
func (w *writer) manyStmt(ctx context.Context, k manyKey, text func() string) (*sql.Stmt, error) {
	if s, ok := w.many[k]; ok {
		return s, nil
	}
	if len(w.many) >= maxManyStmts {
		return nil, nil
	}
	s, err := w.conn.PrepareContext(ctx, text())
	if err != nil {
		return nil, err
	}
	if w.many == nil {
		w.many = make(map[manyKey]*sql.Stmt)
	}
	w.many[k] = s
	return s, nil
}

// writeStmt returns the writer's prepared many-row write k (an INSERT
// or UPDATE), preparing it on first use on the driver's connection; nil
// when the cache is full. Writes are run on the driver's own statement
// (execMany), not through database/sql: a statement of 64 rows binds up to
// a thousand values, which database/sql would copy into a fresh list of
// its own and check one by one on every run.
func (w *writer) writeStmt(ctx context.Context, k manyKey, text func() string) (driver.Stmt, error) {
	if s, ok := w.writes[k]; ok {
		return s, nil
	}
	if len(w.many)+len(w.writes) >= maxManyStmts {
		return nil, nil
	}
	var s driver.Stmt
	err := w.conn.Raw(func(dc any) error {
		p, ok := dc.(driver.ConnPrepareContext)
		if !ok {
			return fmt.Errorf("driver connection %T cannot prepare with a context", dc)
		}
		var err error
		s, err = p.PrepareContext(ctx, text())
		return err
	})
	if err != nil {
		return nil, err
	}
	if _, ok := s.(driver.StmtExecContext); !ok {
		_ = w.conn.Raw(func(any) error { return s.Close() })
		return nil, fmt.Errorf("driver statement %T cannot execute with a context", s)
	}
	if w.writes == nil {
		w.writes = make(map[manyKey]driver.Stmt)
	}
	w.writes[k] = s
	return s, nil
}

// closeWrites closes the writer's many-row writes, on its connection.
func (w *writer) closeWrites() {
	if len(w.writes) == 0 {
		return
	}
	_ = w.conn.Raw(func(any) error {
		for _, s := range w.writes {
			_ = s.Close()
		}
		return nil
	})
	clear(w.writes)
}

// execMany runs one many-row write s (writeStmt) of rows records; none
// is the error when it affects fewer rows. The arguments are bound as
// they are (they are driver values: int64, string, []byte or nil; anything
// else is converted as database/sql would), through one list of the
// writer's own reused from statement to statement and cleared after each,
// so that it keeps no record's values.
func (t *writeTx) execMany(ctx context.Context, s driver.Stmt, args []any, rows int, none error) error {
	var n int64
	err := t.w.conn.Raw(func(any) error {
		nv := t.w.nv[:0]
		for i, a := range args {
			if !driver.IsValue(a) {
				v, err := driver.DefaultParameterConverter.ConvertValue(a)
				if err != nil {
					return fmt.Errorf("argument %d: %w", i+1, err)
				}
				a = v
			}
			nv = append(nv, driver.NamedValue{Ordinal: i + 1, Value: a})
		}
		res, err := s.(driver.StmtExecContext).ExecContext(ctx, nv)
		clear(nv)
		t.w.nv = nv[:0]
		if err != nil {
			return err
		}
		n, err = res.RowsAffected()
		return err
	})
	if err != nil {
		if isUniqueViolation(err) {
			return fmt.Errorf("%w: %w", backend.ErrConflict, err)
		}
		return t.fail(err)
	}
	if n != int64(rows) {
		return fmt.Errorf("%d of %d rows written: %w", n, rows, none)
	}
	return nil
}

// failedRange records the error of elements [i, i+n) of op.field.
func (a *applier) failedRange(op, field string, i, n int, err error) {
	if n == 1 {
		a.failed(op, field, i, err)
		return
	}
	a.err = fmt.Errorf("sqlite: apply %s.%s[%d:%d]: %w", op, field, i, i+n, err)
}

// insertMany writes recs (at least manyFrom of them) in chunks; s is the
// one-row insert for the records left over.
func insertMany[R any, K comparable](a *applier, kd *kind[R, K], s *sql.Stmt, recs []R) {
	ncol := len(kd.tb.cols)
	var like []any // the record before, whose values the next mostly shares
	for i := 0; i < len(recs); {
		n := chunkOf(len(recs) - i)
		var ms driver.Stmt
		if n > 1 {
			var err error
			ms, err = a.t.w.writeStmt(a.ctx, manyKey{kd.ins, 0, n}, func() string { return kd.tb.insertMany(n) })
			if err != nil {
				a.failed("Insert", kd.field, i, a.t.fail(fmt.Errorf("prepare many-row insert: %w", err)))
				return
			}
			if ms == nil {
				n = 1
			}
		}
		// Each record's column values, kept in its image, are its part of
		// the statement's arguments (capped, so that nothing appends over
		// the next record's), its boxes shared with the record before.
		var err error
		each := make([][]any, n)
		args := make([]any, 0, n*ncol)
		for j := range each {
			args = kd.args(args, &recs[i+j], like)
			each[j] = args[len(args)-ncol : len(args) : len(args)]
			like = each[j]
		}
		if n == 1 {
			err = a.t.exec(a.ctx, s, args, backend.ErrConflict)
		} else {
			err = a.t.execMany(a.ctx, ms, args, n, backend.ErrConflict)
		}
		if err != nil {
			a.failedRange("Insert", kd.field, i, n, err)
			return
		}
		for j := range each {
			rememberArgs(&a.t.readTx, kd, kd.key(&recs[i+j]), recs[i+j], each[j])
		}
		i += n
	}
}

// replaceMany writes recs (distinct keys): the records with images
// grouped by the columns they change (see the top of this file), the
// others one by one through s in slice order. It reports false, having
// written nothing, when the keys are not distinct; otherwise the error of
// the first write that failed, with the index in recs of its record.
func replaceMany[R any, K comparable](ctx context.Context, t *writeTx, kd *kind[R, K], s *sql.Stmt, recs []R) (ok bool, failed int, err error) {
	tb := kd.tb
	if len(tb.cols)-tb.nkey > 64 {
		return false, 0, nil
	}
	seen := make(map[K]struct{}, len(recs))
	for i := range recs {
		k := kd.key(&recs[i])
		if _, dup := seen[k]; dup {
			return false, 0, nil
		}
		seen[k] = struct{}{}
	}
	type rec struct {
		i    int
		args []any
	}
	var masks []uint64
	groups := map[uint64][]rec{}
	var solo []int
	var last []any // the image before's column values, which the next row's mostly share
	for i := range recs {
		prev, ok := imageArgs(&t.readTx, kd, kd.key(&recs[i]), last)
		if ok {
			last = prev
		}
		args := kd.argsOf(&recs[i], prev)
		var mask uint64
		if ok {
			mask = changedMask(tb, prev, args)
		}
		switch {
		case !ok || mask&kd.uniqueMask != 0:
			solo = append(solo, i)
		case mask == 0:
			rememberArgs(&t.readTx, kd, kd.key(&recs[i]), recs[i], args)
		default:
			if _, ok := groups[mask]; !ok {
				masks = append(masks, mask)
			}
			groups[mask] = append(groups[mask], rec{i, args})
		}
	}
	for _, mask := range masks {
		g := groups[mask]
		width := tb.nkey
		for m := mask; m != 0; m &= m - 1 {
			width++
		}
		for at := 0; at < len(g); {
			n := chunkOf(len(g) - at)
			var ms driver.Stmt
			if n > 1 {
				var err error
				ms, err = t.w.writeStmt(ctx, manyKey{kd.rep, mask, n}, func() string { return tb.updateMany(mask, n) })
				if err != nil {
					return true, g[at].i, t.fail(fmt.Errorf("prepare many-row update: %w", err))
				}
			}
			if ms == nil { // one record, or the cache is full
				if err := replaceOne(ctx, t, kd, s, &recs[g[at].i]); err != nil {
					return true, g[at].i, err
				}
				at++
				continue
			}
			// The statement's arguments are only bound (the images keep
			// each record's own list), so one list of the writer's serves
			// every statement, cleared after each.
			args := t.w.args[:0]
			for _, r := range g[at : at+n] {
				args = manyUpdateArgs(args, tb, mask, r.args)
			}
			err := t.execMany(ctx, ms, args, n, backend.ErrNotFound)
			clear(args)
			t.w.args = args[:0]
			if err != nil {
				return true, g[at].i, err
			}
			for _, r := range g[at : at+n] {
				rememberArgs(&t.readTx, kd, kd.key(&recs[r.i]), recs[r.i], r.args)
			}
			at += n
		}
	}
	for _, i := range solo {
		if err := replaceOne(ctx, t, kd, s, &recs[i]); err != nil {
			return true, i, err
		}
	}
	return true, 0, nil
}

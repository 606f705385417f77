package sqlite

import (
	"context"
	"fmt"
	"strings"
)

// Many-row reads. A batch step loads a hundred activations or attempts by
// key in one Load; one SELECT per key costs a database/sql call, a VDBE
// start and the argument conversions per row, as one INSERT per row did
// (manyrow.go). On the writer connection, a Load of at least manyFrom keys
// of a kind reads them with SELECTs of manyChunks keys each, joining the
// keys (a VALUES list, the outer loop) to the table on its primary key,
// each statement prepared once per writer connection. A key with no row
// contributes nothing, as with one SELECT per key; a key listed twice
// reads its row twice, to the same result.

// selectMany returns the SELECT of the rows of rows keys; its arguments
// are the keys' column values one key after the other.
func (tb *table) selectMany(rows int) string {
	cols := make([]string, len(tb.cols))
	for i, c := range tb.cols {
		cols[i] = "t." + c
	}
	on := make([]string, tb.nkey)
	for i, c := range tb.cols[:tb.nkey] {
		on[i] = fmt.Sprintf("t.%s = v.column%d", c, i+1)
	}
	var b strings.Builder
	b.WriteString("SELECT " + strings.Join(cols, ", ") + " FROM (VALUES ")
	placeholders(&b, rows, tb.nkey)
	b.WriteString(") AS v CROSS JOIN " + tb.name + " AS t ON " + strings.Join(on, " AND "))
	return b.String()
}

// loadKeys reads the rows of keys of kind kd and hands each row found to
// found: through loadMany on the writer when there are at least manyFrom
// keys, else one SELECT (get) per key in key order.
func loadKeys[R any, K comparable](ctx context.Context, t *readTx, kd *kind[R, K], get stmtID, what string,
	scan func(scanner) (R, error), keys []K, found func(K, R)) error {
	if t.w != nil && len(keys) >= manyFrom {
		return loadMany(ctx, t, kd, get, what, scan, keys, found)
	}
	one, err := t.stmt(ctx, get)
	if err != nil {
		return err
	}
	for _, k := range keys {
		v, ok, err := get1(ctx, t, one, what, scan, kd.keyArgsOf(k))
		if err != nil {
			return err
		}
		if ok {
			found(k, v)
		}
	}
	return nil
}

// loadMany reads the rows of keys of kind kd (get is the kind's one-row
// SELECT, for the keys left over) and hands each row found to found, in
// no particular order. It is used only on the writer connection.
func loadMany[R any, K comparable](ctx context.Context, t *readTx, kd *kind[R, K], get stmtID, what string,
	scan func(scanner) (R, error), keys []K, found func(K, R)) error {
	one, err := t.stmt(ctx, get)
	if err != nil {
		return err
	}
	for i := 0; i < len(keys); {
		n := chunkOf(len(keys) - i)
		if n == 1 {
			v, ok, err := get1(ctx, t, one, what, scan, kd.keyArgsOf(keys[i]))
			if err != nil {
				return err
			}
			if ok {
				found(keys[i], v)
			}
			i++
			continue
		}
		s, err := t.w.manyStmt(ctx, manyKey{get, 0, n}, func() string { return kd.tb.selectMany(n) })
		if err != nil {
			return t.fail(fmt.Errorf("sqlite: prepare many-row load of %s: %w", what, err))
		}
		if s == nil { // the cache is full: one by one
			for _, k := range keys[i : i+n] {
				v, ok, err := get1(ctx, t, one, what, scan, kd.keyArgsOf(k))
				if err != nil {
					return err
				}
				if ok {
					found(k, v)
				}
			}
			i += n
			continue
		}
		nkey := kd.tb.nkey
		args := make([]any, 0, n*nkey)
		for _, k := range keys[i : i+n] {
			// The key before's boxes serve the columns it shares (the run).
			var like []any
			if len(args) > 0 {
				like = args[len(args)-nkey:]
			}
			args = kd.keyArgs(args, k, like)
		}
		rows, err := s.QueryContext(ctx, args...)
		if err != nil {
			return t.fail(fmt.Errorf("sqlite: load %s: %w", what, err))
		}
		for rows.Next() {
			v, err := scan(rows)
			if err != nil {
				rows.Close()
				return t.fail(fmt.Errorf("sqlite: load %s: %w", what, err))
			}
			found(kd.key(&v), v)
		}
		err = rows.Err()
		if cerr := rows.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return t.fail(fmt.Errorf("sqlite: load %s: %w", what, err))
		}
		i += n
	}
	return nil
}

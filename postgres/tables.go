package postgres

import (
	"fmt"
	"strconv"
	"strings"
)

// table describes one table: its name, its key columns (a prefix of cols)
// and every column, with its SQL type, in the order the codecs read and
// write them.
type table struct {
	name  string
	nkey  int
	cols  []string
	types []string // "text", "bigint", "boolean", "bytea" or "text[]"
}

// newTable makes a table from "name type" column specs.
func newTable(name string, nkey int, cols ...string) table {
	t := table{name: name, nkey: nkey}
	for _, c := range cols {
		n, typ, _ := strings.Cut(c, " ")
		t.cols, t.types = append(t.cols, n), append(t.types, typ)
	}
	return t
}

// selectList returns the column list, each prefixed with alias when set.
func (t table) selectList(alias string) string {
	var sb strings.Builder
	for i, c := range t.cols {
		if i > 0 {
			sb.WriteString(", ")
		}
		if alias != "" {
			sb.WriteString(alias)
			sb.WriteByte('.')
		}
		sb.WriteString(c)
	}
	return sb.String()
}

// The tables of the current schema version, each column as "name type".
// Column order here is the order of the encoders and decoders in codec.go;
// TestTablesMatchTheSchema checks the names and types against the catalog.
var (
	tRuns = newTable("runs", 1,
		"id text", "root_id text", "parent_id text", "depth bigint", "status text",
		"node_execution_cap bigint", "concurrency_cap bigint", "cycle_cap bigint", "retry_cap bigint",
		"deadline_ms bigint", "cancel_requested_ms bigint",
		"auth_target_artifact_id text", "auth_daemon_instance_id text", "auth_generation bigint", "auth_fencing_token text",
		"metadata bytea", "created_ms bigint", "updated_ms bigint", "last_event_seq bigint",
		"attempt_count bigint", "active_count bigint", "tree_attempt_count bigint", "descendant_count bigint",
		"exhaustion_recorded boolean",
	)
	tLinks = newTable("run_links", 1,
		"child_run_id text", "root_run_id text",
		"parent_run_id text", "parent_node_id text", "parent_activation_id text", "parent_attempt bigint",
		"target bytea", "depth bigint", "created_ms bigint",
	)
	tActivations = newTable("activations", 3,
		"run_id text", "node_id text", "activation_id text",
		"generation bigint", "status text", "admissible boolean", "input bytea", "output bytea",
		"claim_resources text[]", "claim_modes text[]", "effect text", "reconciliation text", "retry_policy bytea",
		"predecessor_node_ids text[]", "predecessor_activation_ids text[]", "has_successors boolean",
		"group_run_id text", "group_node_id text", "group_activation_id text", "group_index bigint",
		"last_attempt bigint", "created_ms bigint", "updated_ms bigint", "attempt_timeout_ms bigint",
		"wait_for_node_ids text[]", "wait_for_activation_ids text[]", "open_waits bigint",
		"join_node_ids text[]", "join_activation_ids text[]",
	)
	tGroups = newTable("fan_out_groups", 3,
		"run_id text", "node_id text", "activation_id text",
		"size bigint", "max_concurrency bigint", "promoted bigint", "settled bigint",
		"retiring boolean", "retired_ms bigint", "created_ms bigint", "fail_fast boolean",
		"fan_in boolean",
	)
	tAttempts = newTable("attempts", 4,
		"run_id text", "node_id text", "activation_id text", "attempt bigint",
		"identity text", "status text", "side_effect text", "intent bytea", "intent_checksum text", "receipt bytea",
		"handoff text", "detail bytea", "prepared_ms bigint", "admitted_ms bigint", "terminal_ms bigint",
		"handoff_token text",
	)
	tLeases = newTable("leases", 6,
		"run_id text", "node_id text", "activation_id text", "attempt bigint", "resource text", "mode text",
		"acquired_ms bigint", "released_ms bigint",
	)
	tSchedules = newTable("retry_schedules", 3,
		"run_id text", "node_id text", "activation_id text",
		"failed_attempt bigint", "next_attempt bigint", "failure_kind text", "backoff_ms bigint", "due_ms bigint", "scheduled_ms bigint",
	)
	tEvents = newTable("events", 2,
		"run_id text", "seq bigint", "type text", "payload bytea", "created_ms bigint",
	)
)

// dollars returns "$from, $from+1, ..., $from+n-1".
func dollars(from, n int) string {
	var sb strings.Builder
	for i := 0; i < n; i++ {
		if i > 0 {
			sb.WriteString(", ")
		}
		sb.WriteByte('$')
		sb.WriteString(strconv.Itoa(from + i))
	}
	return sb.String()
}

// writeSQL holds one table's write statements. The one-row forms take one
// parameter per column ($1.. in column order; delete: the key columns);
// the many-row forms take the arrays rowArrays builds and read them with
// unnest, so one statement writes a whole slice. Insert, replace and
// delete are guarded (guardWrite, guardRows); expect fails the same way
// unless every given row is stored with exactly the given values.
type writeSQL struct {
	t                                   table
	insert, replace, delete, expect     string
	insertN, replaceN, deleteN, expectN string
}

func buildWriteSQL(qual func(string) string, t table) writeSQL {
	w := writeSQL{t: t}
	q := qual(t.name)
	cols := t.selectList("")
	w.insert = guardWrite("INSERT INTO " + q + " (" + cols + ") VALUES (" + dollars(1, len(t.cols)) + ") ON CONFLICT DO NOTHING")
	var set, keyEq, same strings.Builder
	for i, c := range t.cols {
		p := "$" + strconv.Itoa(i+1)
		if i < t.nkey {
			and(&keyEq, c+" = "+p)
			continue
		}
		if set.Len() > 0 {
			set.WriteString(", ")
		}
		set.WriteString(c + " = " + p)
		// IS NOT DISTINCT FROM: NULL (a nil list or JSON) equals only NULL.
		same.WriteString(" AND " + c + " IS NOT DISTINCT FROM " + p)
	}
	w.replace = guardWrite("UPDATE " + q + " SET " + set.String() + " WHERE " + keyEq.String())
	w.delete = guardWrite("DELETE FROM " + q + " WHERE " + keyEq.String())
	w.expect = "SELECT 1 / count(*) FROM " + q + " WHERE " + keyEq.String() + same.String()

	// Many rows: v is the unnest of the parameter arrays, one row per
	// record; x is the table.
	all, key := t.unnest(len(t.cols)), t.unnest(t.nkey)
	var vset, vkey, vsame strings.Builder
	for i, c := range t.cols {
		if i < t.nkey {
			and(&vkey, "x."+c+" = "+all.exprs[i])
			continue
		}
		if vset.Len() > 0 {
			vset.WriteString(", ")
		}
		vset.WriteString(c + " = " + all.exprs[i])
		vsame.WriteString(" AND x." + c + " IS NOT DISTINCT FROM " + all.exprs[i])
	}
	w.insertN = guardRows("INSERT INTO " + q + " (" + cols + ") SELECT " + strings.Join(all.exprs, ", ") +
		" FROM " + all.from + " ON CONFLICT DO NOTHING")
	w.replaceN = guardRows("UPDATE " + q + " AS x SET " + vset.String() + " FROM " + all.from + " WHERE " + vkey.String())
	w.deleteN = guardRows("DELETE FROM " + q + " AS x USING " + key.from + " WHERE " + vkey.String())
	w.expectN = "SELECT 1 / (count(*) = " + rowCount + ")::int FROM " + all.from +
		" JOIN " + q + " AS x ON " + vkey.String() + vsame.String()
	return w
}

func and(sb *strings.Builder, cond string) {
	if sb.Len() > 0 {
		sb.WriteString(" AND ")
	}
	sb.WriteString(cond)
}

// guardWrite makes a one-row write that matches no row (an Insert whose
// key or unique Identity exists, a Replace or Delete of a missing key) fail
// on the server with division_by_zero (SQLSTATE 22012) instead of
// reporting 0 rows. A failed statement aborts the transaction and makes the
// server skip the rest of the batch, so a write deferred to the batch
// carrying COMMIT can never let the other writes commit without it.
// count(*) is not a constant, so the division is evaluated at run time
// only.
func guardWrite(sql string) string {
	return "WITH w AS (" + sql + " RETURNING 1) SELECT 1 / count(*) FROM w"
}

// guardRows is guardWrite for a many-row write: it fails unless the write
// matched exactly as many rows as it was given. Every key of a Replace or
// Delete slice must exist, and a Delete slice naming one key twice deletes
// it once, as the second Delete one by one would fail; no Insert of the
// slice may meet an existing key or Identity, nor one inserted by an
// earlier row of the same statement (ON CONFLICT DO NOTHING skips such a
// row too). A Replace slice reaches it without repeated keys (see
// kind.queue): an UPDATE updates a row once however many rows of v match
// it.
func guardRows(sql string) string {
	return "WITH w AS (" + sql + " RETURNING 1) SELECT 1 / (count(*) = " + rowCount + ")::int FROM w"
}

// rowCount is the number of rows a many-row statement was given: the
// length of its first array, which is always the text[] of the first key
// column.
const rowCount = "cardinality($1::text[])"

// unnested is how a many-row statement reads its parameters: from is
// "unnest(<key arrays>) WITH ORDINALITY AS v(<key columns>, ord)",
// exprs[i] the value of column i.
type unnested struct {
	from  string
	exprs []string
}

// unnest describes the first n columns of t as rowArrays encodes them.
// Only the key columns are unnested, with the row's ordinal: a join on
// them walks the primary key row by row, and a set-returning function per
// column would cost more than the whole statement (each function of a
// ROWS FROM gets its own tuplestore, about 10 µs apiece). Every other
// column is its array subscripted with v.ord. A text[] column cannot be an
// element of an array of arrays (PostgreSQL arrays are rectangular), so
// its lists are concatenated into one flat text[] parameter, after every
// other one, and each row carries its list's 1-based start in it and
// length (-1 for NULL): the value is that slice of the flat array (an
// empty slice is the empty array).
func (t table) unnest(n int) unnested {
	cols, types := t.cols[:n], t.types[:n]
	nargs := 0
	for _, typ := range types {
		nargs++
		if typ == "text[]" {
			nargs++
		}
	}
	param := func(p *int, typ string) string { *p++; return "($" + strconv.Itoa(*p) + "::" + typ + ")" }
	var u unnested
	var keys, names []string
	p, flat := 0, nargs
	for i, c := range cols {
		switch {
		case i < t.nkey:
			keys, names = append(keys, param(&p, types[i]+"[]")), append(names, c)
			u.exprs = append(u.exprs, "v."+c)
		case types[i] != "text[]":
			u.exprs = append(u.exprs, param(&p, types[i]+"[]")+"[v.ord]")
		default:
			s, l := param(&p, "int[]")+"[v.ord]", param(&p, "int[]")+"[v.ord]"
			u.exprs = append(u.exprs, "CASE WHEN "+l+" < 0 THEN NULL ELSE "+param(&flat, "text[]")+
				"["+s+" : "+s+" + "+l+" - 1] END")
		}
	}
	u.from = "unnest(" + strings.Join(keys, ", ") + ") WITH ORDINALITY AS v(" + strings.Join(names, ", ") + ", ord)"
	return u
}

// rowArrays encodes rows, each the values of t's first len(rows[0])
// columns as the encoders in codec.go return them, into the parameters of
// a many-row statement (see unnest): one array per scalar column, two int4
// arrays (start, length) per text[] column, in column order, then the flat
// text[] of each text[] column. rows must not be empty.
//
// Each column's Go type is fixed by its encoder, whatever the record holds
// (a nil pointer is still a *string), so a mismatch with the column's SQL
// type is a bug in this package that every test writing two records of
// the kind finds; it panics.
func (t table) rowArrays(rows [][]any) []any {
	n := len(rows[0])
	var out, flats []any
	for c := 0; c < n; c++ {
		if t.types[c] != "text[]" {
			out = append(out, column(rows, c))
			continue
		}
		starts, lens := make([]int32, len(rows)), make([]int32, len(rows))
		flat := []string{} // never NULL: a slice of a NULL array is NULL, not empty
		for r, row := range rows {
			l := row[c].([]string)
			starts[r] = int32(len(flat) + 1)
			if l == nil {
				lens[r] = -1
			} else {
				lens[r] = int32(len(l))
				flat = append(flat, l...)
			}
		}
		out = append(out, starts, lens)
		flats = append(flats, flat)
	}
	return append(out, flats...)
}

// column gathers column c of rows into one typed slice, which pgx encodes
// as an array (nil pointers and nil byte slices as NULL elements).
func column(rows [][]any, c int) any {
	switch v := rows[0][c].(type) {
	case string:
		return gather[string](rows, c)
	case *string:
		return gather[*string](rows, c)
	case int64:
		return gather[int64](rows, c)
	case *int64:
		return gather[*int64](rows, c)
	case bool:
		return gather[bool](rows, c)
	case []byte:
		return gather[[]byte](rows, c)
	default:
		panic(fmt.Sprintf("postgres: no array encoding for a %T column", v))
	}
}

func gather[T any](rows [][]any, c int) []T {
	out := make([]T, len(rows))
	for i, row := range rows {
		out[i] = row[c].(T)
	}
	return out
}

package postgres

import (
	"strconv"
	"strings"
)

// table describes one table: its name, its key columns (a prefix of cols)
// and every column in the order the codecs read and write them.
type table struct {
	name string
	nkey int
	cols []string
}

func (t table) key() []string    { return t.cols[:t.nkey] }
func (t table) nonKey() []string { return t.cols[t.nkey:] }

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

// The tables of schema version 1. Column order here is the order of the
// encode*/decode* functions in codec.go.
var (
	tRuns = table{name: "runs", nkey: 1, cols: []string{
		"id", "root_id", "parent_id", "depth", "status",
		"node_execution_cap", "concurrency_cap", "cycle_cap", "retry_cap",
		"deadline_ms", "cancel_requested_ms",
		"auth_target_artifact_id", "auth_daemon_instance_id", "auth_generation", "auth_fencing_token",
		"metadata", "created_ms", "updated_ms", "last_event_seq",
		"attempt_count", "active_count", "tree_attempt_count", "descendant_count",
		"exhaustion_recorded",
	}}
	tLinks = table{name: "run_links", nkey: 1, cols: []string{
		"child_run_id", "root_run_id",
		"parent_run_id", "parent_node_id", "parent_activation_id", "parent_attempt",
		"target", "depth", "created_ms",
	}}
	tActivations = table{name: "activations", nkey: 3, cols: []string{
		"run_id", "node_id", "activation_id",
		"generation", "status", "admissible", "input", "output",
		"claim_resources", "claim_modes", "effect", "reconciliation", "retry_policy",
		"predecessor_node_ids", "predecessor_activation_ids", "has_successors",
		"group_run_id", "group_node_id", "group_activation_id", "group_index",
		"last_attempt", "created_ms", "updated_ms",
	}}
	tGroups = table{name: "fan_out_groups", nkey: 3, cols: []string{
		"run_id", "node_id", "activation_id",
		"size", "max_concurrency", "promoted", "settled", "retiring", "retired_ms", "created_ms", "fail_fast",
	}}
	tAttempts = table{name: "attempts", nkey: 4, cols: []string{
		"run_id", "node_id", "activation_id", "attempt",
		"identity", "status", "side_effect", "intent", "intent_checksum", "receipt",
		"handoff", "detail", "prepared_ms", "admitted_ms", "terminal_ms",
	}}
	tLeases = table{name: "leases", nkey: 6, cols: []string{
		"run_id", "node_id", "activation_id", "attempt", "resource", "mode",
		"acquired_ms", "released_ms",
	}}
	tSchedules = table{name: "retry_schedules", nkey: 3, cols: []string{
		"run_id", "node_id", "activation_id",
		"failed_attempt", "next_attempt", "failure_kind", "backoff_ms", "due_ms", "scheduled_ms",
	}}
	tEvents = table{name: "events", nkey: 2, cols: []string{
		"run_id", "seq", "type", "payload", "created_ms",
	}}
)

// dollar returns "$1, $2, ..., $n" starting at from.
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

// writeSQL holds the insert, replace and delete statements of one table,
// each guarded by guardWrite, and the expect statement, which fails the
// same way unless the row with the key holds exactly the given values.
type writeSQL struct {
	insert, replace, delete, expect string
}

func buildWriteSQL(qual func(string) string, t table) writeSQL {
	var w writeSQL
	w.insert = "INSERT INTO " + qual(t.name) + " (" + t.selectList("") + ") VALUES (" +
		dollars(1, len(t.cols)) + ") ON CONFLICT DO NOTHING"
	var set, where strings.Builder
	for i, c := range t.cols {
		p := "$" + strconv.Itoa(i+1)
		if i < t.nkey {
			if where.Len() > 0 {
				where.WriteString(" AND ")
			}
			where.WriteString(c + " = " + p)
		} else {
			if set.Len() > 0 {
				set.WriteString(", ")
			}
			set.WriteString(c + " = " + p)
		}
	}
	w.replace = "UPDATE " + qual(t.name) + " SET " + set.String() + " WHERE " + where.String()
	where.Reset()
	for i, c := range t.key() {
		if i > 0 {
			where.WriteString(" AND ")
		}
		where.WriteString(c + " = $" + strconv.Itoa(i+1))
	}
	w.delete = "DELETE FROM " + qual(t.name) + " WHERE " + where.String()
	w.insert, w.replace, w.delete = guardWrite(w.insert), guardWrite(w.replace), guardWrite(w.delete)
	// IS NOT DISTINCT FROM: NULL (a nil list or JSON) equals only NULL.
	for i, c := range t.nonKey() {
		where.WriteString(" AND " + c + " IS NOT DISTINCT FROM $" + strconv.Itoa(t.nkey+i+1))
	}
	w.expect = "SELECT 1 / count(*) FROM " + qual(t.name) + " WHERE " + where.String()
	return w
}

// guardWrite makes a write that matches no row (an Insert whose key or
// unique Identity exists, a Replace or Delete of a missing key) fail on the
// server with division_by_zero (SQLSTATE 22012) instead of reporting 0
// rows. A failed statement aborts the transaction and makes the server skip
// the rest of the batch, so a write deferred to the batch carrying COMMIT
// can never let the other writes commit without it. count(*) is not a
// constant, so the division is evaluated at run time only.
func guardWrite(sql string) string {
	return "WITH w AS (" + sql + " RETURNING 1) SELECT 1 / count(*) FROM w"
}

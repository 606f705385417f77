package sqlite

import (
	"fmt"
	"strings"
)

// table describes one record table: its key columns come first in cols.
type table struct {
	name string
	nkey int
	cols []string
}

func (t table) list() string { return strings.Join(t.cols, ", ") }

func (t table) keyWhere() string {
	var b strings.Builder
	for i, c := range t.cols[:t.nkey] {
		if i > 0 {
			b.WriteString(" AND ")
		}
		fmt.Fprintf(&b, "%s = ?%d", c, i+1)
	}
	return b.String()
}

func (t table) selectKey() string {
	return "SELECT " + t.list() + " FROM " + t.name + " WHERE " + t.keyWhere()
}

// insert uses ON CONFLICT DO NOTHING: a duplicate primary key or unique
// field makes it affect no row, which Apply reports as ErrConflict.
func (t table) insert() string {
	ph := make([]string, len(t.cols))
	for i := range ph {
		ph[i] = fmt.Sprintf("?%d", i+1)
	}
	return "INSERT INTO " + t.name + " (" + t.list() + ") VALUES (" + strings.Join(ph, ", ") + ") ON CONFLICT DO NOTHING"
}

// replace uses the same numbered parameters as insert, so one argument list
// serves both.
func (t table) replace() string {
	set := make([]string, 0, len(t.cols)-t.nkey)
	for i, c := range t.cols[t.nkey:] {
		set = append(set, fmt.Sprintf("%s = ?%d", c, t.nkey+i+1))
	}
	return "UPDATE " + t.name + " SET " + strings.Join(set, ", ") + " WHERE " + t.keyWhere()
}

func (t table) delete() string { return "DELETE FROM " + t.name + " WHERE " + t.keyWhere() }

var (
	runsT = table{name: "runs", nkey: 1, cols: []string{
		"id", "root_id", "parent_id", "depth", "status",
		"node_execution_cap", "concurrency_cap", "cycle_cap", "retry_cap",
		"deadline_ms", "cancel_requested_ms",
		"auth_target_artifact_id", "auth_daemon_instance_id", "auth_generation", "auth_fencing_token",
		"metadata", "created_ms", "updated_ms", "last_event_seq",
		"attempt_count", "active_count", "tree_attempt_count", "descendant_count", "exhaustion_recorded",
	}}
	linksT = table{name: "run_links", nkey: 1, cols: []string{
		"child_run_id", "root_run_id", "parent_run_id", "parent_node_id", "parent_activation_id",
		"parent_attempt", "target", "depth", "created_ms",
	}}
	activationsT = table{name: "activations", nkey: 3, cols: []string{
		"run_id", "node_id", "activation_id", "generation", "status", "admissible",
		"input", "output", "claims", "effect", "reconciliation", "retry_policy", "predecessors",
		"has_successors", "group_run_id", "group_node_id", "group_activation_id", "group_index",
		"last_attempt", "created_ms", "updated_ms", "attempt_timeout_ms",
		"wait_for", "open_waits", "joins",
	}}
	groupsT = table{name: "fan_out_groups", nkey: 3, cols: []string{
		"run_id", "node_id", "activation_id", "size", "max_concurrency", "promoted", "settled",
		"retiring", "retired_ms", "created_ms", "fail_fast", "fan_in",
	}}
	attemptsT = table{name: "attempts", nkey: 4, cols: []string{
		"run_id", "node_id", "activation_id", "attempt", "identity", "status", "side_effect",
		"intent", "intent_checksum", "receipt", "handoff", "detail",
		"prepared_ms", "admitted_ms", "terminal_ms", "handoff_token",
	}}
	leasesT = table{name: "leases", nkey: 6, cols: []string{
		"run_id", "node_id", "activation_id", "attempt", "resource", "mode", "acquired_ms", "released_ms",
	}}
	schedulesT = table{name: "retry_schedules", nkey: 3, cols: []string{
		"run_id", "node_id", "activation_id", "failed_attempt", "next_attempt", "failure_kind",
		"backoff_ms", "due_ms", "scheduled_ms",
	}}
	eventsT = table{name: "events", nkey: 2, cols: []string{
		"run_id", "seq", "type", "payload", "created_ms",
	}}
)

// stmtID names one cached prepared statement.
type stmtID int

const (
	sRunGet stmtID = iota
	sLinkGet
	sActGet
	sGroupGet
	sAttGet
	sAttByIdentity
	sLeaseGet
	sSchedGet
	sLeasesByResource

	sAdmAll
	sAdmAfterRun
	sAdmAfterKey
	sAdmRun
	sAdmRunAfter

	sActsRun
	sActsRunAfter

	// sAttScan + attRun|attStatus|attAfter: the eight attempt scans.
	sAttScan
	_
	_
	_
	_
	_
	_
	_
	// sAttScanDesc + the same bits: the eight descending attempt scans.
	sAttScanDesc
	_
	_
	_
	_
	_
	_
	_

	sCountAttempts
	sChildren
	sChildrenAfter
	sDue
	sEvents
	sEventsAfter
	sActiveLeases
	sActiveLeasesAfter
	sAllLeases
	sAllLeasesAfter
	// sRuns + runsAfter|runsStatus: the four run scans.
	sRuns
	_
	_
	_

	sRunIns
	sRunRep
	sLinkIns
	sActIns
	sActRep
	sGroupIns
	sGroupRep
	sAttIns
	sAttRep
	sLeaseIns
	sLeaseRep
	sSchedIns
	sSchedRep
	sSchedDel
	sEventIns
	sAttDel
	sLeaseDel
	sEventDel
	sDataVersion

	numStmts
)

// Attempt scan variant bits.
const (
	attRun    = 1
	attStatus = 2
	attAfter  = 4
)

// Run scan variant bits.
const (
	runsAfter  = 1
	runsStatus = 2
)

// stmtSQL holds the text of every statement, indexed by stmtID.
var stmtSQL = buildStmts()

func buildStmts() [numStmts]string {
	var s [numStmts]string
	s[sRunGet] = runsT.selectKey()
	s[sLinkGet] = linksT.selectKey()
	s[sActGet] = activationsT.selectKey()
	s[sGroupGet] = groupsT.selectKey()
	s[sAttGet] = attemptsT.selectKey()
	s[sAttByIdentity] = "SELECT " + attemptsT.list() + " FROM attempts WHERE identity = ?1"
	s[sLeaseGet] = leasesT.selectKey()
	s[sLeasesByResource] = "SELECT " + leasesT.list() + " FROM leases INDEXED BY leases_active_by_resource" +
		" WHERE released_ms = 0 AND run_id = ? AND resource = ?" +
		" ORDER BY node_id, activation_id, attempt, mode"
	s[sSchedGet] = schedulesT.selectKey()

	// Scans use anonymous parameters bound in textual order; LIMIT is last.
	// INDEXED BY makes a scan fail loudly rather than fall back to a full
	// table scan if the index could not serve it.
	adm := "SELECT " + activationsT.list() + " FROM activations INDEXED BY activations_admissible WHERE admissible = 1"
	admOrder := " ORDER BY run_id, node_id, activation_id LIMIT ?"
	s[sAdmAll] = adm + admOrder
	s[sAdmAfterRun] = adm + " AND run_id > ?" + admOrder
	s[sAdmAfterKey] = adm + " AND (run_id, node_id, activation_id) > (?, ?, ?)" + admOrder
	s[sAdmRun] = adm + " AND run_id = ?" + admOrder
	s[sAdmRunAfter] = adm + " AND run_id = ? AND (node_id, activation_id) > (?, ?)" + admOrder

	acts := "SELECT " + activationsT.list() + " FROM activations WHERE run_id = ?"
	actsOrder := " ORDER BY node_id, activation_id LIMIT ?"
	s[sActsRun] = acts + actsOrder
	s[sActsRunAfter] = acts + " AND (node_id, activation_id) > (?, ?)" + actsOrder

	for v := 0; v < 8; v++ {
		var where []string
		index := "attempts_by_prepared"
		switch v & (attRun | attStatus) {
		case attRun:
			index = "attempts_by_run"
		case attStatus:
			index = "attempts_by_status"
		case attRun | attStatus:
			index = "attempts_by_run_status"
		}
		if v&attRun != 0 {
			where = append(where, "run_id = ?")
		}
		if v&attStatus != 0 {
			where = append(where, "status = ?")
		}
		scan := func(cmp, order string) string {
			w := where
			if v&attAfter != 0 {
				w = append(w[:len(w):len(w)], "(prepared_ms, identity) "+cmp+" (?, ?)")
			}
			q := "SELECT " + attemptsT.list() + " FROM attempts INDEXED BY " + index
			if len(w) > 0 {
				q += " WHERE " + strings.Join(w, " AND ")
			}
			return q + " ORDER BY " + order + " LIMIT ?"
		}
		s[sAttScan+stmtID(v)] = scan(">", "prepared_ms, identity")
		s[sAttScanDesc+stmtID(v)] = scan("<", "prepared_ms DESC, identity DESC")
	}

	s[sCountAttempts] = "SELECT count(*) FROM (SELECT 1 FROM attempts WHERE run_id = ? LIMIT ?)"

	child := "SELECT " + linksT.list() + " FROM run_links INDEXED BY run_links_by_root WHERE root_run_id = ?"
	childOrder := " ORDER BY created_ms, child_run_id LIMIT ?"
	s[sChildren] = child + childOrder
	s[sChildrenAfter] = child + " AND (created_ms, child_run_id) > (?, ?)" + childOrder

	s[sDue] = "SELECT " + schedulesT.list() + " FROM retry_schedules INDEXED BY retry_schedules_due" +
		" WHERE run_id = ? AND due_ms <= ? ORDER BY due_ms, node_id, activation_id LIMIT ?"

	events := "SELECT " + eventsT.list() + " FROM events WHERE run_id = ?"
	s[sEvents] = events + " ORDER BY seq LIMIT ?"
	s[sEventsAfter] = events + " AND seq > ? ORDER BY seq LIMIT ?"

	lease := "SELECT " + leasesT.list() + " FROM leases INDEXED BY leases_active WHERE released_ms = 0 AND run_id = ?"
	leaseOrder := " ORDER BY node_id, activation_id, attempt, resource, mode LIMIT ?"
	s[sActiveLeases] = lease + leaseOrder
	s[sActiveLeasesAfter] = lease + " AND (node_id, activation_id, attempt, resource, mode) > (?, ?, ?, ?, ?)" + leaseOrder
	allLeases := "SELECT " + leasesT.list() + " FROM leases WHERE run_id = ?"
	s[sAllLeases] = allLeases + leaseOrder
	s[sAllLeasesAfter] = allLeases + " AND (node_id, activation_id, attempt, resource, mode) > (?, ?, ?, ?, ?)" + leaseOrder

	// Runs scan the primary key in id order (TEXT compares bytewise), or
	// runs_by_status (status, id) with a status filter.
	for v := 0; v < 4; v++ {
		var where []string
		if v&runsAfter != 0 {
			where = append(where, "id > ?")
		}
		if v&runsStatus != 0 {
			where = append(where, "status = ?")
		}
		q := "SELECT " + runsT.list() + " FROM runs"
		if len(where) > 0 {
			q += " WHERE " + strings.Join(where, " AND ")
		}
		s[sRuns+stmtID(v)] = q + " ORDER BY id LIMIT ?"
	}

	s[sRunIns] = runsT.insert()
	s[sRunRep] = runsT.replace()
	s[sLinkIns] = linksT.insert()
	s[sActIns] = activationsT.insert()
	s[sActRep] = activationsT.replace()
	s[sGroupIns] = groupsT.insert()
	s[sGroupRep] = groupsT.replace()
	s[sAttIns] = attemptsT.insert()
	s[sAttRep] = attemptsT.replace()
	s[sLeaseIns] = leasesT.insert()
	s[sLeaseRep] = leasesT.replace()
	s[sSchedIns] = schedulesT.insert()
	s[sSchedRep] = schedulesT.replace()
	s[sSchedDel] = schedulesT.delete()
	s[sEventIns] = eventsT.insert()
	s[sAttDel] = attemptsT.delete()
	s[sLeaseDel] = leasesT.delete()
	s[sEventDel] = eventsT.delete()
	s[sDataVersion] = "PRAGMA data_version"
	return s
}

package postgres

import "strings"

// queries holds every statement the adapter sends, built once per Backend
// with the quoted schema name. Each scan has one fixed string per shape
// (start / resume, filtered / not) whose WHERE and ORDER BY match one index
// column for column, so the planner can walk the index and stop at LIMIT.
type queries struct {
	// Load, array form: one statement reads a whole key set.
	loadRuns, loadLinks, loadActivations, loadGroups, loadAttempts string
	loadIdentities, loadLeases, loadSchedules, loadResources       string
	// Load, key form: one statement reads one key (see smallKeySet).
	loadRun, loadLink, loadActivation, loadGroup, loadAttempt string
	loadIdentity, loadLease, loadSchedule, loadResource       string

	// AdmissibleActivations: global/run × start/after/afterRun.
	admissibleStart, admissibleAfter, admissibleAfterRun          string
	admissibleRunStart, admissibleRunAfter, admissibleRunAfterRun string

	activationsStart, activationsAfter string

	// Attempts: [run][status][after][descending].
	attempts [2][2][2][2]string

	countAttempts string

	childRunsStart, childRunsAfter string

	dueSchedules string
	events       string

	activeLeasesStart, activeLeasesAfter string // unreleased only
	allLeasesStart, allLeasesAfter       string

	runsScan, runsScanStatus string

	// Writes per table, and per slice of backend.Changes.
	runs, links, activations, groups, attemptsW, leases, schedules, eventsW writeSQL
	kinds                                                                   kinds
	// swapAttempts is SwapAttempts's statement (swaps.go).
	swapAttempts string

	// Claimer, outside any transaction (claims.go).
	claim, release, purgeClaims string
}

func buildQueries(quotedSchema string, manyRowsFrom int) *queries {
	qual := func(t string) string { return quotedSchema + "." + t }
	q := &queries{}
	q.claim, q.release, q.purgeClaims = claimQueries(quotedSchema)

	sel := func(t table) string { return "SELECT " + t.selectList("") + " FROM " + qual(t.name) }
	selJoin := func(t table, unnest, on string) string {
		return "SELECT " + t.selectList("x") + " FROM " + unnest + " JOIN " + qual(t.name) + " x ON " + on
	}

	q.loadRuns = sel(tRuns) + " WHERE id = ANY($1::text[])"
	q.loadLinks = sel(tLinks) + " WHERE child_run_id = ANY($1::text[])"
	actKeys := "unnest($1::text[], $2::text[], $3::text[]) AS k(r, n, a)"
	actOn := "x.run_id = k.r AND x.node_id = k.n AND x.activation_id = k.a"
	q.loadActivations = selJoin(tActivations, actKeys, actOn)
	q.loadGroups = selJoin(tGroups, actKeys, actOn)
	q.loadSchedules = selJoin(tSchedules, actKeys, actOn)
	q.loadAttempts = selJoin(tAttempts,
		"unnest($1::text[], $2::text[], $3::text[], $4::bigint[]) AS k(r, n, a, t)",
		actOn+" AND x.attempt = k.t")
	q.loadIdentities = sel(tAttempts) + " WHERE identity = ANY($1::text[])"
	q.loadLeases = selJoin(tLeases,
		"unnest($1::text[], $2::text[], $3::text[], $4::bigint[], $5::text[], $6::text[]) AS k(r, n, a, t, s, m)",
		actOn+" AND x.attempt = k.t AND x.resource = k.s AND x.mode = k.m")
	q.loadResources = selJoin(tLeases,
		"unnest($1::text[], $2::text[]) AS k(r, s)",
		"x.run_id = k.r AND x.resource = k.s AND x.released_ms = 0") +
		" ORDER BY x.run_id, x.resource, x.node_id, x.activation_id, x.attempt, x.mode"

	actKey := " WHERE run_id = $1 AND node_id = $2 AND activation_id = $3"
	q.loadRun = sel(tRuns) + " WHERE id = $1"
	q.loadLink = sel(tLinks) + " WHERE child_run_id = $1"
	q.loadActivation = sel(tActivations) + actKey
	q.loadGroup = sel(tGroups) + actKey
	q.loadSchedule = sel(tSchedules) + actKey
	q.loadAttempt = sel(tAttempts) + actKey + " AND attempt = $4"
	q.loadIdentity = sel(tAttempts) + " WHERE identity = $1"
	q.loadLease = sel(tLeases) + actKey + " AND attempt = $4 AND resource = $5 AND mode = $6"
	q.loadResource = sel(tLeases) + " WHERE run_id = $1 AND resource = $2 AND released_ms = 0" +
		" ORDER BY run_id, resource, node_id, activation_id, attempt, mode"

	// Admissible discovery walks the partial index activations_admissible.
	adm := sel(tActivations) + " WHERE admissible"
	actOrder := " ORDER BY run_id, node_id, activation_id"
	q.admissibleStart = adm + actOrder + " LIMIT $1"
	q.admissibleAfter = adm + " AND (run_id, node_id, activation_id) > ($1, $2, $3)" + actOrder + " LIMIT $4"
	q.admissibleAfterRun = adm + " AND run_id > $1" + actOrder + " LIMIT $2"
	q.admissibleRunStart = adm + " AND run_id = $1" + actOrder + " LIMIT $2"
	q.admissibleRunAfter = adm + " AND run_id = $1 AND (run_id, node_id, activation_id) > ($2, $3, $4)" + actOrder + " LIMIT $5"
	q.admissibleRunAfterRun = adm + " AND run_id = $1 AND run_id > $2" + actOrder + " LIMIT $3"

	acts := sel(tActivations) + " WHERE run_id = $1"
	q.activationsStart = acts + actOrder + " LIMIT $2"
	q.activationsAfter = acts + " AND (node_id, activation_id) > ($2, $3)" + actOrder + " LIMIT $4"

	// Attempts: a status-filtered shape walks its status's group in
	// attempts_group_order or attempts_run_group_order; an unfiltered one
	// merges the same index's walks of every group (attemptScan), each
	// branch stopping at LIMIT,
	// so that it reads about one page and one index descent per branch and
	// no index orders attempts by time alone. A descending scan walks the
	// same index backwards.
	for run := 0; run < 2; run++ {
		for status := 0; status < 2; status++ {
			for after := 0; after < 2; after++ {
				for desc := 0; desc < 2; desc++ {
					q.attempts[run][status][after][desc] = attemptScan(sel(tAttempts), run == 1, status == 1, after == 1, desc == 1)
				}
			}
		}
	}

	q.countAttempts = "SELECT count(*) FROM (SELECT 1 FROM " + qual(tAttempts.name) + " WHERE run_id = $1 LIMIT $2) s"

	links := sel(tLinks) + " WHERE root_run_id = $1"
	linkOrder := " ORDER BY root_run_id, created_ms, child_run_id"
	q.childRunsStart = links + linkOrder + " LIMIT $2"
	q.childRunsAfter = links + " AND (created_ms, child_run_id) > ($2, $3)" + linkOrder + " LIMIT $4"

	q.dueSchedules = sel(tSchedules) + " WHERE run_id = $1 AND due_ms <= $2 ORDER BY run_id, due_ms, node_id, activation_id LIMIT $3"

	q.events = sel(tEvents) + " WHERE run_id = $1 AND seq > $2 ORDER BY run_id, seq LIMIT $3"

	leases := sel(tLeases) + " WHERE released_ms = 0 AND run_id = $1"
	leaseOrder := " ORDER BY run_id, node_id, activation_id, attempt, resource, mode"
	q.activeLeasesStart = leases + leaseOrder + " LIMIT $2"
	q.activeLeasesAfter = leases + " AND (run_id, node_id, activation_id, attempt, resource, mode) > ($2, $3, $4, $5, $6, $7)" +
		leaseOrder + " LIMIT $8"
	allLeases := sel(tLeases) + " WHERE run_id = $1"
	q.allLeasesStart = allLeases + leaseOrder + " LIMIT $2"
	q.allLeasesAfter = allLeases + " AND (run_id, node_id, activation_id, attempt, resource, mode) > ($2, $3, $4, $5, $6, $7)" +
		leaseOrder + " LIMIT $8"

	// Runs walk the primary key in id order, or runs_by_status (status,
	// id) with a status filter.
	q.runsScan = sel(tRuns) + " WHERE id > $1 ORDER BY id LIMIT $2"
	q.runsScanStatus = sel(tRuns) + " WHERE id > $1 AND status = $2 ORDER BY id LIMIT $3"

	q.runs = buildWriteSQL(qual, tRuns)
	q.links = buildWriteSQL(qual, tLinks)
	q.activations = buildWriteSQL(qual, tActivations)
	q.groups = buildWriteSQL(qual, tGroups)
	q.attemptsW = buildWriteSQL(qual, tAttempts)
	q.leases = buildWriteSQL(qual, tLeases)
	q.schedules = buildWriteSQL(qual, tSchedules)
	q.eventsW = buildWriteSQL(qual, tEvents)
	q.kinds = buildKinds(q, manyRowsFrom)
	q.swapAttempts = buildSwapSQL(qual, tAttempts)
	return q
}

func itoa(n int) string {
	if n < 10 {
		return string(rune('0' + n))
	}
	return itoa(n/10) + string(rune('0'+n%10))
}

// attemptStatuses is every status the workflow stores an attempt with, in
// bytewise order.
var attemptStatuses = []string{
	"abandoned", "admitted", "cancelled", "cancelling", "failed", "paused",
	"prepared", "repair_required", "running", "sibling_cancelling", "succeeded",
}

// statusGroup is the status_group the server stores for an attempt in
// status st (see heapOnlyReceiptsMigration): st itself, except that an
// admitted attempt is grouped with the prepared ones.
func statusGroup(st string) string {
	if st == "admitted" {
		return "prepared"
	}
	return st
}

// attemptGroups is the status_group of every status in attemptStatuses,
// each once, in bytewise order: an unfiltered attempt scan walks each
// one's stretch of its status index in (prepared_ms, identity) order.
var attemptGroups = func() []string {
	var out []string
	for _, st := range attemptStatuses {
		if g := statusGroup(st); g == st {
			out = append(out, g)
		}
	}
	return out
}()

// attemptScan builds one shape of the attempt scan from sel (the SELECT of
// every column from attempts); parameters: [run_id], [status_group,
// status], [after prepared_ms, identity], limit.
//
// With a status it walks the status's group in order (status_group,
// prepared_ms, identity) and keeps the attempts in that status.
//
// Without one it is a merge of one branch per known group (an index walk
// in order that stops at LIMIT) and one per gap between them (any other
// status the backend contract lets a caller store: the index range of the
// gap, sorted, also limited), so it returns exactly the attempts the scan
// matches, reading about one page plus one index descent per branch; a
// gap holds no attempt the workflow wrote.
func attemptScan(sel string, run, status, after, desc bool) string {
	n := 0
	next := func() string { n++; return "$" + itoa(n) }
	dir, cmp := "", ">"
	if desc {
		dir, cmp = " DESC", "<"
	}
	var runP, groupP, statusP, afterA, afterB string
	if run {
		runP = next()
	}
	if status {
		groupP, statusP = next(), next()
	}
	if after {
		afterA, afterB = next(), next()
	}
	limit := next()
	branch := func(groupCond string, inOrder bool) string {
		var conds []string
		order := " ORDER BY "
		if run {
			conds = append(conds, "run_id = "+runP)
			order += "run_id" + dir + ", "
		}
		conds = append(conds, groupCond)
		if inOrder {
			order += "status_group" + dir + ", "
		}
		if after {
			conds = append(conds, "(prepared_ms, identity) "+cmp+" ("+afterA+", "+afterB+")")
		}
		order += "prepared_ms" + dir + ", identity" + dir
		return sel + " WHERE " + strings.Join(conds, " AND ") + order + " LIMIT " + limit
	}
	if status {
		return branch("status_group = "+groupP+" AND status = "+statusP, true)
	}
	lit := func(st string) string { return "'" + st + "'" }
	var branches []string
	for i, g := range attemptGroups {
		gap := "status_group < " + lit(g)
		if i > 0 {
			gap = "status_group > " + lit(attemptGroups[i-1]) + " AND " + gap
		}
		branches = append(branches, "("+branch(gap, false)+")", "("+branch("status_group = "+lit(g), true)+")")
	}
	branches = append(branches, "("+branch("status_group > "+lit(attemptGroups[len(attemptGroups)-1]), false)+")")
	return "SELECT * FROM (" + strings.Join(branches, " UNION ALL ") + ") s ORDER BY prepared_ms" + dir +
		", identity" + dir + " LIMIT " + limit
}

package postgres

import (
	"github.com/wfstore/wfstore/backend"
)

// Test-only access to internals.

// WithoutAdvisoryLock makes migrations rely on the version row's
// compare-and-set alone.
var WithoutAdvisoryLock = withoutAdvisoryLock

// WithManyRowsFrom sets the shortest slice Apply writes with one many-row
// statement.
var WithManyRowsFrom = withManyRowsFrom

// SmallSlice is the longest slice Apply writes one statement per record by
// default.
const SmallSlice = smallSlice

// SetAfterRoundTrip installs the round-trip hook (call before using b).
func (b *Backend) SetAfterRoundTrip(h func(pid uint32, n int)) { b.hooks.afterRoundTrip = h }

// SetListening installs the hook called with the server pid of each
// connection a work listener has run LISTEN on (call before using b).
func (b *Backend) SetListening(h func(pid uint32)) { b.hooks.listening = h }

// SetHeard installs the hook called with the payload of each notification
// a work listener receives (call before using b).
func (b *Backend) SetHeard(h func(payload string)) { b.hooks.heard = h }

// WorkChannel returns the LISTEN/NOTIFY channel of the store in schema.
var WorkChannel = workChannel

// Stats is a snapshot of the re-run counters.
type Stats struct {
	Updates, Runs, Serialization, Deadlock, ConnLost, Exhausted, MaxRuns int64
	// RoundTrips counts every transaction round trip: reads, commits and
	// rollbacks (not pgx's one-off statement preparation).
	RoundTrips int64
	// Turns counts runs that took the turn, TurnTimeouts re-runs after its
	// request waited too long, GateTimeouts re-runs past the gate after
	// waiting there too long.
	Turns, TurnTimeouts, GateTimeouts int64
}

// StatsForTest returns b's counters.
func (b *Backend) StatsForTest() Stats {
	return Stats{
		Updates:       b.stats.updates.Load(),
		Runs:          b.stats.runs.Load(),
		Serialization: b.stats.serialization.Load(),
		Deadlock:      b.stats.deadlock.Load(),
		ConnLost:      b.stats.connLost.Load(),
		Exhausted:     b.stats.exhausted.Load(),
		MaxRuns:       b.stats.maxRuns.Load(),
		RoundTrips:    b.stats.roundTrips.Load(),
		Turns:         b.stats.turns.Load(),
		TurnTimeouts:  b.stats.turnTimeouts.Load(),
		GateTimeouts:  b.stats.gateTimeouts.Load(),
	}
}

// RoundTrips returns how many round trips the transaction has made.
func RoundTrips(tx backend.ReadTx) int { return tx.(*txn).rts }

// AdmissibleSQL returns the statement and arguments AdmissibleActivations
// sends.
func (b *Backend) AdmissibleSQL(q backend.AdmissibleQuery) (string, []any) {
	return b.q.admissibleQuery(q)
}

// Statement is one statement Apply queues.
type Statement struct {
	SQL  string
	Args []any
}

// ChangesSQL returns the write statements Apply queues for c, in order
// (not the plan_cache_mode switches around many-row ones).
func (b *Backend) ChangesSQL(c backend.Changes) []Statement {
	var out []Statement
	for _, w := range b.q.kinds.queueChanges(nil, &c, nil) {
		if !w.setting {
			out = append(out, Statement{w.sql, w.args})
		}
	}
	return out
}

// ChangesSQLAfter returns the statements Apply queues for c in a
// transaction whose earlier Applies were those of earlier.
func (b *Backend) ChangesSQLAfter(earlier []backend.Changes, c backend.Changes) []Statement {
	known := identities{}
	for i := range earlier {
		b.q.kinds.queueChanges(nil, &earlier[i], known)
	}
	var out []Statement
	for _, w := range b.q.kinds.queueChanges(nil, &c, known) {
		if !w.setting {
			out = append(out, Statement{w.sql, w.args})
		}
	}
	return out
}

// AttemptsSQL returns the statement and arguments Attempts sends.
func (b *Backend) AttemptsSQL(q backend.AttemptQuery) (string, []any) { return b.q.attemptQuery(q) }

// DueSchedulesSQL returns the statement and arguments DueSchedules sends.
func (b *Backend) DueSchedulesSQL(q backend.ScheduleQuery) (string, []any) {
	return b.q.dueSchedules, []any{q.RunID, q.DueBy, int64(q.Limit)}
}

// NamedSQL returns other statements by name, for EXPLAIN tests.
func (b *Backend) NamedSQL() map[string]string {
	q := b.q
	return map[string]string{
		"activeLeasesStart": q.activeLeasesStart,
		"childRunsStart":    q.childRunsStart,
		"events":            q.events,
		"countAttempts":     q.countAttempts,
		"loadResources":     q.loadResources,
		"loadActivations":   q.loadActivations,
		"loadRun":           q.loadRun,
		"loadLink":          q.loadLink,
		"loadActivation":    q.loadActivation,
		"loadGroup":         q.loadGroup,
		"loadSchedule":      q.loadSchedule,
		"loadAttempt":       q.loadAttempt,
		"loadIdentity":      q.loadIdentity,
		"loadLease":         q.loadLease,
		"loadResource":      q.loadResource,
		"expectRun":         q.runs.expect,
		"expectActivation":  q.activations.expect,
		"expectAttempt":     q.attemptsW.expect,
		"runsScanStatus":    q.runsScanStatus,
	}
}

// Settings returns the statement sent after BEGIN in every transaction.
func (b *Backend) Settings() string { return b.settings }

// TableColumns lists, per table, the columns the adapter reads and writes
// as "name type", in its order.
func TableColumns() map[string][]string {
	out := map[string][]string{}
	for _, t := range []table{tRuns, tLinks, tActivations, tGroups, tAttempts, tLeases, tSchedules, tEvents} {
		for i, c := range t.cols {
			out[t.name] = append(out[t.name], c+" "+t.types[i])
		}
	}
	return out
}

// SchemaColumns lists, per table, every column of the current schema as
// "name type", in catalog order: TableColumns and, after them, the columns
// the server generates (attempts.status_group), which the adapter never
// writes.
func SchemaColumns() map[string][]string {
	out := TableColumns()
	out[tAttempts.name] = append(out[tAttempts.name], "status_group text")
	return out
}

// StatusGroup is the status_group the server stores for an attempt in
// status st.
func StatusGroup(st string) string { return statusGroup(st) }

// Tables lists the tables of the current schema version.
var Tables = ourTables

// MigrationRaces returns how many migrations lost a race and looked again.
func MigrationRaces() int64 { return migrationRaces.Load() }

// AttemptStatuses is the statuses an unfiltered attempt scan walks in order.
var AttemptStatuses = attemptStatuses

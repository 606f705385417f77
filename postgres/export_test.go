package postgres

import (
	"github.com/wfstore/wfstore/backend"
)

// Test-only access to internals.

// WithoutAdvisoryLock makes migrations rely on the version row's
// compare-and-set alone.
var WithoutAdvisoryLock = withoutAdvisoryLock

// SetAfterRoundTrip installs the round-trip hook (call before using b).
func (b *Backend) SetAfterRoundTrip(h func(pid uint32, n int)) { b.hooks.afterRoundTrip = h }

// Stats is a snapshot of the re-run counters.
type Stats struct {
	Updates, Runs, Serialization, Deadlock, ConnLost, Exhausted, MaxRuns int64
	// RoundTrips counts every transaction round trip: reads, commits and
	// rollbacks (not pgx's one-off statement preparation).
	RoundTrips int64
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
	}
}

// RoundTrips returns how many round trips the transaction has made.
func RoundTrips(tx backend.ReadTx) int { return tx.(*txn).rts }

// PendingSQL returns the statement and arguments PendingActivations sends.
func (b *Backend) PendingSQL(q backend.PendingQuery) (string, []any) { return b.q.pendingQuery(q) }

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
	}
}

// Settings returns the statement sent after BEGIN in every transaction.
func (b *Backend) Settings() string { return b.settings }

// Tables lists the tables of the current schema version.
var Tables = ourTables

// MigrationRaces returns how many migrations lost a race and looked again.
func MigrationRaces() int64 { return migrationRaces.Load() }

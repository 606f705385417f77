package sqlite

import (
	"errors"
	"math/rand/v2"
	"strings"
	"sync/atomic"
	"time"

	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"
)

// sqliteCode returns the primary result code of a driver error, or 0.
func sqliteCode(err error) int {
	var se *sqlite.Error
	if errors.As(err, &se) {
		return se.Code() & 0xff
	}
	return 0
}

// isBusy reports whether err is SQLITE_BUSY or SQLITE_LOCKED (any extended
// code): another connection holds a lock we need.
func isBusy(err error) bool {
	c := sqliteCode(err)
	return c == sqlite3.SQLITE_BUSY || c == sqlite3.SQLITE_LOCKED
}

// isConstraint reports a constraint violation, which rolls back only the
// statement, never the transaction.
func isConstraint(err error) bool { return sqliteCode(err) == sqlite3.SQLITE_CONSTRAINT }

// isNoTransaction reports the error of a COMMIT or ROLLBACK issued when
// SQLite already ended the transaction itself.
func isNoTransaction(err error) bool {
	return err != nil && strings.Contains(err.Error(), "no transaction is active")
}

const (
	writerBusyTimeoutMS = 5    // SQLite's own wait on the writer before we back off
	readerBusyTimeoutMS = 1000 // readers in WAL wait only for rare recovery
	minBackoff          = time.Millisecond
	maxBackoff          = 32 * time.Millisecond
)

// backoff returns the jittered sleep before retry n (0-based): uniform in
// [d/2, d] with d = 1 ms << n, capped at 32 ms.
func backoff(n int) time.Duration {
	d := maxBackoff
	if n < 6 {
		d = minBackoff << n
	}
	return d/2 + rand.N(d/2+1)
}

// Stats are counters since Open, for reports and benchmarks.
type Stats struct {
	// Commits counts committed Updates.
	Commits int64
	// BusyRetries counts attempts that found the write lock held by another
	// connection (BEGIN IMMEDIATE or COMMIT returning SQLITE_BUSY/LOCKED).
	BusyRetries int64
	// Reruns counts times fn was run again after a transient conflict.
	Reruns int64
	// BusyFailures counts Updates that gave up waiting (ErrBusy).
	BusyFailures int64
	// MaxLockWait is the longest time one Update waited for the database
	// write lock (from the first BEGIN IMMEDIATE to the successful one).
	MaxLockWait time.Duration
	// MaxQueueWait is the longest time one Update waited for this Backend's
	// in-process writer (without group commit).
	MaxQueueWait time.Duration
	// SharedCommits counts commits of a group of Updates run together
	// (on by default; WithoutGroupCommit); SharedUpdates counts the Updates run in them,
	// those whose fn failed and was rolled back alone included.
	SharedCommits, SharedUpdates int64
}

type stats struct {
	commits, busyRetries, reruns, busyFailures atomic.Int64
	sharedCommits, sharedUpdates               atomic.Int64
	maxLockWait, maxQueueWait                  atomic.Int64
}

func storeMax(a *atomic.Int64, v int64) {
	for {
		old := a.Load()
		if v <= old || a.CompareAndSwap(old, v) {
			return
		}
	}
}

func (s *stats) snapshot() Stats {
	return Stats{
		Commits:      s.commits.Load(),
		BusyRetries:  s.busyRetries.Load(),
		Reruns:       s.reruns.Load(),
		BusyFailures: s.busyFailures.Load(),
		MaxLockWait:  time.Duration(s.maxLockWait.Load()),
		MaxQueueWait: time.Duration(s.maxQueueWait.Load()),

		SharedCommits: s.sharedCommits.Load(),
		SharedUpdates: s.sharedUpdates.Load(),
	}
}

package sqlite

import (
	"runtime"
	"time"
)

// Option configures Open, OpenDB and Migrate.
type Option func(*config)

type config struct {
	relaxed     bool
	busyTimeout time.Duration
	readers     int
	groupCommit bool
}

func defaultConfig() config {
	return config{readers: max(4, runtime.GOMAXPROCS(0)), groupCommit: true}
}

// synchronous returns the synchronous setting of the configured durability.
func (c *config) synchronous() string {
	if c.relaxed {
		return "NORMAL"
	}
	return "FULL"
}

// durability names the configured durability for Info.
func (c *config) durability() string {
	if c.relaxed {
		return "relaxed"
	}
	return "durable"
}

// WithRelaxedDurability commits with synchronous=NORMAL instead of the
// default FULL: safe against a crash of the process, NOT against an
// operating-system crash or power loss (the last commits before it may be
// lost; the file stays consistent). For tests and benchmarks only; the
// semantics are otherwise identical.
func WithRelaxedDurability() Option {
	return func(c *config) { c.relaxed = true }
}

// WithBusyTimeout bounds how long one Update keeps retrying a transient lock
// conflict (the write lock held by another connection: another Backend or
// process), on top of its ctx. When it passes, Update fails with an error
// wrapping backend.ErrBusy. Zero (the default) or less means: retry as long
// as ctx allows.
func WithBusyTimeout(d time.Duration) Option {
	return func(c *config) { c.busyTimeout = max(d, 0) }
}

// WithMaxReaders sets the size of the reader connection pool Open creates
// (default max(4, GOMAXPROCS)). OpenDB ignores it: the caller's pool is used
// as given.
func WithMaxReaders(n int) Option {
	return func(c *config) {
		if n > 0 {
			c.readers = n
		}
	}
}

// WithoutGroupCommit turns group commit off: every Update runs and commits
// alone. Group commit is on by default: concurrent Updates of one Backend
// that queue for the writer share one transaction and one commit (group.go;
// at most 64 fns, merged from what is queued when the writer becomes free,
// never by waiting for more). Each fn's writes still commit or roll back as
// a unit, a failing fn's writes never commit, and Update returns nil only
// once the commit holding fn's writes is durable. An Update that finds no
// queue and a free writer runs at once, so one caller at a time pays
// nothing for it (measured: no difference on one dispatcher).
func WithoutGroupCommit() Option { return func(c *config) { c.groupCommit = false } }

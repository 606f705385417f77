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
	return config{readers: max(4, runtime.GOMAXPROCS(0))}
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

// WithGroupCommit lets concurrent Updates of this Backend share one
// physical commit (group.go): an Update that finds the writer busy queues,
// and the next writer runs what is queued (at most 64 fns) in one
// transaction, each fn inside a SAVEPOINT of its own. A fn that fails is
// rolled back alone (ROLLBACK TO) and the others commit together; Update
// returns nil only once the commit holding fn's writes is durable.
func WithGroupCommit() Option {
	return func(c *config) { c.groupCommit = true }
}

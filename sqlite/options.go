package sqlite

import (
	"runtime"
	"time"
)

// Durability selects SQLite's synchronous setting. The file is always in
// WAL mode.
type Durability int

const (
	// Durable is the default: synchronous=FULL, every commit is synced and
	// survives power loss.
	Durable Durability = iota
	// Relaxed is synchronous=NORMAL: safe against process crash, not power
	// loss (the latest commits may be lost if the machine goes down). For
	// tests and benchmarks.
	Relaxed
)

// String returns "durable" or "relaxed".
func (d Durability) String() string {
	switch d {
	case Durable:
		return "durable"
	case Relaxed:
		return "relaxed"
	}
	return "durability(?)"
}

func (d Durability) synchronous() string {
	if d == Relaxed {
		return "NORMAL"
	}
	return "FULL"
}

// Option configures Open and OpenDB.
type Option func(*config)

type config struct {
	durability Durability
	busyLimit  time.Duration
	readers    int
}

func defaultConfig() config {
	return config{durability: Durable, readers: max(4, runtime.GOMAXPROCS(0))}
}

// WithDurability selects Durable (the default) or Relaxed.
func WithDurability(d Durability) Option {
	return func(c *config) { c.durability = d }
}

// WithBusyLimit bounds how long one Update waits in total for the write lock
// held by another connection (another Backend or process), on top of its
// ctx. When the limit passes, Update fails with an error wrapping
// backend.ErrBusy. Zero (the default) means: wait as long as ctx allows.
func WithBusyLimit(d time.Duration) Option {
	return func(c *config) {
		if d > 0 {
			c.busyLimit = d
		} else {
			c.busyLimit = 0
		}
	}
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

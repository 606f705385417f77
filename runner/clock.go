package runner

import "time"

// Clock is the runner's source of time. Every time the runner passes to
// the Store and every wait it makes goes through its Clock, so a test can
// drive a runner with a fake clock and never sleep.
type Clock interface {
	// Now returns the current time.
	Now() time.Time
	// NewTimer returns a Timer that fires once, d after now.
	NewTimer(d time.Duration) Timer
}

// Timer is a one-shot timer made by a Clock.
type Timer interface {
	// C delivers the firing time once.
	C() <-chan time.Time
	// Stop prevents the timer from firing; it reports whether it did.
	Stop() bool
}

// SystemClock returns the Clock of the time package.
func SystemClock() Clock { return systemClock{} }

type systemClock struct{}

func (systemClock) Now() time.Time { return time.Now() }

func (systemClock) NewTimer(d time.Duration) Timer { return sysTimer{time.NewTimer(d)} }

type sysTimer struct{ t *time.Timer }

func (t sysTimer) C() <-chan time.Time { return t.t.C }
func (t sysTimer) Stop() bool          { return t.t.Stop() }

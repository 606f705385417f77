package runner

import (
	"sync"
	"testing"
	"time"
)

// fakeClock is a Clock that moves only when the test advances it. Every
// timer it makes is reported on created, so a test knows when the runner
// waits and for how long.
type fakeClock struct {
	mu      sync.Mutex
	now     time.Time
	timers  []*fakeTimer
	created chan *fakeTimer
}

func newFakeClock() *fakeClock {
	return &fakeClock{now: time.UnixMilli(1_700_000_000_000).UTC(), created: make(chan *fakeTimer, 1024)}
}

type fakeTimer struct {
	c    *fakeClock
	d    time.Duration
	at   time.Time
	ch   chan time.Time
	done bool
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) NewTimer(d time.Duration) Timer {
	c.mu.Lock()
	t := &fakeTimer{c: c, d: d, at: c.now.Add(d), ch: make(chan time.Time, 1)}
	if d <= 0 {
		t.done = true
		t.ch <- c.now
	} else {
		c.timers = append(c.timers, t)
	}
	c.mu.Unlock()
	c.created <- t
	return t
}

func (t *fakeTimer) C() <-chan time.Time { return t.ch }

func (t *fakeTimer) Stop() bool {
	t.c.mu.Lock()
	defer t.c.mu.Unlock()
	was := !t.done
	t.done = true
	return was
}

// Advance moves the clock forward by d and fires every timer due by then.
func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
	keep := c.timers[:0]
	for _, t := range c.timers {
		switch {
		case t.done:
		case !t.at.After(c.now):
			t.done = true
			t.ch <- c.now
		default:
			keep = append(keep, t)
		}
	}
	c.timers = keep
}

// nextTimer waits (in real time, bounded) for the next timer the runner
// makes.
func (c *fakeClock) nextTimer(t *testing.T) *fakeTimer {
	t.Helper()
	select {
	case tm := <-c.created:
		return tm
	case <-time.After(10 * time.Second):
		t.Fatal("the runner made no timer within 10s")
		return nil
	}
}

// fire advances the clock to tm's deadline.
func (c *fakeClock) fire(tm *fakeTimer) {
	c.mu.Lock()
	d := tm.at.Sub(c.now)
	c.mu.Unlock()
	c.Advance(max(d, 0))
}

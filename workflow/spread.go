package workflow

import (
	"math/rand/v2"
	"sync/atomic"
)

// spreadRuns bounds how many free runs a Store's next pass over all runs
// passes over first after the Store lost a run for the first time (see
// lostRuns): 1 to spreadRuns-1.
const spreadRuns = 4

// maxSpreadRuns bounds, after later losses, how many free runs the next
// pass passes over: 1 to maxSpreadRuns-1. Passing over a run costs one
// index row (the pass reads one row of each run it passes over, beyond its
// own rows), and a pass that meets fewer free runs counts on around them.
const maxSpreadRuns = 64

// spreader is how far a Store's next pass over all runs moves along the
// pending index, past free runs, before it takes work (see lostRuns).
//
// Stores whose passes all read the index in the same order meet at the
// front of the backlog: each pass resumes where the previous one stopped,
// which is where every other Store's work has left the index too. A Store
// that lost a run draws a number of free runs to pass over: at least one,
// as the Store that won the run goes on to the next, and at most
// spreadRuns-1 after its first loss, then maxSpreadRuns-1. Stores that
// keep meeting so land at random places in the backlog, and each then
// drains the runs in front of it until it reaches runs another Store is
// draining.
type spreader struct {
	next   atomic.Int32 // runs the next pass passes over first
	window atomic.Int32 // the window the next draw is made from
}

// lost draws the runs the next pass passes over, from a window that widens
// from spreadRuns to maxSpreadRuns after the first draw.
func (p *spreader) lost() {
	w := p.window.Load()
	switch {
	case w < spreadRuns:
		w = spreadRuns
	case w < maxSpreadRuns:
		w = maxSpreadRuns
	}
	p.window.Store(w)
	p.next.Store(int32(1 + rand.IntN(int(w)-1)))
}

// take returns the runs this pass passes over, and clears them.
func (p *spreader) take() int { return int(p.next.Swap(0)) }

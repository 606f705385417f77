package main

import (
	"fmt"
	"io"
	"os"
	"sync"
	"time"

	"golang.org/x/term"
)

// The long commands (export, import, prune, verify, backup, conform) show
// what they are doing on standard error while it is a terminal: one line,
// redrawn in place, naming the step, a count where the command has one,
// and the time spent, cleared before the results print. Off a terminal
// (a file, a pipe, a CI log) they print nothing but their results.

// terminalWriter is a writer that says whether it is a terminal; tests
// pass one to decide for the command.
type terminalWriter interface {
	io.Writer
	IsTerminal() bool
}

// isTerminal reports whether w is a terminal: a terminalWriter's answer,
// else whether w is an *os.File open on a terminal.
func isTerminal(w io.Writer) bool {
	switch t := w.(type) {
	case terminalWriter:
		return t.IsTerminal()
	case *os.File:
		return term.IsTerminal(int(t.Fd()))
	}
	return false
}

// progressTick is how often the line is redrawn while nothing is counted
// (the time spent moves on).
const progressTick = 250 * time.Millisecond

// progress is the progress line of one command. Every method is safe on a
// progress that is off (not a terminal), and does nothing there.
type progress struct {
	w  io.Writer
	on bool

	mu      sync.Mutex
	prefix  string
	step    string
	unit    string
	n       int64
	started time.Time
	drawn   time.Time
	shown   bool
	stop    chan struct{}
	stopped chan struct{}
}

// newProgress starts the progress line of command cmd on stderr, shown
// only when stderr is a terminal. finish must be called before the
// command prints its results to stderr.
func newProgress(stderr io.Writer, cmd string) *progress {
	p := &progress{w: stderr, on: isTerminal(stderr), prefix: "wfstore " + cmd + ": ", started: time.Now()}
	if !p.on {
		return p
	}
	stop, stopped := make(chan struct{}), make(chan struct{})
	p.stop, p.stopped = stop, stopped
	go func() {
		// The channels are the goroutine's own: finish clears p.stop.
		defer close(stopped)
		t := time.NewTicker(progressTick)
		defer t.Stop()
		for {
			select {
			case <-stop:
				return
			case <-t.C:
				p.mu.Lock()
				if p.step != "" {
					p.draw()
				}
				p.mu.Unlock()
			}
		}
	}()
	return p
}

// begin starts a step: "reading the stream", "writing". unit, when not
// empty, names what add counts ("records").
func (p *progress) begin(step, unit string) {
	if !p.on {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.step, p.unit, p.n, p.started = step, unit, 0, time.Now()
	p.draw()
}

// add counts n more of the step's unit; the line is redrawn at most every
// progressTick.
func (p *progress) add(n int64) {
	if !p.on {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.n += n
	if time.Since(p.drawn) >= progressTick {
		p.draw()
	}
}

// draw writes the line over the previous one. p.mu is held.
func (p *progress) draw() {
	line := p.prefix + p.step
	if p.unit != "" {
		line += fmt.Sprintf(": %d %s", p.n, p.unit)
	}
	line += fmt.Sprintf(" (%s)", time.Since(p.started).Truncate(time.Second))
	fmt.Fprint(p.w, "\r\x1b[K"+line)
	p.drawn, p.shown = time.Now(), true
}

// finish stops the line and clears it. It may be called more than once.
func (p *progress) finish() {
	if !p.on {
		return
	}
	p.mu.Lock()
	stop := p.stop
	p.stop = nil
	p.mu.Unlock()
	if stop == nil {
		return
	}
	close(stop)
	<-p.stopped
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.shown {
		fmt.Fprint(p.w, "\r\x1b[K")
		p.shown = false
	}
}

// progressReader counts what is read through it on a progress line.
type progressReader struct {
	r io.Reader
	p *progress
}

func (r progressReader) Read(b []byte) (int, error) {
	n, err := r.r.Read(b)
	r.p.add(int64(n))
	return n, err
}

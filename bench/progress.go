package bench

import (
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/term"
)

// progress reports one backend's phases on w (stderr). On a terminal it
// draws one status line, redrawn in place at most five times a second: the
// phase, a bar, the count and an estimate of the time left. Anywhere else
// (a pipe, a CI log) it never redraws: it writes a line when a phase starts,
// at most one every logEvery while it runs, and one when the backend ends.
type progress struct {
	w       io.Writer
	backend string
	live    bool // w is a terminal
	cols    int  // terminal width (live only)
	start   time.Time
	mu      sync.Mutex
	last    time.Time
	drawn   bool // a live line is on screen
}

// logEvery spaces the lines of a long phase outside a terminal.
const logEvery = 30 * time.Second

// tick counts one phase's operations; a nil tick counts nothing.
type tick struct {
	p     *progress
	label string
	total int
	start time.Time
	done  atomic.Int64
}

func newProgress(w io.Writer, backend string) *progress {
	if w == nil {
		return nil
	}
	p := &progress{w: w, backend: backend, start: time.Now()}
	if f, ok := w.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
		p.live = true
		p.cols = 100
		if c, _, err := term.GetSize(int(f.Fd())); err == nil && c > 20 {
			p.cols = c
		}
	}
	return p
}

// phase starts a phase of total operations (0: no count) and reports it.
func (p *progress) phase(label string, total int) *tick {
	if p == nil {
		return nil
	}
	t := &tick{p: p, label: label, total: total, start: time.Now()}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.live {
		p.draw(t)
	} else {
		p.last = time.Now()
		if total > 0 {
			fmt.Fprintf(p.w, "[%s] %s: %d operations\n", p.backend, label, total)
		} else {
			fmt.Fprintf(p.w, "[%s] %s\n", p.backend, label)
		}
	}
	return t
}

func (t *tick) add(n int) {
	if t == nil {
		return
	}
	d := int(t.done.Add(int64(n)))
	p := t.p
	if !p.mu.TryLock() {
		return
	}
	defer p.mu.Unlock()
	switch {
	case p.live && (time.Since(p.last) >= 200*time.Millisecond || d == t.total):
		p.draw(t)
	case !p.live && d < t.total && time.Since(p.last) >= logEvery:
		p.last = time.Now()
		fmt.Fprintf(p.w, "[%s] %s: %s\n", p.backend, t.label, t.status(d))
	}
}

// status is "done/total (pct%), ETA 1m05s".
func (t *tick) status(d int) string {
	d = min(d, t.total)
	s := fmt.Sprintf("%d/%d (%d%%)", d, t.total, d*100/max(t.total, 1))
	if eta, ok := t.eta(d); ok {
		s += ", ETA " + eta
	}
	return s
}

// eta estimates the time left from the rate so far (once there is one).
func (t *tick) eta(d int) (string, bool) {
	el := time.Since(t.start)
	if d <= 0 || d >= t.total || el < time.Second {
		return "", false
	}
	left := time.Duration(float64(el) / float64(d) * float64(t.total-d))
	return fmtDuration(left), true
}

func fmtDuration(d time.Duration) string {
	switch {
	case d >= time.Hour:
		return d.Round(time.Minute).String()
	case d >= time.Minute:
		return d.Round(time.Second).String()
	}
	return fmt.Sprintf("%ds", int(d.Round(time.Second).Seconds()))
}

// draw redraws the live line (the caller holds p.mu).
func (p *progress) draw(t *tick) {
	p.last = time.Now()
	line := fmt.Sprintf("[%s] %s", p.backend, t.label)
	if t.total > 0 {
		d := min(int(t.done.Load()), t.total)
		status := t.status(d)
		// The bar takes what the terminal's width leaves, up to 30 cells.
		width := min(30, p.cols-1-len([]rune(line))-len([]rune(status))-4)
		if width >= 5 {
			fill := d * width / t.total
			line += fmt.Sprintf(" [%s%s]", strings.Repeat("#", fill), strings.Repeat(".", width-fill))
		}
		line += " " + status
	}
	if r := []rune(line); len(r) > p.cols-1 {
		line = string(r[:p.cols-1])
	}
	// Carriage return, then erase to the end of the line.
	fmt.Fprintf(p.w, "\r%s\x1b[K", line)
	p.drawn = true
}

// finish ends the backend's report: done, or stopped by err.
func (p *progress) finish(err error) {
	if p == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.live && p.drawn {
		fmt.Fprint(p.w, "\r\x1b[K")
	}
	el := fmtDuration(time.Since(p.start))
	if err != nil {
		fmt.Fprintf(p.w, "[%s] stopped after %s\n", p.backend, el)
		return
	}
	fmt.Fprintf(p.w, "[%s] done in %s\n", p.backend, el)
}

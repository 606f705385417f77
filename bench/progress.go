package bench

import (
	"fmt"
	"io"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// progress draws one updating status line per backend on w (stderr):
// the phase, a bar and a count, redrawn at most five times a second.
type progress struct {
	w       io.Writer
	backend string
	mu      sync.Mutex
	last    time.Time
	drawn   bool
}

// tick counts one phase's operations; a nil tick counts nothing.
type tick struct {
	p     *progress
	label string
	total int
	done  atomic.Int64
}

func newProgress(w io.Writer, backend string) *progress {
	if w == nil {
		return nil
	}
	return &progress{w: w, backend: backend}
}

// phase starts a phase of total operations (0: no bar) and draws it.
func (p *progress) phase(label string, total int) *tick {
	if p == nil {
		return nil
	}
	t := &tick{p: p, label: label, total: total}
	p.mu.Lock()
	p.draw(t)
	p.mu.Unlock()
	return t
}

func (t *tick) add(n int) {
	if t == nil {
		return
	}
	d := t.done.Add(int64(n))
	p := t.p
	if !p.mu.TryLock() {
		return
	}
	defer p.mu.Unlock()
	if time.Since(p.last) >= 200*time.Millisecond || int(d) == t.total {
		p.draw(t)
	}
}

func (p *progress) draw(t *tick) {
	p.last = time.Now()
	line := fmt.Sprintf("[%s] %s", p.backend, t.label)
	if t.total > 0 {
		d := min(int(t.done.Load()), t.total)
		const width = 30
		fill := d * width / t.total
		line += fmt.Sprintf(" [%s%s] %d/%d", strings.Repeat("#", fill), strings.Repeat(".", width-fill), d, t.total)
	}
	fmt.Fprintf(p.w, "\r%-90s", line)
	p.drawn = true
}

// done ends the backend's line.
func (p *progress) done() {
	if p == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.drawn {
		fmt.Fprintf(p.w, "\r%-90s\r[%s] done\n", "", p.backend)
	}
}

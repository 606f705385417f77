package bench

import (
	"bytes"
	"errors"
	"strings"
	"testing"
	"time"
)

// TestProgressLog: outside a terminal, progress writes whole lines only:
// a line per phase, one per logEvery of a long phase (with an estimate of
// the time left), and one at the end.
func TestProgressLog(t *testing.T) {
	var buf bytes.Buffer
	p := newProgress(&buf, "bolt")
	if p.live {
		t.Fatal("a buffer is not a terminal")
	}
	tk := p.phase("growth: loading", 1000)
	tk.start = time.Now().Add(-time.Minute)
	p.last = time.Now().Add(-logEvery)
	tk.add(250)
	tk.add(250) // within logEvery of the last line: nothing
	p.phase("racing", 0)
	p.finish(errors.New("stopped"))
	got := buf.String()
	want := "[bolt] growth: loading: 1000 operations\n" +
		"[bolt] growth: loading: 250/1000 (25%), ETA 3m0s\n" +
		"[bolt] racing\n"
	if !strings.HasPrefix(got, want) || !strings.HasSuffix(got, "\n") || strings.ContainsAny(got, "\r\x1b") {
		t.Fatalf("got %q, want it to start with %q", got, want)
	}
	if !strings.Contains(got, "[bolt] stopped after ") {
		t.Fatalf("no stop line: %q", got)
	}
}

// TestProgressLive: on a terminal the line is redrawn in place, fits the
// terminal's width and carries the estimate of the time left.
func TestProgressLive(t *testing.T) {
	var buf bytes.Buffer
	p := &progress{w: &buf, backend: "sqlite", live: true, cols: 80, start: time.Now()}
	tk := p.phase("bare+raw+sequential", 3000)
	tk.start = time.Now().Add(-10 * time.Second)
	p.last = time.Time{}
	tk.add(1000)
	p.finish(nil)
	got := buf.String()
	frames := strings.Split(got, "\r")
	if len(frames) < 3 {
		t.Fatalf("no redraws: %q", got)
	}
	for _, f := range frames {
		if n := len([]rune(strings.TrimSuffix(f, "\x1b[K"))); n > 79 {
			t.Fatalf("frame wider than the terminal (%d): %q", n, f)
		}
	}
	if !strings.Contains(got, "1000/3000 (33%), ETA 20s") {
		t.Fatalf("no count and ETA: %q", got)
	}
	if !strings.HasSuffix(got, "\r\x1b[K[sqlite] done in 0s\n") {
		t.Fatalf("the line is not cleared before the end line: %q", got)
	}
}

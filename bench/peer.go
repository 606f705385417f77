package bench

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// Peer is one peer system's drain of a backlog, measured in the same run as
// the backends. Skipped, when set, says why it was not measured.
type Peer struct {
	Name    string `json:"name"`
	Version string `json:"version,omitempty"`
	// Jobs in the backlog, the drain's wall time and rate.
	Jobs       int     `json:"jobs,omitempty"`
	Seconds    float64 `json:"seconds,omitempty"`
	JobsPerSec float64 `json:"jobs_per_sec,omitempty"`
	// InsertSeconds is the time the backlog took to insert (not in the rate).
	InsertSeconds float64 `json:"insert_seconds,omitempty"`
	MaxWorkers    int     `json:"max_workers,omitempty"`
	// Machine CPU per job and busy share while the drain ran (see
	// Result.MachineCPUPerOpUS).
	MachineCPUPerJobUS float64 `json:"machine_cpu_us_per_job,omitempty"`
	MachineBusyPct     float64 `json:"machine_busy_pct,omitempty"`
	// Source says where the peer's sources were found (LocateRiver).
	Source  string `json:"source,omitempty"`
	Skipped string `json:"skipped,omitempty"`
}

// PeerSemantics says what a River job does that a wfstore admission does
// not, and the reverse; the report prints it next to the figures.
const PeerSemantics = "River is an at-least-once job queue: a job is one row inserted, then fetched and completed by its worker. " +
	"There is no intent committed before the work is called, no recorded handoff and no receipt: a crash between " +
	"the work and the completion runs the job again. A wfstore admission commits the intent, records the handoff, " +
	"calls the owner and commits its receipt, and never calls the owner twice for one attempt."

// riverResultPrefix starts the machine-readable line of bench/river.
const riverResultPrefix = "RIVER_RESULT "

// riverResult is that line's JSON object.
type riverResult struct {
	River              string  `json:"river"`
	Jobs               int     `json:"jobs"`
	MaxWorkers         int     `json:"max_workers"`
	InsertSeconds      float64 `json:"insert_seconds"`
	Seconds            float64 `json:"seconds"`
	JobsPerSec         float64 `json:"jobs_per_sec"`
	MachineCPUPerJobUS float64 `json:"machine_cpu_us_per_job"`
	MachineBusyPct     float64 `json:"machine_busy_pct"`
}

// parseRiverOutput finds the last result line of bench/river's output.
func parseRiverOutput(out []byte) (Peer, error) {
	var line string
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		if s, ok := strings.CutPrefix(sc.Text(), riverResultPrefix); ok {
			line = s
		}
	}
	if line == "" {
		return Peer{}, errors.New("no " + strings.TrimSpace(riverResultPrefix) + " line in its output")
	}
	var r riverResult
	if err := json.Unmarshal([]byte(line), &r); err != nil {
		return Peer{}, fmt.Errorf("result line: %w", err)
	}
	if r.Jobs <= 0 || r.Seconds <= 0 || r.JobsPerSec <= 0 {
		return Peer{}, fmt.Errorf("result line without a drain: %s", line)
	}
	return Peer{Name: "river", Version: r.River, Jobs: r.Jobs, Seconds: r.Seconds, JobsPerSec: r.JobsPerSec,
		InsertSeconds: r.InsertSeconds, MaxWorkers: r.MaxWorkers,
		MachineCPUPerJobUS: r.MachineCPUPerJobUS, MachineBusyPct: r.MachineBusyPct}, nil
}

// RunRiver drains a backlog of n jobs with the River peer module on the
// database at dsn, in a schema of its own that it drops. dir is the module
// (bench/river, a Go module of its own), or RiverAuto to locate it
// (LocateRiver: from any working directory, falling back to the copy
// embedded in the binary). It builds the module with the go command on
// PATH (which fetches River through the module proxy the first time) and
// runs the binary. It never fails the run: a peer that cannot be located,
// built or run comes back with Skipped saying exactly why, the error
// included. Its progress and errors go to log (may be nil).
func RunRiver(ctx context.Context, dir, dsn string, n int, log io.Writer) Peer {
	skip := func(format string, a ...any) Peer {
		return Peer{Name: "river", Skipped: fmt.Sprintf(format, a...)}
	}
	if log == nil {
		log = io.Discard
	}
	src, from, cleanup, err := LocateRiver(dir)
	defer cleanup()
	if err != nil {
		return skip("%v", err)
	}
	skip = func(format string, a ...any) Peer {
		return Peer{Name: "river", Source: from, Skipped: fmt.Sprintf(format, a...)}
	}
	goCmd, err := exec.LookPath("go")
	if err != nil {
		return skip("cannot build the River peer (%s): %v", from, err)
	}
	tmp, err := os.MkdirTemp("", "wfstore-river-")
	if err != nil {
		return skip("%v", err)
	}
	defer os.RemoveAll(tmp)
	bin := filepath.Join(tmp, "riverbench")
	fmt.Fprintf(log, "river: building %s\n", from)
	build := exec.CommandContext(ctx, goCmd, "build", "-o", bin, ".")
	build.Dir = src
	build.Env = append(os.Environ(), "GOWORK=off", "GOFLAGS=-mod=readonly")
	if out, err := build.CombinedOutput(); err != nil {
		return skip("building the River peer (%s) failed: %v: %s", from, err, lastLines(out, 5))
	}
	var stdout bytes.Buffer
	run := exec.CommandContext(ctx, bin, "-dsn", dsn, "-n", strconv.Itoa(n))
	run.Stdout = &stdout
	run.Stderr = log
	// An interrupt, not a kill, so that it drops its schema.
	run.Cancel = func() error { return run.Process.Signal(os.Interrupt) }
	run.WaitDelay = time.Minute
	fmt.Fprintf(log, "river: draining %d jobs\n", n)
	if err := run.Run(); err != nil {
		return skip("the River drain failed: %v", err)
	}
	p, err := parseRiverOutput(stdout.Bytes())
	if err != nil {
		return skip("the River drain printed no result: %v", err)
	}
	p.Source = from
	return p
}

// lastLines returns the last k lines of b, joined by " | ".
func lastLines(b []byte, k int) string {
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	return strings.Join(lines[max(len(lines)-k, 0):], " | ")
}

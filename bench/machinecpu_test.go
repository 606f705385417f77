package bench

import (
	"bytes"
	"context"
	"runtime"
	"strings"
	"testing"
	"time"
)

func TestParseProcStatCountsBusyAndTotalTicks(t *testing.T) {
	stat := "cpu  100 5 40 800 20 3 2 10 7 0\ncpu0 50 2 20 400 10 1 1 5 3 0\nintr 12345\n"
	busy, total, ok := parseProcStat([]byte(stat))
	if !ok || busy != 100+5+40+3+2 || total != busy+800+20+10 {
		t.Fatalf("busy %d total %d ok %v; want busy 150, total 980", busy, total, ok)
	}
	for _, bad := range []string{"", "cpu0 1 2 3 4 5 6 7 8\n", "cpu 1 2 3 x 5 6 7 8\n", "cpu 1 2 3\n"} {
		if _, _, ok := parseProcStat([]byte(bad)); ok {
			t.Errorf("%q parsed", bad)
		}
	}
}

func TestMachineCPUPerOpAndBusyShare(t *testing.T) {
	r := &recorder{ops: 100, elapsed: time.Second, mBusy: 150, mTotal: 200}
	res := r.result("x", WSequential, 1)
	if res.MachineBusyPct != 75 || res.MachineCPUPerOpUS != 15000 {
		t.Fatalf("busy %v%%, %v µs/op; want 75%%, 15000 µs/op (1.5 s of CPU over 100 ops)", res.MachineBusyPct, res.MachineCPUPerOpUS)
	}
	r.noMachine = true
	if res := r.result("x", WSequential, 1); res.MachineBusyPct != 0 || res.MachineCPUPerOpUS != 0 {
		t.Fatalf("not measured, yet %v%%, %v µs/op", res.MachineBusyPct, res.MachineCPUPerOpUS)
	}
}

// On Linux, measure sees the machine busy while the phase burns CPU.
func TestMeasureRecordsMachineCPU(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("machine CPU is read from /proc/stat on Linux only")
	}
	rec := &recorder{}
	if err := measure(t.Context(), spin(300*time.Millisecond), 1, rec); err != nil {
		t.Fatal(err)
	}
	res := rec.result("x", WBare, 1)
	// 300 ms of spinning is at least 20 ticks of 10 ms on any machine.
	if rec.noMachine || rec.mBusy < 20 || res.MachineBusyPct <= 0 {
		t.Fatalf("noMachine %v, busy %d ticks of %d, %v%%", rec.noMachine, rec.mBusy, rec.mTotal, res.MachineBusyPct)
	}
	var b bytes.Buffer
	(&Report{Results: []Result{res}}).WriteTable(&b)
	if !strings.Contains(b.String(), "machine CPU µs/op (busy)") || !strings.Contains(b.String(), "%)") {
		t.Fatalf("table without the machine column:\n%s", b.String())
	}
}

// spin is a phase that keeps one CPU busy for d per operation.
type spin time.Duration

func (s spin) run(_ context.Context, k int, rec *recorder) error {
	for range k {
		start := time.Now()
		for time.Since(start) < time.Duration(s) {
		}
		rec.add(time.Since(start))
	}
	return nil
}

// The Postgres speedup check says whether the machine had CPU to spare.
func TestSpeedupCheckSaysWhetherTheMachineWasCPUBound(t *testing.T) {
	for _, c := range []struct {
		busy float64
		want string
	}{
		{93, "2.00× (machine 93% busy: CPU-bound here)"},
		{50, "2.00× (machine 50% busy)"},
		{0, "2.00×"},
	} {
		sp := 2.0
		r := &Report{Results: []Result{{Backend: "postgres", Workload: WParallel, Workers: 8, Ops: 10, Speedup: &sp, MachineBusyPct: c.busy}}}
		var pg []Check
		for _, x := range r.Checks() {
			if strings.Contains(x.Target, "2.5×") {
				pg = append(pg, x)
			}
		}
		if len(pg) != 1 || pg[0].Value != c.want || pg[0].Met {
			t.Errorf("busy %v: %+v, want value %q, missed", c.busy, pg, c.want)
		}
	}
}

package conformance

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/wfstore/wfstore/backend"
)

func init() {
	testRoles = map[string]childRole{
		"test.barrier": testBarrierRole,
		"test.fail": func(context.Context, backend.Backend, []byte, func()) ([]byte, error) {
			return nil, errors.New("deliberate role failure 5e1f")
		},
		"test.silent": func(context.Context, backend.Backend, []byte, func()) ([]byte, error) { os.Exit(0); return nil, nil },
	}
}

// memHarness is memstore; in a child, Open is slowed for child 0 when asked
// (to show that the barrier holds the others), or fails when asked.
func memHarness() Harness {
	stores := &memStores{}
	return Harness{
		Name: "memstore",
		New:  stores.New,
		Open: func(ctx context.Context, loc string) (backend.Backend, error) {
			if IsChild() {
				var a barrierArg
				_ = json.Unmarshal(argFromEnv(), &a)
				if a.I == 0 && a.SlowOpen > 0 {
					time.Sleep(a.SlowOpen)
				}
				if os.Getenv("WFSTORE_TEST_CHILD_OPEN_FAILS") != "" {
					return nil, errors.New("deliberate open failure 77ab")
				}
			}
			return stores.Open(ctx, loc)
		},
	}
}

func argFromEnv() []byte {
	var out []byte
	if v := os.Getenv(envArg); v != "" {
		out, _ = decodeArg(v)
	}
	return out
}

type barrierArg struct {
	I        int
	SlowOpen time.Duration
}

type barrierResult struct {
	I             int
	Start, Passed int64 // unix nanoseconds: role started (just after ready), barrier passed
}

func testBarrierRole(ctx context.Context, b backend.Backend, arg []byte, wait func()) ([]byte, error) {
	var a barrierArg
	if err := json.Unmarshal(arg, &a); err != nil {
		return nil, err
	}
	start := time.Now().UnixNano()
	if err := b.View(ctx, func(backend.ReadTx) error { return nil }); err != nil {
		return nil, err
	}
	wait()
	return json.Marshal(barrierResult{I: a.I, Start: start, Passed: time.Now().UnixNano()})
}

func TestRunChildrenBarrierAndResults(t *testing.T) {
	h := memHarness()
	if IsChild() {
		runChild(t, h)
		return
	}
	e := newEnv(t, h)
	const n = 3
	var args [][]byte
	for i := range n {
		a, _ := json.Marshal(barrierArg{I: i, SlowOpen: 400 * time.Millisecond})
		args = append(args, a)
	}
	out := e.RunChildren("test.barrier", n, args)
	var lastStart, firstPass int64
	for i, o := range out {
		var r barrierResult
		if err := json.Unmarshal(o, &r); err != nil {
			t.Fatalf("child %d: %v (%q)", i, err, o)
		}
		if r.I != i {
			t.Errorf("child %d returned the result of child %d", i, r.I)
		}
		lastStart = max(lastStart, r.Start)
		if firstPass == 0 || r.Passed < firstPass {
			firstPass = r.Passed
		}
	}
	// Child 0 opens 400ms late; a role starts just after its ready line, so
	// allow a little slack for that gap but not the 400ms.
	if firstPass < lastStart-int64(100*time.Millisecond) {
		t.Errorf("a child passed the barrier %v before the slowest child was ready", time.Duration(lastStart-firstPass))
	}
}

// TestRunChildrenFailures runs itself in a subprocess for each way a child
// can fail and checks that the parent test fails and says why.
func TestRunChildrenFailures(t *testing.T) {
	if mode := os.Getenv("WFSTORE_TEST_CHILD_FAILURE"); mode != "" || IsChild() {
		h := memHarness()
		if IsChild() {
			runChild(t, h)
			return
		}
		e := newEnv(t, h)
		e.RunChildren(mode, 2, nil)
		t.Log("RunChildren returned")
		return
	}
	if testing.Short() {
		t.Skip("short")
	}
	for _, c := range []struct {
		mode, env string
		want      []string
	}{
		{"test.fail", "", []string{"2 of 2 children failed", "deliberate role failure 5e1f", "child 0", "child 1"}},
		{"test.silent", "", []string{"no result marker"}},
		{"test.barrier", "WFSTORE_TEST_CHILD_OPEN_FAILS=1", []string{"exited before it was ready", "deliberate open failure 77ab"}},
		{"test.no-such-role", "", []string{"unknown role"}},
	} {
		t.Run(c.mode, func(t *testing.T) {
			t.Parallel()
			cmd := exec.Command(os.Args[0], "-test.run=^TestRunChildrenFailures$", "-test.count=1")
			cmd.Env = append(os.Environ(), "WFSTORE_TEST_CHILD_FAILURE="+c.mode)
			if c.env != "" {
				cmd.Env = append(cmd.Env, c.env)
			}
			out, err := cmd.CombinedOutput()
			if err == nil {
				t.Fatalf("the test passed; want it to fail:\n%s", out)
			}
			for _, w := range c.want {
				if !strings.Contains(string(out), w) {
					t.Errorf("output lacks %q:\n%s", w, out)
				}
			}
			if strings.Contains(string(out), "RunChildren returned") {
				t.Errorf("RunChildren returned after a failure:\n%s", out)
			}
		})
	}
}

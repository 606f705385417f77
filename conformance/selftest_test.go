package conformance

import (
	"context"
	"flag"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/wfstore/wfstore/backend"
	"github.com/wfstore/wfstore/memstore"
)

// The model tier and the linearizability check must be able to fail: over
// a deliberately non-serializable backend both report a violation, and over
// the same backend unbroken both pass.

// racyBackend breaks Update's isolation: fn runs against a snapshot taken
// when Update starts (outside any lock, and without seeing its own earlier
// writes), its writes are buffered, and they are applied later in a
// separate real Update. Two racing Updates thus both see the same snapshot
// (the handoff compare-and-set and the pending→running gate stop working),
// and a transaction's reads after its own writes see stale data.
type racyBackend struct {
	backend.Backend
}

type bufferedTx struct {
	backend.ReadTx
	applied *[]backend.Changes
}

func (t bufferedTx) Apply(ctx context.Context, c backend.Changes) error {
	*t.applied = append(*t.applied, c)
	return nil
}

func (b racyBackend) Update(ctx context.Context, fn func(tx backend.Tx) error) error {
	var applied []backend.Changes
	if err := b.Backend.View(ctx, func(r backend.ReadTx) error {
		return fn(bufferedTx{ReadTx: r, applied: &applied})
	}); err != nil {
		return err
	}
	if len(applied) == 0 {
		return nil
	}
	time.Sleep(300 * time.Microsecond) // widen the window
	return b.Backend.Update(ctx, func(tx backend.Tx) error {
		for _, c := range applied {
			if err := tx.Apply(ctx, c); err != nil {
				return err
			}
		}
		return nil
	})
}

// recorder is a rapid.TB and reporter that records failures instead of
// failing the test; Fatal and FailNow end the goroutine as testing does.
type recorder struct {
	mu     sync.Mutex
	name   string
	failed bool
	logs   []string
}

func (r *recorder) Helper()      {}
func (r *recorder) Name() string { return r.name }
func (r *recorder) log(s string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.logs = append(r.logs, s)
}
func (r *recorder) fail()                             { r.mu.Lock(); r.failed = true; r.mu.Unlock() }
func (r *recorder) Logf(format string, args ...any)   { r.log(fmt.Sprintf(format, args...)) }
func (r *recorder) Log(args ...any)                   { r.log(fmt.Sprint(args...)) }
func (r *recorder) Errorf(format string, args ...any) { r.fail(); r.Logf(format, args...) }
func (r *recorder) Error(args ...any)                 { r.fail(); r.Log(args...) }
func (r *recorder) Fatalf(format string, args ...any) { r.Errorf(format, args...); runtime.Goexit() }
func (r *recorder) Fatal(args ...any)                 { r.Error(args...); runtime.Goexit() }
func (r *recorder) FailNow()                          { r.fail(); runtime.Goexit() }
func (r *recorder) Fail()                             { r.fail() }
func (r *recorder) Skipf(format string, args ...any)  { r.Logf(format, args...); runtime.Goexit() }
func (r *recorder) Skip(args ...any)                  { r.Log(args...); runtime.Goexit() }
func (r *recorder) SkipNow()                          { runtime.Goexit() }
func (r *recorder) Failed() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.failed
}

// run runs f in its own goroutine (so Goexit ends only f) and waits.
func (r *recorder) run(f func()) {
	done := make(chan struct{})
	go func() {
		defer close(done)
		f()
	}()
	<-done
}

func (r *recorder) output() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := strings.Join(r.logs, "\n")
	if len(out) > 4000 {
		out = out[:4000] + "\n..."
	}
	return out
}

// setFlag sets a rapid flag for the test (not parallel: no other rapid
// check runs meanwhile) and restores it afterwards.
func setFlag(t *testing.T, name, value string) {
	f := flag.Lookup(name)
	if f == nil {
		t.Fatalf("no flag %s", name)
	}
	old := f.Value.String()
	if err := f.Value.Set(value); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = f.Value.Set(old) })
}

func selfTestStore(t *testing.T) (context.Context, func(broken bool) backend.Backend) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	store := memstore.New()
	return ctx, func(broken bool) backend.Backend {
		b := store.Open()
		t.Cleanup(func() { b.Close() })
		if broken {
			return racyBackend{b}
		}
		return b
	}
}

func TestSelfTestModelTierReportsANonSerializableBackend(t *testing.T) {
	setFlag(t, "rapid.nofailfile", "true")
	setFlag(t, "rapid.shrinktime", "2s")
	ctx, open := selfTestStore(t)

	good := &recorder{name: t.Name() + "/good"}
	good.run(func() { checkModel(good, ctx, open(false), 1500, false) })
	if good.Failed() {
		t.Fatalf("the model tier fails on an unbroken memstore:\n%s", good.output())
	}

	bad := &recorder{name: t.Name() + "/broken"}
	bad.run(func() { checkModel(bad, ctx, open(true), 20000, false) })
	if !bad.Failed() {
		t.Fatalf("the model tier did not report the non-serializable backend:\n%s", bad.output())
	}
	t.Logf("reported as expected:\n%s", bad.output())
}

func TestSelfTestLinearizabilityReportsANonSerializableBackend(t *testing.T) {
	ctx, open := selfTestStore(t)
	cfg := defaultLinConfig

	good := &recorder{name: t.Name() + "/good"}
	good.run(func() { checkLinearizable(good, ctx, []backend.Backend{open(false), open(false)}, cfg) })
	if good.Failed() {
		t.Fatalf("the linearizability check fails on an unbroken memstore:\n%s", good.output())
	}

	// A violation needs a race to happen; a few rounds make it certain in
	// practice.
	for round := range 5 {
		bad := &recorder{name: t.Name() + "/broken"}
		bad.run(func() { checkLinearizable(bad, ctx, []backend.Backend{open(true), open(true)}, cfg) })
		if bad.Failed() {
			t.Logf("reported in round %d as expected:\n%s", round, bad.output())
			return
		}
	}
	t.Fatal("the linearizability check did not report the non-serializable backend in 5 rounds")
}

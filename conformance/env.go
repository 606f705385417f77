package conformance

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/wfstore/wfstore/backend"
)

// caseTimeout bounds one case (env.Ctx), three times longer under the race
// detector, which slows every transaction about tenfold; the test binary's
// own deadline, when sooner, wins.
const caseTimeout = 5 * time.Minute

// verifyTimeout bounds Harness.Verify at the end of a case.
const verifyTimeout = time.Minute

// env is what a case works with: a fresh store, its first opened instance
// and helpers to open more instances, reopen the store and start child
// processes.
type env struct {
	T *testing.T
	// Ctx is cancelled when the case ends; it has a generous timeout.
	Ctx context.Context
	H   Harness
	// Locator names the case's store (what Harness.New returned).
	Locator string
	// B is the first instance, opened by the runner (Reopen replaces it).
	B backend.Backend
	// Caps is what B declared.
	Caps backend.Capabilities

	// batch is the BatchSize of the Stores the case makes (newStore): 0 in
	// the store tier, batchTierSize in the store-batch tier.
	batch int

	mu     sync.Mutex
	open   []backend.Backend // instances still open, in opening order
	opened bool              // the first Open succeeded (Verify is worth running)
}

func newEnv(t *testing.T, h Harness) *env {
	t.Helper()
	timeout := caseTimeout
	if raceDetector {
		timeout *= 3
	}
	if d, ok := t.Deadline(); ok {
		if left := time.Until(d) - 10*time.Second; left < timeout {
			timeout = max(left, time.Second)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	e := &env{T: t, Ctx: ctx, H: h}
	loc := h.New(t)
	e.Locator = loc
	// Registered after New so that it runs before New's own cleanup
	// (cleanups run last-registered first): the store must still exist
	// while we close instances and verify.
	t.Cleanup(func() {
		cancel()
		e.closeAll()
		e.verify()
	})
	b, err := h.Open(ctx, loc)
	if err != nil {
		t.Fatalf("conformance: %s: Open(%q) of a fresh store: %v", h.Name, loc, err)
	}
	if b == nil {
		t.Fatalf("conformance: %s: Open(%q) returned a nil Backend and no error", h.Name, loc)
	}
	e.open = append(e.open, b)
	e.opened = true
	e.B = b
	e.Caps = b.Capabilities()
	return e
}

// Open opens another instance over the case's store, failing the test on
// error. The runner closes it when the case ends. Call RequireMultiInstance
// first: an adapter without MultiInstance may block or fail opening a second
// instance. Call Open from the test's goroutine (it may call T.Fatal).
func (e *env) Open() backend.Backend {
	e.T.Helper()
	e.mu.Lock()
	n := len(e.open)
	e.mu.Unlock()
	if n > 0 && !e.Caps.MultiInstance {
		e.T.Fatalf("conformance: case bug: Open with %d instance(s) open on %s, which does not declare MultiInstance; call RequireMultiInstance first", n, e.H.Name)
	}
	return e.openOne()
}

func (e *env) openOne() backend.Backend {
	e.T.Helper()
	b, err := e.H.Open(e.Ctx, e.Locator)
	if err != nil {
		e.T.Fatalf("conformance: %s: Open(%q): %v", e.H.Name, e.Locator, err)
	}
	if b == nil {
		e.T.Fatalf("conformance: %s: Open(%q) returned a nil Backend and no error", e.H.Name, e.Locator)
	}
	e.mu.Lock()
	e.open = append(e.open, b)
	e.mu.Unlock()
	return b
}

// Reopen closes every instance opened so far (B included), opens a fresh
// one, makes it B and returns it.
func (e *env) Reopen() backend.Backend {
	e.T.Helper()
	e.closeAll()
	e.B = e.openOne()
	return e.B
}

// Close closes b (an instance this env opened) now rather than at cleanup,
// reporting a Close error. It is for cases about closed instances.
func (e *env) Close(b backend.Backend) {
	e.T.Helper()
	e.mu.Lock()
	for i, o := range e.open {
		if o == b {
			e.open = append(e.open[:i:i], e.open[i+1:]...)
			break
		}
	}
	e.mu.Unlock()
	if err := b.Close(); err != nil {
		e.T.Errorf("conformance: %s: Close: %v", e.H.Name, err)
	}
}

// RequireMultiInstance skips the case unless the adapter declares
// MultiInstance.
func (e *env) RequireMultiInstance() {
	e.T.Helper()
	if !e.Caps.MultiInstance {
		e.T.Skipf("capability MultiInstance=false: %s cannot open a second instance over one store", e.H.Name)
	}
}

// RequireMultiProcess skips the case unless the adapter declares
// MultiProcess.
func (e *env) RequireMultiProcess() {
	e.T.Helper()
	if !e.Caps.MultiProcess {
		e.T.Skipf("capability MultiProcess=false: %s cannot share one store between processes", e.H.Name)
	}
}

// closeAll closes every open instance, newest first, reporting errors.
func (e *env) closeAll() {
	e.T.Helper()
	e.mu.Lock()
	open := e.open
	e.open = nil
	e.mu.Unlock()
	for i := len(open) - 1; i >= 0; i-- {
		if err := open[i].Close(); err != nil {
			e.T.Errorf("conformance: %s: Close: %v", e.H.Name, err)
		}
	}
}

// verify runs Harness.Verify on a fresh instance after every other one is
// closed.
func (e *env) verify() {
	if e.H.Verify == nil || !e.opened {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), verifyTimeout)
	defer cancel()
	b, err := e.H.Open(ctx, e.Locator)
	if err != nil {
		e.T.Errorf("conformance: %s: opening the store for Verify: %v", e.H.Name, err)
		return
	}
	if err := e.H.Verify(ctx, b); err != nil {
		e.T.Errorf("conformance: %s: Verify after the case: %v", e.H.Name, err)
	}
	if err := b.Close(); err != nil {
		e.T.Errorf("conformance: %s: Close after Verify: %v", e.H.Name, err)
	}
}

package conformance

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/wfstore/wfstore/backend"
)

func transactionCases() []testCase {
	return []testCase{
		{Name: "update_error_rolls_back_every_write", Run: testErrorRollsBack},
		{Name: "failed_apply_rolls_back_the_whole_transaction", Run: testFailedApplyRollsBack},
		{Name: "update_panic_rolls_back_and_repanics", Run: testPanicRollsBack},
		{Name: "view_panic_propagates_and_releases_the_snapshot", Run: testViewPanic},
		{Name: "update_and_view_return_the_fn_error_as_is", Run: testFnErrorAsIs},
		{Name: "view_reads_one_snapshot_while_an_update_commits", Run: testViewSnapshot},
		{Name: "view_never_observes_a_partial_update", Run: testNoPartialReads},
		{Name: "view_started_after_a_commit_sees_it", Run: testViewAfterCommit},
	}
}

// errFn is an error only the case's fn returns.
var errFn = errors.New("conformance: the error fn returned")

type fnError struct{ n int }

func (e *fnError) Error() string { return fmt.Sprintf("conformance: fn error %d", e.n) }

// mutateAll changes every record of s, deletes its schedule and inserts the
// whole of n, in one transaction.
func mutateAll(ctx context.Context, tx backend.Tx, s, n fullSet) error {
	if err := tx.Apply(ctx, n.changes()); err != nil {
		return err
	}
	rel := s.Lease
	rel.ReleasedMS = rel.AcquiredMS + 1
	act := altActivation(s.Act)
	return tx.Apply(ctx, join(
		rep(altRun(s.Run), act, altGroup(s.Group), altAttempt(s.Attempt), rel),
		del(s.Schedule), ins(fullEvent(s.Run.ID, 10))))
}

// checkNothing checks that no record of n exists, by Load and by scan.
func (e *env) checkNothing(b backend.Backend, what string, n fullSet) {
	e.T.Helper()
	f := e.load(b, n.lookup())
	total := len(f.Runs) + len(f.Links) + len(f.Activations) + len(f.Groups) + len(f.Attempts) +
		len(f.Identities) + len(f.Leases) + len(f.Schedules) + len(f.Resources)
	if total != 0 {
		e.T.Errorf("%s: Load found %d records that were rolled back: %+v", what, total, f)
	}
	e.view(b, func(rtx backend.ReadTx) error {
		ctx := e.Ctx
		p, err := rtx.AdmissibleActivations(ctx, backend.AdmissibleQuery{RunID: n.Run.ID, Limit: 10})
		if err != nil {
			return err
		}
		a, err := rtx.Attempts(ctx, backend.AttemptQuery{RunID: n.Run.ID, Limit: 10})
		if err != nil {
			return err
		}
		c, err := rtx.CountAttempts(ctx, backend.AttemptCountQuery{RunID: n.Run.ID, Limit: 10})
		if err != nil {
			return err
		}
		ev, err := rtx.Events(ctx, backend.EventQuery{RunID: n.Run.ID, Limit: 10})
		if err != nil {
			return err
		}
		l, err := rtx.Leases(ctx, backend.LeaseQuery{RunID: n.Run.ID, IncludeReleased: true, Limit: 10})
		if err != nil {
			return err
		}
		d, err := rtx.DueSchedules(ctx, backend.ScheduleQuery{RunID: n.Run.ID, DueBy: 1 << 62, Limit: 10})
		if err != nil {
			return err
		}
		ch, err := rtx.ChildRuns(ctx, backend.ChildRunQuery{RootRunID: n.Link.RootRunID, Limit: 10})
		if err != nil {
			return err
		}
		if len(p)+len(a)+c+len(ev)+len(l)+len(d)+len(ch) != 0 {
			e.T.Errorf("%s: scans return rolled-back rows: admissible %d, attempts %d, count %d, events %d, leases %d, schedules %d, children %d",
				what, len(p), len(a), c, len(ev), len(l), len(d), len(ch))
		}
		return nil
	})
}

func testErrorRollsBack(e *env) {
	s := newFullSet("run-kept", "node", "act", 1, "identity-kept", "resource")
	n := newFullSet("run-new", "node", "act", 1, "identity-new", "resource")
	e.apply(e.B, s.changes())
	err := e.B.Update(e.Ctx, func(tx backend.Tx) error {
		if err := mutateAll(e.Ctx, tx, s, n); err != nil {
			return err
		}
		return errFn
	})
	e.wantErr("Update", err, errFn)
	e.checkFullSet(e.B, "after rollback", s)
	e.checkNothing(e.B, "after rollback", n)
	// The events scan is unchanged too (an Insert of seq 10 was rolled back).
	evs := scan(e, e.B, func(rtx backend.ReadTx) ([]backend.Event, error) {
		return rtx.Events(e.Ctx, backend.EventQuery{RunID: s.Run.ID, Limit: 10})
	})
	e.equal("Events after rollback", []backend.Event{s.Event}, evs)
	// The same writes commit when fn returns nil.
	e.update(e.B, func(tx backend.Tx) error { return mutateAll(e.Ctx, tx, s, n) })
	e.checkFullSet(e.B, "after commit", n)
}

func testFailedApplyRollsBack(e *env) {
	s := newFullSet("run-kept", "node", "act", 1, "identity-kept", "resource")
	n := newFullSet("run-new", "node", "act", 1, "identity-new", "resource")
	e.apply(e.B, s.changes())
	for _, c := range []struct {
		name string
		bad  backend.Changes
		want error
	}{
		// Each failing operation has operations of the same slice before
		// and after it, and operations in earlier and later slices.
		{"conflict", ins(fullRun("run-before"), s.Run, fullRun("run-after")), backend.ErrConflict},
		{"not found", join(ins(fullRun("run-before"), fullRun("run-after")), rep(fullRun("run-before"), fullRun("run-missing"), fullRun("run-after"))), backend.ErrNotFound},
		// mutateAll replaced s's run, activation and attempt by their alt*.
		{"changed", join(exp(altRun(s.Run), altActivation(s.Act), s.Act, altAttempt(s.Attempt)), ins(fullRun("run-before"), fullRun("run-after"))), backend.ErrChanged},
		{"delete not found", join(del(s.Event, backend.EventKey{RunID: s.Run.ID, Seq: 77}), ins(fullRun("run-before"), fullRun("run-after"))), backend.ErrNotFound},
	} {
		err := e.B.Update(e.Ctx, func(tx backend.Tx) error {
			if err := mutateAll(e.Ctx, tx, s, n); err != nil {
				return err
			}
			return tx.Apply(e.Ctx, c.bad)
		})
		e.wantErr(c.name+": Update", err, c.want)
		e.checkFullSet(e.B, c.name+": after a failed Apply", s)
		e.checkNothing(e.B, c.name+": after a failed Apply", n)
		f := e.load(e.B, backend.Lookup{Runs: []string{"run-before", "run-after"}})
		if len(f.Runs) != 0 {
			e.T.Errorf("%s: runs written around the failing write survived: %v", c.name, f.Runs)
		}
	}
}

type panicValue struct{ s string }

func testPanicRollsBack(e *env) {
	s := newFullSet("run-kept", "node", "act", 1, "identity-kept", "resource")
	n := newFullSet("run-new", "node", "act", 1, "identity-new", "resource")
	e.apply(e.B, s.changes())
	pv := &panicValue{"conformance: panic inside fn"}
	got := func() (r any) {
		defer func() { r = recover() }()
		_ = e.B.Update(e.Ctx, func(tx backend.Tx) error {
			if err := mutateAll(e.Ctx, tx, s, n); err != nil {
				return err
			}
			panic(pv)
		})
		return nil
	}()
	if got != any(pv) {
		e.T.Errorf("Update with a panicking fn: recovered %v, want the panic value re-raised", got)
	}
	e.checkFullSet(e.B, "after panic", s)
	e.checkNothing(e.B, "after panic", n)
	// Nothing stays locked: an Update and a View complete.
	done := make(chan error, 1)
	go func() {
		done <- e.B.Update(e.Ctx, func(tx backend.Tx) error { return tx.Apply(e.Ctx, ins(fullRun("run-after-panic"))) })
	}()
	select {
	case err := <-done:
		if err != nil {
			e.T.Errorf("Update after a panic: %v", err)
		}
	case <-time.After(30 * time.Second):
		e.T.Fatalf("Update after a panicking Update did not finish in 30s (a lock left held?)")
	}
}

func testViewPanic(e *env) {
	e.apply(e.B, ins(fullRun("run-1")))
	pv := &panicValue{"conformance: panic inside View"}
	got := func() (r any) {
		defer func() { r = recover() }()
		_ = e.B.View(e.Ctx, func(rtx backend.ReadTx) error {
			if _, err := backend.GetRun(e.Ctx, rtx, "run-1"); err != nil {
				return err
			}
			panic(pv)
		})
		return nil
	}()
	if got != any(pv) {
		e.T.Errorf("View with a panicking fn: recovered %v, want the panic value re-raised", got)
	}
	// The snapshot was released: a large Update and a View complete.
	done := make(chan error, 1)
	go func() {
		var c backend.Changes
		for i := range 200 {
			a := fullActivation(akey("run-1", fmt.Sprintf("node-%d", i), "a"))
			a.Input = sizedJSON(byte(i), 4096)
			c.Insert.Activations = append(c.Insert.Activations, a)
		}
		err := e.B.Update(e.Ctx, func(tx backend.Tx) error { return tx.Apply(e.Ctx, c) })
		if err == nil {
			err = e.B.View(e.Ctx, func(rtx backend.ReadTx) error { return nil })
		}
		done <- err
	}()
	select {
	case err := <-done:
		if err != nil {
			e.T.Errorf("Update after a panicking View: %v", err)
		}
	case <-time.After(30 * time.Second):
		e.T.Fatalf("Update after a panicking View did not finish in 30s (the read transaction left open?)")
	}
}

func testFnErrorAsIs(e *env) {
	err := e.B.Update(e.Ctx, func(tx backend.Tx) error { return errFn })
	e.wantErr("Update", err, errFn)
	err = e.B.View(e.Ctx, func(rtx backend.ReadTx) error { return errFn })
	e.wantErr("View", err, errFn)
	for _, run := range []func(func() error) error{
		func(f func() error) error { return e.B.Update(e.Ctx, func(backend.Tx) error { return f() }) },
		func(f func() error) error { return e.B.View(e.Ctx, func(backend.ReadTx) error { return f() }) },
	} {
		err := run(func() error { return fmt.Errorf("wrapped: %w", &fnError{n: 7}) })
		var fe *fnError
		if !errors.As(err, &fe) || fe.n != 7 {
			e.T.Errorf("fn's error type is not reachable with errors.As: %v", err)
		}
	}
	// An Apply error returned by fn keeps its sentinel.
	e.apply(e.B, ins(fullRun("run-1")))
	e.wantErr("Update returning Apply's error", e.applyErr(e.B, ins(fullRun("run-1"))), backend.ErrConflict)
}

func testViewSnapshot(e *env) {
	x, y := fullRun("run-x"), fullRun("run-y")
	x.AttemptCount, y.AttemptCount = 1, 1
	e.apply(e.B, ins(x, y))
	x2, y2 := x, y
	x2.AttemptCount, y2.AttemptCount = 2, 2

	done := make(chan error, 1)
	var once sync.Once
	overlapped := false
	e.view(e.B, func(rtx backend.ReadTx) error {
		f, err := rtx.Load(e.Ctx, backend.Lookup{Runs: []string{"run-x"}})
		if err != nil {
			return err
		}
		if got := f.Runs["run-x"].AttemptCount; got != 1 {
			e.T.Errorf("View before the Update: run-x count %d, want 1", got)
		}
		once.Do(func() {
			go func() {
				done <- e.B.Update(e.Ctx, func(tx backend.Tx) error { return tx.Apply(e.Ctx, rep(x2, y2)) })
			}()
			select {
			case err := <-done:
				if err != nil {
					e.T.Errorf("Update during a View: %v", err)
				}
				overlapped = true
			case <-time.After(3 * time.Second):
				// The adapter serializes Update behind an open View.
			}
		})
		f, err = rtx.Load(e.Ctx, backend.Lookup{Runs: []string{"run-x", "run-y"}})
		if err != nil {
			return err
		}
		if gx, gy := f.Runs["run-x"].AttemptCount, f.Runs["run-y"].AttemptCount; gx != 1 || gy != 1 {
			e.T.Errorf("View saw a commit made after it began: run-x %d, run-y %d, want 1 and 1", gx, gy)
		}
		return nil
	})
	if !overlapped {
		e.T.Logf("%s: an Update did not complete while a View was open; the snapshot was not observed across a commit", e.H.Name)
		if err := <-done; err != nil {
			e.T.Errorf("Update after the View: %v", err)
		}
	}
	f := e.load(e.B, backend.Lookup{Runs: []string{"run-x", "run-y"}})
	if gx, gy := f.Runs["run-x"].AttemptCount, f.Runs["run-y"].AttemptCount; gx != 2 || gy != 2 {
		e.T.Errorf("after the Update: run-x %d, run-y %d, want 2 and 2", gx, gy)
	}
}

func testNoPartialReads(e *env) {
	x, y := fullRun("run-x"), fullRun("run-y")
	x.AttemptCount, y.AttemptCount = 0, 0
	e.apply(e.B, ins(x, y))
	const writes = 150
	var stop atomic.Bool
	var views atomic.Int64
	errs := make(chan error, 8)
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for !stop.Load() {
				err := e.B.View(e.Ctx, func(rtx backend.ReadTx) error {
					f, err := rtx.Load(e.Ctx, backend.Lookup{Runs: []string{"run-x"}})
					if err != nil {
						return err
					}
					runtime.Gosched()
					g, err := rtx.Load(e.Ctx, backend.Lookup{Runs: []string{"run-y", "run-x"}})
					if err != nil {
						return err
					}
					a, b, c := f.Runs["run-x"].AttemptCount, g.Runs["run-y"].AttemptCount, g.Runs["run-x"].AttemptCount
					if a != b || a != c {
						return fmt.Errorf("one View read run-x=%d, then run-y=%d and run-x=%d; an Update writes both together", a, b, c)
					}
					return nil
				})
				if err != nil {
					errs <- err
					return
				}
				views.Add(1)
			}
		})
	}
	for i := range writes {
		err := e.B.Update(e.Ctx, func(tx backend.Tx) error {
			r, err := backend.GetRun(e.Ctx, tx, "run-x")
			if err != nil {
				return err
			}
			r.AttemptCount = int64(i + 1)
			if err := tx.Apply(e.Ctx, rep(r)); err != nil {
				return err
			}
			runtime.Gosched()
			s, err := backend.GetRun(e.Ctx, tx, "run-y")
			if err != nil {
				return err
			}
			s.AttemptCount = int64(i + 1)
			return tx.Apply(e.Ctx, rep(s))
		})
		if err != nil {
			stop.Store(true)
			wg.Wait()
			e.T.Fatalf("Update %d: %v", i, err)
		}
	}
	stop.Store(true)
	wg.Wait()
	close(errs)
	for err := range errs {
		e.T.Error(err)
	}
	e.T.Logf("%d views raced %d updates", views.Load(), writes)
}

func testViewAfterCommit(e *env) {
	e.apply(e.B, ins(fullRun("run-c")))
	var committed atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, 4)
	var stop atomic.Bool
	for range 3 {
		wg.Go(func() {
			for !stop.Load() {
				want := committed.Load()
				var got int64
				err := e.B.View(e.Ctx, func(rtx backend.ReadTx) error {
					r, err := backend.GetRun(e.Ctx, rtx, "run-c")
					got = r.AttemptCount
					return err
				})
				if err != nil {
					errs <- err
					return
				}
				if got < want {
					errs <- fmt.Errorf("a View begun after Update %d returned saw count %d (stale read)", want, got)
					return
				}
			}
		})
	}
	for i := int64(1); i <= 100; i++ {
		err := e.B.Update(e.Ctx, func(tx backend.Tx) error {
			r, err := backend.GetRun(e.Ctx, tx, "run-c")
			if err != nil {
				return err
			}
			r.AttemptCount = i
			return tx.Apply(e.Ctx, rep(r))
		})
		if err != nil {
			e.T.Errorf("Update %d: %v", i, err)
			break
		}
		committed.Store(i)
	}
	stop.Store(true)
	wg.Wait()
	close(errs)
	for err := range errs {
		e.T.Error(err)
	}
}

package conformance

import (
	"errors"
	"fmt"
	"sort"
	"sync"

	"github.com/wfstore/wfstore/backend"
)

// Group commit (backend.Backend.Update): an adapter may run concurrent
// Updates' fns in one physical transaction. These cases hold on any adapter,
// merged or not: many goroutines Update at once, some fns fail after (or
// before) writing, one panics; every succeeding fn's writes are stored, no
// failing fn's write is, each caller gets its own error or panic, and a read
// inside an Update sees another Update's writes whole or not at all.

func groupCommitCases() []testCase {
	return []testCase{
		{Name: "group_commit_failing_fns_leak_nothing_and_lose_nothing", Run: testGroupCommitOutcomes},
		{Name: "group_commit_reads_see_other_updates_whole_or_not", Run: testGroupCommitReads},
	}
}

// gcOutcome is what one Update of testGroupCommitOutcomes is told to do.
type gcOutcome int

const (
	gcCommit         gcOutcome = iota // write, return nil
	gcFailAfterWrite                  // write, return its own error
	gcFailNoWrite                     // return its own error before writing
	gcPanic                           // write, panic with its own value
)

// gcPlan decides the outcome of Update i of worker w.
func gcPlan(w, i int) gcOutcome {
	switch {
	case w == 3 && i == 5:
		return gcPanic
	case (w+i)%4 == 1:
		return gcFailAfterWrite
	case (w+i)%7 == 3:
		return gcFailNoWrite
	}
	return gcCommit
}

// gcPanicValue is the value one fn panics with.
type gcPanicValue struct{ w, i int }

// updateCatching runs fn in b.Update in this goroutine and returns the
// error, or the value fn panicked with.
func updateCatching(e *env, b backend.Backend, fn func(tx backend.Tx) error) (panicked any, err error) {
	defer func() { panicked = recover() }()
	return nil, b.Update(e.Ctx, fn)
}

func testGroupCommitOutcomes(e *env) {
	const workers, k = 8, 16
	start := make(chan struct{})
	var wg sync.WaitGroup
	var mu sync.Mutex
	var problems []string
	report := func(format string, args ...any) {
		mu.Lock()
		problems = append(problems, fmt.Sprintf(format, args...))
		mu.Unlock()
	}
	for w := range workers {
		wg.Go(func() {
			<-start
			// Every worker writes to its own run and to one shared run, so
			// that the Updates are independent but their writes sit close.
			run := fmt.Sprintf("run-gc-%d", w)
			for i := range k {
				plan := gcPlan(w, i)
				own := fmt.Errorf("worker %d update %d failed on purpose", w, i)
				ev := fullEvent(run, int64(i+1))
				shared := fullEvent("run-gc-shared", int64(w*k+i+1))
				for {
					p, err := updateCatching(e, e.B, func(tx backend.Tx) error {
						if plan == gcFailNoWrite {
							return own
						}
						if err := tx.Apply(e.Ctx, ins(ev, shared)); err != nil {
							return err
						}
						switch plan {
						case gcFailAfterWrite:
							return own
						case gcPanic:
							panic(&gcPanicValue{w, i})
						}
						return nil
					})
					if errors.Is(err, backend.ErrBusy) && e.Ctx.Err() == nil {
						continue
					}
					switch plan {
					case gcCommit:
						if err != nil || p != nil {
							report("worker %d update %d: Update = %v, panic %v, want nil", w, i, err, p)
						}
					case gcFailAfterWrite, gcFailNoWrite:
						if !errors.Is(err, own) || p != nil {
							report("worker %d update %d: Update = %v, panic %v, want its own error %q", w, i, err, p, own)
						}
					case gcPanic:
						if pv, ok := p.(*gcPanicValue); !ok || *pv != (gcPanicValue{w, i}) {
							report("worker %d update %d: panic %v (Update = %v), want its own panic value", w, i, p, err)
						}
					}
					break
				}
			}
		})
	}
	close(start)
	wg.Wait()
	for _, p := range problems {
		e.T.Error(p)
	}
	var wantShared []int64
	for w := range workers {
		run := fmt.Sprintf("run-gc-%d", w)
		var want []int64
		for i := range k {
			if gcPlan(w, i) == gcCommit {
				want = append(want, int64(i+1))
				wantShared = append(wantShared, int64(w*k+i+1))
			}
		}
		e.equal(run+" event seqs (every committed Update's, no failed one's)", want, gcSeqs(e, run))
	}
	sort.Slice(wantShared, func(a, b int) bool { return wantShared[a] < wantShared[b] })
	e.equal("run-gc-shared event seqs", wantShared, gcSeqs(e, "run-gc-shared"))
}

// gcSeqs returns the Seq of every event of run, in order.
func gcSeqs(e *env, run string) []int64 {
	e.T.Helper()
	evs := scan(e, e.B, func(rtx backend.ReadTx) ([]backend.Event, error) {
		return rtx.Events(e.Ctx, backend.EventQuery{RunID: run, Limit: 10000})
	})
	seqs := make([]int64, 0, len(evs))
	for _, ev := range evs {
		seqs = append(seqs, ev.Seq)
		if want := fullEvent(run, ev.Seq); !e.equal(fmt.Sprintf("%s event %d", run, ev.Seq), want, ev) {
			break
		}
	}
	return seqs
}

// testGroupCommitReads: writers insert events in pairs (2j+1, 2j+2) of one
// run, some then fail; readers, in Updates of their own that also write,
// read the run and must see only whole pairs of Updates that succeeded.
func testGroupCommitReads(e *env) {
	const writers, readers, k = 6, 3, 12
	const run = "run-gc-pairs"
	failing := func(pair int64) bool { return pair%3 == 2 }
	start := make(chan struct{})
	var wg sync.WaitGroup
	errs := make(chan error, writers+readers)
	for w := range writers {
		wg.Go(func() {
			<-start
			for j := range k {
				pair := int64(w*k + j)
				own := fmt.Errorf("pair %d failed on purpose", pair)
				for {
					err := e.B.Update(e.Ctx, func(tx backend.Tx) error {
						if err := tx.Apply(e.Ctx, ins(fullEvent(run, 2*pair+1))); err != nil {
							return err
						}
						if err := tx.Apply(e.Ctx, ins(fullEvent(run, 2*pair+2))); err != nil {
							return err
						}
						if failing(pair) {
							return own
						}
						return nil
					})
					if errors.Is(err, backend.ErrBusy) && e.Ctx.Err() == nil {
						continue
					}
					if failing(pair) && !errors.Is(err, own) {
						errs <- fmt.Errorf("pair %d: Update = %v, want its own error", pair, err)
						return
					}
					if !failing(pair) && err != nil {
						errs <- fmt.Errorf("pair %d: Update = %v", pair, err)
						return
					}
					break
				}
			}
		})
	}
	for r := range readers {
		wg.Go(func() {
			<-start
			for i := range 2 * k {
				var seen []backend.Event // the last run of fn's reads
				for {
					err := e.B.Update(e.Ctx, func(tx backend.Tx) error {
						evs, err := tx.Events(e.Ctx, backend.EventQuery{RunID: run, Limit: 10000})
						if err != nil {
							return err
						}
						seen = evs
						return tx.Apply(e.Ctx, ins(fullEvent(fmt.Sprintf("run-gc-reader-%d", r), int64(i+1))))
					})
					if errors.Is(err, backend.ErrBusy) && e.Ctx.Err() == nil {
						continue
					}
					if err != nil {
						errs <- fmt.Errorf("reader %d: Update = %v", r, err)
						return
					}
					break
				}
				if err := gcWholePairs(seen, failing); err != nil {
					errs <- fmt.Errorf("reader %d read %d inside an Update: %w", r, i, err)
					return
				}
			}
		})
	}
	close(start)
	wg.Wait()
	close(errs)
	for err := range errs {
		e.T.Error(err)
	}
	evs := scan(e, e.B, func(rtx backend.ReadTx) ([]backend.Event, error) {
		return rtx.Events(e.Ctx, backend.EventQuery{RunID: run, Limit: 10000})
	})
	if err := gcWholePairs(evs, failing); err != nil {
		e.T.Errorf("after the race: %v", err)
	}
	want := 0
	for pair := range int64(writers * k) {
		if !failing(pair) {
			want += 2
		}
	}
	if len(evs) != want {
		e.T.Errorf("after the race: %d events, want %d (every succeeding Update's pair)", len(evs), want)
	}
}

// gcWholePairs checks that evs holds whole pairs of succeeding Updates.
func gcWholePairs(evs []backend.Event, failing func(pair int64) bool) error {
	has := make(map[int64]bool, len(evs))
	for _, ev := range evs {
		has[ev.Seq] = true
	}
	for _, ev := range evs {
		pair := (ev.Seq - 1) / 2
		if failing(pair) {
			return fmt.Errorf("event %d of failed Update %d is visible", ev.Seq, pair)
		}
		if !has[2*pair+1] || !has[2*pair+2] {
			return fmt.Errorf("half of Update %d's pair is visible (event %d without its partner)", pair, ev.Seq)
		}
	}
	return nil
}

package conformance

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/wfstore/wfstore/backend"
)

func concurrencyCases() []testCase {
	return []testCase{
		{Name: "no_lost_update_across_goroutines", Run: func(e *env) { testLostUpdateGoroutines(e, false) }},
		{Name: "no_lost_update_across_instances", Run: func(e *env) { testLostUpdateInstances(e, false) }},
		{Name: "no_lost_update_across_processes", Run: func(e *env) { testLostUpdateProcesses(e, false) }},
		{Name: "no_lost_update_expecting_known_rows_across_goroutines", Run: func(e *env) { testLostUpdateGoroutines(e, true) }},
		{Name: "no_lost_update_expecting_known_rows_across_instances", Run: func(e *env) { testLostUpdateInstances(e, true) }},
		{Name: "no_lost_update_expecting_known_rows_across_processes", Run: func(e *env) { testLostUpdateProcesses(e, true) }},
		{Name: "no_write_skew_across_goroutines", Run: func(e *env) { testWriteSkew(e, false) }},
		{Name: "no_write_skew_across_instances", Run: func(e *env) { testWriteSkew(e, true) }},
		{Name: "racing_inserts_of_one_key_admit_exactly_one", Run: testInsertRace},
		{Name: "racing_inserts_across_processes_admit_exactly_one", Run: testInsertRaceProcesses},
		{Name: "concurrent_inserts_of_distinct_keys_all_commit", Run: testDistinctInserts},
		{Name: "commit_is_visible_to_another_instance", Run: testCrossInstanceVisibility},
	}
}

// increment adds one to the run's AttemptCount in one Update. ErrBusy (the
// transaction did not commit) is retried here, as an application would;
// busy counts the retries.
//
// With known nil the Update reads the run, then replaces it. Otherwise
// known is the run as this caller last committed or read it, and the
// Update decides on it without reading: it expects known unchanged and
// replaces it with known + 1, as the workflow's handoff and receipt steps
// do; after ErrChanged (another writer got there first) it reads the run
// and tries again. An adapter that kept a copy of the row between
// transactions and missed another writer's commit would lose updates here.
func increment(ctx context.Context, b backend.Backend, runID string, known *backend.Run, busy *atomic.Int64) error {
	changed := 0
	for {
		var err error
		if known == nil {
			err = b.Update(ctx, func(tx backend.Tx) error {
				r, err := backend.GetRun(ctx, tx, runID)
				if err != nil {
					return err
				}
				if r.AttemptCount%4 == 1 {
					// Widen the read-modify-write window now and then.
					time.Sleep(200 * time.Microsecond)
				}
				r.AttemptCount++
				r.UpdatedMS++
				return tx.Apply(ctx, rep(r))
			})
		} else {
			if known.ID == "" {
				if err := b.View(ctx, func(rtx backend.ReadTx) error {
					var err error
					*known, err = backend.GetRun(ctx, rtx, runID)
					return err
				}); err != nil {
					return err
				}
			}
			next := *known
			next.AttemptCount++
			next.UpdatedMS++
			err = b.Update(ctx, func(tx backend.Tx) error {
				return tx.Apply(ctx, join(exp(*known), rep(next)))
			})
			switch {
			case err == nil:
				*known = next
			case errors.Is(err, backend.ErrChanged):
				// Each ErrChanged means another writer committed in between,
				// and the cases make a few hundred increments in all: an
				// Expect that keeps failing on the row just read compares
				// with something other than what Load returns.
				if changed++; changed > maxChanged {
					return fmt.Errorf("expect of the run as just read failed %d times in a row: %w", changed, err)
				}
				*known = backend.Run{} // read it again
				continue
			}
		}
		if errors.Is(err, backend.ErrBusy) && ctx.Err() == nil {
			busy.Add(1)
			continue
		}
		return err
	}
}

// maxChanged bounds the ErrChanged one expecting increment may meet in a
// row: more than every other writer's increments together.
const maxChanged = 1000

// incrementMode names increment's two ways in failure messages.
func incrementMode(expect bool) string {
	if expect {
		return "expecting the row last committed"
	}
	return "read-modify-write"
}

// knownFor returns the known run for increment: nil to read-modify-write.
func knownFor(expect bool) *backend.Run {
	if expect {
		return &backend.Run{}
	}
	return nil
}

// hammer runs workers goroutines, each doing k increments of runID on its
// instance (instances[i%len]), started together; it returns the first error.
func hammer(e *env, instances []backend.Backend, runID string, workers, k int, expect bool) (busy int64, err error) {
	var wg sync.WaitGroup
	var nbusy atomic.Int64
	start := make(chan struct{})
	errs := make(chan error, workers)
	for w := range workers {
		b := instances[w%len(instances)]
		wg.Go(func() {
			known := knownFor(expect)
			<-start
			for range k {
				if err := increment(e.Ctx, b, runID, known, &nbusy); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	close(start)
	wg.Wait()
	close(errs)
	return nbusy.Load(), <-errs
}

func (e *env) counter(b backend.Backend, runID string) int64 {
	e.T.Helper()
	var r backend.Run
	e.view(b, func(rtx backend.ReadTx) error {
		var err error
		r, err = backend.GetRun(e.Ctx, rtx, runID)
		return err
	})
	return r.AttemptCount
}

func counterRun(id string) backend.Run {
	r := fullRun(id)
	r.AttemptCount = 0
	return r
}

func testLostUpdateGoroutines(e *env, expect bool) {
	e.apply(e.B, ins(counterRun("run-counter")))
	const workers, k = 8, 25
	busy, err := hammer(e, []backend.Backend{e.B}, "run-counter", workers, k, expect)
	if err != nil {
		e.T.Fatalf("increment: %v", err)
	}
	if got := e.counter(e.B, "run-counter"); got != workers*k {
		e.T.Errorf("after %d concurrent increments (%s) the counter is %d (lost updates)", workers*k, incrementMode(expect), got)
	}
	e.T.Logf("%d ErrBusy retries", busy)
}

func testLostUpdateInstances(e *env, expect bool) {
	e.RequireMultiInstance()
	e.apply(e.B, ins(counterRun("run-counter")))
	instances := []backend.Backend{e.B, e.Open(), e.Open()}
	const workers, k = 9, 20
	busy, err := hammer(e, instances, "run-counter", workers, k, expect)
	if err != nil {
		e.T.Fatalf("increment: %v", err)
	}
	for i, b := range instances {
		if got := e.counter(b, "run-counter"); got != workers*k {
			e.T.Errorf("instance %d: after %d concurrent increments (%s) the counter is %d (lost updates)", i, workers*k, incrementMode(expect), got)
		}
	}
	e.T.Logf("%d ErrBusy retries", busy)
}

const (
	roleIncrement  = "contract.increment"
	roleInsertRace = "contract.insert_race"
)

type incrementArg struct {
	Run    string
	K      int
	Expect bool // increment expecting the row last committed
}

type incrementResult struct {
	Done int
	Busy int64
}

func incrementRole(ctx context.Context, b backend.Backend, arg []byte, wait func()) ([]byte, error) {
	var a incrementArg
	if err := json.Unmarshal(arg, &a); err != nil {
		return nil, err
	}
	// Warm up (open connections, load the schema) before the barrier.
	if err := b.View(ctx, func(rtx backend.ReadTx) error { _, err := backend.GetRun(ctx, rtx, a.Run); return err }); err != nil {
		return nil, err
	}
	wait()
	var busy atomic.Int64
	var res incrementResult
	known := knownFor(a.Expect)
	for range a.K {
		if err := increment(ctx, b, a.Run, known, &busy); err != nil {
			return nil, fmt.Errorf("increment %d: %w", res.Done, err)
		}
		res.Done++
	}
	res.Busy = busy.Load()
	return json.Marshal(res)
}

func testLostUpdateProcesses(e *env, expect bool) {
	e.RequireMultiProcess()
	e.apply(e.B, ins(counterRun("run-counter")))
	const children, k = 3, 30
	arg, _ := json.Marshal(incrementArg{Run: "run-counter", K: k, Expect: expect})
	args := [][]byte{arg, arg, arg}
	// The parent increments too, while the children run.
	var wg sync.WaitGroup
	var perr error
	var pbusy atomic.Int64
	wg.Go(func() {
		known := knownFor(expect)
		for range k {
			if perr = increment(e.Ctx, e.B, "run-counter", known, &pbusy); perr != nil {
				return
			}
		}
	})
	out := e.RunChildren(roleIncrement, children, args)
	wg.Wait()
	if perr != nil {
		e.T.Fatalf("parent increment: %v", perr)
	}
	total := k
	for i, o := range out {
		var r incrementResult
		if err := json.Unmarshal(o, &r); err != nil {
			e.T.Fatalf("child %d result %q: %v", i, o, err)
		}
		total += r.Done
		e.T.Logf("child %d: %d increments, %d ErrBusy retries", i, r.Done, r.Busy)
	}
	if total != (children+1)*k {
		e.T.Fatalf("children reported %d increments, want %d", total, (children+1)*k)
	}
	if got := e.counter(e.B, "run-counter"); got != int64(total) {
		e.T.Errorf("after %d increments (%s) from %d processes the counter is %d (lost updates)", total, incrementMode(expect), children+1, got)
	}
	if got := e.counter(e.Reopen(), "run-counter"); got != int64(total) {
		e.T.Errorf("after Reopen the counter is %d, want %d", got, total)
	}
}

// testWriteSkew is the on-call doctors check: two doctors are on call; each
// transaction reads both and goes off call only if the other is still on
// call. Serializable execution leaves at least one on call.
func testWriteSkew(e *env, instances bool) {
	bs := []backend.Backend{e.B, e.B}
	if instances {
		e.RequireMultiInstance()
		bs[1] = e.Open()
	}
	const rounds = 40
	var raced atomic.Int64
	for round := range rounds {
		docs := [2]string{fmt.Sprintf("doctor-a-%d", round), fmt.Sprintf("doctor-b-%d", round)}
		a, b := fullRun(docs[0]), fullRun(docs[1])
		a.Status, b.Status = backend.RunRunning, backend.RunRunning
		e.apply(e.B, ins(a, b))
		start := make(chan struct{})
		var wg sync.WaitGroup
		var changed [2]bool
		var errs [2]error
		for i := range 2 {
			wg.Go(func() {
				<-start
				for {
					var attempts int
					err := bs[i].Update(e.Ctx, func(tx backend.Tx) error {
						attempts++
						changed[i] = false
						f, err := tx.Load(e.Ctx, backend.Lookup{Runs: docs[:]})
						if err != nil {
							return err
						}
						me, other := f.Runs[docs[i]], f.Runs[docs[1-i]]
						if me.Status != backend.RunRunning || other.Status != backend.RunRunning {
							return nil
						}
						if round%2 == 1 {
							time.Sleep(time.Millisecond) // widen the window
						}
						me.Status = backend.RunPaused
						changed[i] = true
						return tx.Apply(e.Ctx, rep(me))
					})
					if attempts > 1 {
						raced.Add(1)
					}
					if errors.Is(err, backend.ErrBusy) && e.Ctx.Err() == nil {
						continue
					}
					errs[i] = err
					return
				}
			})
		}
		close(start)
		wg.Wait()
		for i, err := range errs {
			if err != nil {
				e.T.Fatalf("round %d, doctor %d: %v", round, i, err)
			}
		}
		f := e.load(e.B, backend.Lookup{Runs: docs[:]})
		if f.Runs[docs[0]].Status != backend.RunRunning && f.Runs[docs[1]].Status != backend.RunRunning {
			e.T.Fatalf("round %d: write skew: both transactions read both doctors on call and both went off call (committed changes: %v)", round, changed)
		}
	}
	e.T.Logf("%d rounds, %d transactions re-run by the adapter", rounds, raced.Load())
}

// raceInsert tries to insert an attempt with a shared identity (and, when
// sameKey, the same key); it reports whether this caller won.
func raceInsert(ctx context.Context, b backend.Backend, k backend.AttemptKey, identity string) (bool, error) {
	return raceInsertOnce(ctx, b, ins(fullAttempt(k, identity)), backend.Lookup{}, false)
}

func testInsertRace(e *env) {
	bs := []backend.Backend{e.B}
	if e.Caps.MultiInstance {
		bs = append(bs, e.Open(), e.Open())
	}
	const racers, rounds = 6, 20
	for round := range rounds {
		for _, sameKey := range []bool{true, false} {
			identity := fmt.Sprintf("identity-%d-%v", round, sameKey)
			start := make(chan struct{})
			var wg sync.WaitGroup
			var won atomic.Int64
			errs := make(chan error, racers)
			for i := range racers {
				act := "act"
				if !sameKey {
					act = fmt.Sprintf("act-%d", i)
				}
				k := atkey(akey(fmt.Sprintf("run-%d", round), "node", act), 1)
				b := bs[i%len(bs)]
				wg.Go(func() {
					<-start
					ok, err := raceInsert(e.Ctx, b, k, identity)
					if err != nil {
						errs <- err
					}
					if ok {
						won.Add(1)
					}
				})
			}
			close(start)
			wg.Wait()
			close(errs)
			for err := range errs {
				e.T.Fatalf("round %d: racing Insert: %v", round, err)
			}
			if n := won.Load(); n != 1 {
				e.T.Fatalf("round %d (same key %v): %d racing Inserts of one identity succeeded, want exactly 1", round, sameKey, n)
			}
			f := e.load(e.B, backend.Lookup{Identities: []string{identity}})
			if _, ok := f.Identities[identity]; !ok {
				e.T.Fatalf("round %d: the winning Insert is not visible", round)
			}
			n := scan(e, e.B, func(rtx backend.ReadTx) (int, error) {
				return rtx.CountAttempts(e.Ctx, backend.AttemptCountQuery{RunID: fmt.Sprintf("run-%d", round), Limit: 100})
			})
			if n != roundAttempts(sameKey) {
				e.T.Fatalf("round %d (same key %v): %d attempts in the run, want %d", round, sameKey, n, roundAttempts(sameKey))
			}
		}
	}
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// roundAttempts is how many attempts run-<round> holds after testInsertRace's
// same-key race (1) and then its distinct-key race (1 more).
func roundAttempts(sameKey bool) int {
	if sameKey {
		return 1
	}
	return 2
}

type insertRaceArg struct {
	Run, Act, Identity string
}

func insertRaceRole(ctx context.Context, b backend.Backend, arg []byte, wait func()) ([]byte, error) {
	var a insertRaceArg
	if err := json.Unmarshal(arg, &a); err != nil {
		return nil, err
	}
	if err := b.View(ctx, func(rtx backend.ReadTx) error { return nil }); err != nil {
		return nil, err
	}
	wait()
	won, err := raceInsert(ctx, b, atkey(akey(a.Run, "node", a.Act), 1), a.Identity)
	if err != nil {
		return nil, err
	}
	return json.Marshal(won)
}

func testInsertRaceProcesses(e *env) {
	e.RequireMultiProcess()
	const children = 3
	for round := range 3 {
		var args [][]byte
		for i := range children {
			act := "act"
			if round%2 == 1 {
				act = fmt.Sprintf("act-%d", i)
			}
			arg, _ := json.Marshal(insertRaceArg{Run: fmt.Sprintf("run-%d", round), Act: act, Identity: fmt.Sprintf("identity-%d", round)})
			args = append(args, arg)
		}
		won := 0
		for i, o := range e.RunChildren(roleInsertRace, children, args) {
			var w bool
			if err := json.Unmarshal(o, &w); err != nil {
				e.T.Fatalf("child %d result %q: %v", i, o, err)
			}
			won += boolInt(w)
		}
		if won != 1 {
			e.T.Fatalf("round %d: %d racing processes inserted identity-%d, want exactly 1", round, won, round)
		}
		n := scan(e, e.B, func(rtx backend.ReadTx) (int, error) {
			return rtx.CountAttempts(e.Ctx, backend.AttemptCountQuery{RunID: fmt.Sprintf("run-%d", round), Limit: 100})
		})
		if n != 1 {
			e.T.Fatalf("round %d: %d attempts stored, want 1", round, n)
		}
	}
}

func testDistinctInserts(e *env) {
	bs := []backend.Backend{e.B}
	if e.Caps.MultiInstance {
		bs = append(bs, e.Open())
	}
	const workers, k = 8, 15
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	start := make(chan struct{})
	for w := range workers {
		b := bs[w%len(bs)]
		wg.Go(func() {
			<-start
			for i := range k {
				ak := atkey(akey("run-d", fmt.Sprintf("node-%d", w), fmt.Sprintf("act-%d", i)), 1)
				at := fullAttempt(ak, fmt.Sprintf("identity-%d-%d", w, i))
				at.PreparedMS = int64(1000 + i*workers + w)
				for {
					err := b.Update(e.Ctx, func(tx backend.Tx) error {
						return tx.Apply(e.Ctx, ins(at, fullEvent(fmt.Sprintf("run-d-%d", w), int64(i+1))))
					})
					if errors.Is(err, backend.ErrBusy) && e.Ctx.Err() == nil {
						continue
					}
					if err != nil {
						errs <- err
						return
					}
					break
				}
			}
		})
	}
	close(start)
	wg.Wait()
	close(errs)
	for err := range errs {
		e.T.Fatalf("Insert: %v", err)
	}
	got := scan(e, e.B, func(rtx backend.ReadTx) ([]backend.Attempt, error) {
		return rtx.Attempts(e.Ctx, backend.AttemptQuery{RunID: "run-d", Limit: 1000})
	})
	if len(got) != workers*k {
		e.T.Fatalf("Attempts = %d rows, want %d", len(got), workers*k)
	}
	for i, a := range got {
		if a.PreparedMS != int64(1000+i) {
			e.T.Fatalf("Attempts[%d].PreparedMS = %d, want %d", i, a.PreparedMS, 1000+i)
		}
	}
	for w := range workers {
		evs := scan(e, e.B, func(rtx backend.ReadTx) ([]backend.Event, error) {
			return rtx.Events(e.Ctx, backend.EventQuery{RunID: fmt.Sprintf("run-d-%d", w), Limit: 1000})
		})
		if len(evs) != k {
			e.T.Errorf("run-d-%d: %d events, want %d", w, len(evs), k)
		}
	}
}

func testCrossInstanceVisibility(e *env) {
	e.RequireMultiInstance()
	other := e.Open()
	// Read through other first, so any cache it keeps is warm.
	if got := e.load(other, backend.Lookup{Runs: []string{"run-v"}}); len(got.Runs) != 0 {
		e.T.Fatalf("fresh store has run-v")
	}
	for i := range 20 {
		r := fullRun("run-v")
		r.AttemptCount = int64(i)
		if i == 0 {
			e.apply(e.B, ins(r))
		} else {
			e.apply(e.B, rep(r))
		}
		f := e.load(other, backend.Lookup{Runs: []string{"run-v"}})
		if got, ok := f.Runs["run-v"]; !ok || got.AttemptCount != int64(i) {
			e.T.Fatalf("write %d committed on one instance; the other instance then read %+v (present %v)", i, got.AttemptCount, ok)
		}
		// And the other way round.
		r.UpdatedMS = int64(5000 + i)
		e.apply(other, rep(r))
		f = e.load(e.B, backend.Lookup{Runs: []string{"run-v"}})
		if got := f.Runs["run-v"]; got.UpdatedMS != r.UpdatedMS {
			e.T.Fatalf("write %d committed on the second instance is not visible on the first (UpdatedMS %d, want %d)", i, got.UpdatedMS, r.UpdatedMS)
		}
	}
}

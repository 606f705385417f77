package postgres_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/wfstore/wfstore/internal/testkit/pgtest"
	"github.com/wfstore/wfstore/postgres"
	"github.com/wfstore/wfstore/workflow"
)

const (
	raceProcesses  = 4
	raceGoroutines = 4
	raceRuns       = 10
	racePerRun     = 50 // 500 activations
)

// raceArg is what the parent passes to each dispatcher process.
type raceArg struct {
	Process int    `json:"process"`
	Dir     string `json:"dir"` // barrier directory
}

// raceResult is what a dispatcher process reports on stdout.
type raceResult struct {
	Process  int            `json:"process"`
	Admitted []string       `json:"admitted"`
	Raced    int            `json:"raced"`
	Errors   []string       `json:"errors"`
	Stats    postgres.Stats `json:"stats"`
}

const raceResultPrefix = "RACE-RESULT "

// ledgerOwner plans every activation and, on Dispatch, records the call in a
// durable ledger table (outside any store transaction), as a real owner
// would record accepted work.
type ledgerOwner struct {
	pool    *pgxpool.Pool
	ledger  string
	process int
}

func (o *ledgerOwner) Plan(_ context.Context, a workflow.Activation) (*workflow.Plan, error) {
	return &workflow.Plan{SideEffect: workflow.Mutating, Intent: json.RawMessage(`{"node":` + strconv.Quote(a.Key.NodeID) + `}`)}, nil
}

func (o *ledgerOwner) Dispatch(ctx context.Context, p workflow.PreparedDispatch) (json.RawMessage, error) {
	_, err := o.pool.Exec(ctx, "INSERT INTO "+o.ledger+" (identity, process, calls) VALUES ($1, $2, 1) "+
		"ON CONFLICT (identity) DO UPDATE SET calls = "+o.ledger+".calls + 1", p.Identity, o.process)
	if err != nil {
		return nil, err
	}
	return json.RawMessage(fmt.Sprintf(`{"process":%d}`, o.process)), nil
}

func ledgerName(schema string) string { return pgx.Identifier{schema, "owner_ledger"}.Sanitize() }

func init() {
	childRoles["dispatch"] = dispatchChild
}

// dispatchChild is one OS process: its own pool, raceGoroutines
// dispatchers, released by the barrier, dispatching until nothing is left.
func dispatchChild(ctx context.Context, dsn, schema, argJSON string) error {
	var arg raceArg
	if err := json.Unmarshal([]byte(argJSON), &arg); err != nil {
		return err
	}
	b, err := postgres.Open(ctx, withMaxConns(dsn, raceGoroutines+1), postgres.WithSchema(schema))
	if err != nil {
		return err
	}
	defer b.Close()
	pool, err := pgxpool.New(ctx, withMaxConns(dsn, 2))
	if err != nil {
		return err
	}
	defer pool.Close()
	store := workflow.New(b)
	owner := &ledgerOwner{pool: pool, ledger: ledgerName(schema), process: arg.Process}

	// Barrier: say ready, wait for "go".
	if err := os.WriteFile(filepath.Join(arg.Dir, fmt.Sprintf("ready-%d", arg.Process)), nil, 0o644); err != nil {
		return err
	}
	for {
		if _, err := os.Stat(filepath.Join(arg.Dir, "go")); err == nil {
			break
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		time.Sleep(time.Millisecond)
	}

	res := raceResult{Process: arg.Process}
	var mu sync.Mutex
	var wg sync.WaitGroup
	for g := 0; g < raceGoroutines; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			idle := 0
			for idle < 2 && ctx.Err() == nil {
				sum, err := store.Dispatch(ctx, owner, workflow.DispatchOptions{Limit: 8}, time.Now())
				mu.Lock()
				for _, a := range sum.Admitted {
					res.Admitted = append(res.Admitted, a.Identity)
				}
				res.Raced += len(sum.Raced)
				if err != nil {
					res.Errors = append(res.Errors, err.Error())
				}
				for _, r := range sum.Rejected {
					res.Errors = append(res.Errors, fmt.Sprintf("rejected: %+v", r))
				}
				for _, k := range sum.Exhausted {
					res.Errors = append(res.Errors, fmt.Sprintf("exhausted: %+v", k))
				}
				for _, k := range sum.Unsupported {
					res.Errors = append(res.Errors, fmt.Sprintf("unsupported: %+v", k))
				}
				mu.Unlock()
				if err != nil {
					return
				}
				if len(sum.Admitted)+len(sum.Raced) == 0 {
					idle++
				} else {
					idle = 0
				}
			}
		}()
	}
	wg.Wait()
	res.Stats = b.StatsForTest()
	out, err := json.Marshal(res)
	if err != nil {
		return err
	}
	fmt.Println(raceResultPrefix + string(out))
	return nil
}

// Multi-process race: ≥4 OS processes × ≥4 dispatching goroutines, each
// process with its own pool, released together, all on the same 500
// activations. Every activation ends with exactly one attempt, the owner's
// durable ledger shows exactly one dispatch per admitted identity, every
// process admitted some, racing happened, and nobody saw an error.
func TestMultiProcessDispatchRace(t *testing.T) {
	t.Parallel()
	dsn, schema := pgtest.Schema(t)
	ctx := ctxT(t)
	b := openOn(t, dsn, schema)
	store := workflow.New(b)
	now := time.Now()
	var all []workflow.ActivationKey
	for r := 0; r < raceRuns; r++ {
		runID := fmt.Sprintf("run-%02d", r)
		_, err := store.CreateRun(ctx, workflow.NewRun{ID: runID, Limits: workflow.RunLimits{NodeExecutionCap: 100000, ConcurrencyCap: 100000}}, now)
		require.NoError(t, err)
		for a := 0; a < racePerRun; a++ {
			k := workflow.ActivationKey{RunID: runID, NodeID: fmt.Sprintf("node-%02d", a%5), ActivationID: fmt.Sprintf("act-%03d", a)}
			_, err := store.AddActivation(ctx, workflow.NewActivation{Key: k, Input: json.RawMessage(`{}`), Effect: workflow.Mutating}, now)
			require.NoError(t, err)
			all = append(all, k)
		}
	}
	_, err := pgtest.Admin(t).Exec(ctx, "CREATE TABLE "+ledgerName(schema)+
		" (identity text COLLATE \"C\" PRIMARY KEY, process int NOT NULL, calls int NOT NULL)")
	require.NoError(t, err)

	dir := t.TempDir()
	children := make([]*childProc, raceProcesses)
	for p := range children {
		arg, _ := json.Marshal(raceArg{Process: p, Dir: dir})
		children[p] = startChild(t, "dispatch", dsn, schema, string(arg))
	}
	// Release them together once all are ready.
	deadline := time.Now().Add(60 * time.Second)
	for p := 0; p < raceProcesses; p++ {
		for {
			if _, err := os.Stat(filepath.Join(dir, fmt.Sprintf("ready-%d", p))); err == nil {
				break
			}
			require.True(t, time.Now().Before(deadline), "child %d never became ready", p)
			time.Sleep(2 * time.Millisecond)
		}
	}
	require.NoError(t, os.WriteFile(filepath.Join(dir, "go"), nil, 0o644))

	var results []raceResult
	for p, c := range children {
		res, err := c.wait()
		require.NoError(t, err, "child %d: %s", p, c.stderr.String())
		results = append(results, res)
	}

	admittedBy := map[string]int{}
	raced := 0
	var total postgres.Stats
	for _, r := range results {
		require.Empty(t, r.Errors, "process %d saw errors", r.Process)
		require.NotEmpty(t, r.Admitted, "process %d admitted nothing", r.Process)
		raced += r.Raced
		for _, id := range r.Admitted {
			prev, dup := admittedBy[id]
			require.False(t, dup, "identity %s admitted by processes %d and %d", id, prev, r.Process)
			admittedBy[id] = r.Process
		}
		total.Updates += r.Stats.Updates
		total.Runs += r.Stats.Runs
		total.Serialization += r.Stats.Serialization
		total.Deadlock += r.Stats.Deadlock
		total.ConnLost += r.Stats.ConnLost
		total.Exhausted += r.Stats.Exhausted
		total.MaxRuns = max(total.MaxRuns, r.Stats.MaxRuns)
		t.Logf("process %d: admitted %d, raced %d, updates %d, 40001 re-runs %d, 40P01 re-runs %d",
			r.Process, len(r.Admitted), r.Raced, r.Stats.Updates, r.Stats.Serialization, r.Stats.Deadlock)
	}
	t.Logf("total: admitted %d, raced %d, updates %d, fn runs %d, 40001 re-runs %d, 40P01 re-runs %d, ErrBusy %d, most runs of one Update %d",
		len(admittedBy), raced, total.Updates, total.Runs, total.Serialization, total.Deadlock, total.Exhausted, total.MaxRuns)
	require.Positive(t, raced, "the dispatchers must actually have raced")
	require.Len(t, admittedBy, len(all), "every activation admitted once")

	// Exactly one attempt per activation, whose identity was admitted.
	r, err := pgtest.Admin(t).Query(ctx, "SELECT run_id, node_id, activation_id, count(*), min(identity) FROM "+
		pgx.Identifier{schema, "attempts"}.Sanitize()+" GROUP BY 1, 2, 3")
	require.NoError(t, err)
	rows, err := pgx.CollectRows(r, pgx.RowToStructByPos[struct {
		RunID, NodeID, ActivationID string
		N                           int64
		Identity                    string
	}])
	require.NoError(t, err)
	require.Len(t, rows, len(all))
	for _, row := range rows {
		require.Equal(t, int64(1), row.N, "activation %s/%s/%s", row.RunID, row.NodeID, row.ActivationID)
		require.Contains(t, admittedBy, row.Identity)
	}
	// The owner's ledger: one call per admitted identity, by the process
	// that admitted it.
	lr, err := pgtest.Admin(t).Query(ctx, "SELECT identity, process, calls FROM "+ledgerName(schema))
	require.NoError(t, err)
	ledger, err := pgx.CollectRows(lr, pgx.RowToStructByPos[struct {
		Identity string
		Process  int
		Calls    int
	}])
	require.NoError(t, err)
	require.Len(t, ledger, len(admittedBy))
	for _, l := range ledger {
		require.Equal(t, 1, l.Calls, "identity %s dispatched %d times", l.Identity, l.Calls)
		require.Equal(t, admittedBy[l.Identity], l.Process, "identity %s", l.Identity)
	}
	// And through the Store: every attempt is admitted.
	for _, k := range all {
		a, err := store.GetActivation(ctx, k)
		require.NoError(t, err)
		require.Equal(t, uint32(1), a.LastAttempt)
	}
}

// childProc is a running child process whose stdout carries its result.
type childProc struct {
	cmd    *exec.Cmd
	stdout *bufio.Scanner
	stderr *syncBuffer
}

func startChild(t testing.TB, role, dsn, schema, arg string) *childProc {
	t.Helper()
	cmd := childCmd(t, role, dsn, schema, arg)
	out, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	sc := bufio.NewScanner(out)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	return &childProc{cmd: cmd, stdout: sc, stderr: cmd.Stderr.(*syncBuffer)}
}

func (c *childProc) wait() (raceResult, error) {
	var res raceResult
	found := false
	for c.stdout.Scan() {
		line := c.stdout.Text()
		if rest, ok := strings.CutPrefix(line, raceResultPrefix); ok {
			if err := json.Unmarshal([]byte(rest), &res); err != nil {
				return res, err
			}
			found = true
		}
	}
	if err := c.cmd.Wait(); err != nil {
		return res, err
	}
	if !found {
		return res, errors.New("child printed no result")
	}
	return res, nil
}

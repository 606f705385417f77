package sqlite

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/wfstore/wfstore/backend"
	"github.com/wfstore/wfstore/internal/benchdata"
	"github.com/wfstore/wfstore/workflow"
)

// BenchmarkBatchProbe measures, in one process and interleaved rounds, what a
// batch admission on this adapter costs against what the same rows cost
// written by hand: the bare durable commit (BEGIN IMMEDIATE; INSERT;
// COMMIT on a file of its own), a hand-written probe writing exactly the
// rows a Store batch admission writes (per batch of 100, three
// transactions of multi-row statements on the store's writer connection:
// 100 attempts, 100 activations, 300 events, 200 attempt updates and 3 run
// updates), and the Store's own batch Dispatch over the same seeded file.
// WFSTORE_PROBE_SQL (statements separated by ";") runs on each fresh store
// before seeding, for trying a schema variant on both. It only measures
// (WFSTORE_PROBE=N admissions per round, 2000 when unset):
//
//	WFSTORE_PROBE=10000 go test -count=1 -run '^$' -bench BatchProbe -benchtime 1x ./sqlite/
//
// The ratios are reported as the benchmark's metrics; each of b.N
// iterations runs the three rounds again.
func BenchmarkBatchProbe(b *testing.B) {
	n, _ := strconv.Atoi(os.Getenv("WFSTORE_PROBE"))
	if n <= 0 {
		n = 2000
	}
	for range b.N {
		batchProbe(b, n)
	}
}

func batchProbe(t *testing.B, n int) {
	n = (n + benchdata.PerRun - 1) / benchdata.PerRun * benchdata.PerRun
	ctx := context.Background()
	rounds := 3
	// WFSTORE_PROBE_ONLY=probe or store runs only that one (for a profile).
	only := os.Getenv("WFSTORE_PROBE_ONLY")
	var bare, probe, store [2]time.Duration // wall, process CPU
	storeAllocs = [2]uint64{}
	timed := func(acc *[2]time.Duration, f func() [2]time.Duration) {
		d := f()
		acc[0] += d[0]
		acc[1] += d[1]
	}
	for r := 0; r < rounds; r++ {
		if only == "" {
			timed(&bare, func() [2]time.Duration { return probeBare(t, ctx, t.TempDir(), n) })
		}
		if only == "" || only == "probe" {
			timed(&probe, func() [2]time.Duration { return probeRound(t, ctx, t.TempDir(), n, false) })
		}
		if only == "" || only == "store" {
			timed(&store, func() [2]time.Duration { return probeRound(t, ctx, t.TempDir(), n, true) })
		}
	}
	rate := func(d [2]time.Duration) float64 { return float64(n*rounds) / d[0].Seconds() }
	cpu := func(d [2]time.Duration) float64 { return float64(d[1].Microseconds()) / float64(n*rounds) }
	t.Logf("bare commits/s %.0f", rate(bare))
	t.Logf("hand-written probe admissions/s %.0f (%.2f× bare), process CPU %.0f µs/admission", rate(probe), rate(probe)/rate(bare), cpu(probe))
	t.Logf("Store batch admissions/s %.0f (%.2f× bare, %.2f× probe), process CPU %.0f µs/admission",
		rate(store), rate(store)/rate(bare), rate(store)/rate(probe), cpu(store))
	if only == "" || only == "store" {
		t.Logf("Store batch heap allocations per admission: %.0f objects, %.0f bytes",
			float64(storeAllocs[0])/float64(n*rounds), float64(storeAllocs[1])/float64(n*rounds))
		t.ReportMetric(cpu(store), "store-cpu-µs/admission")
		t.ReportMetric(float64(storeAllocs[0])/float64(n*rounds), "store-allocs/admission")
	}
	if only == "" {
		t.ReportMetric(rate(probe)/rate(bare), "probe×bare")
		t.ReportMetric(rate(store)/rate(bare), "store×bare")
		t.ReportMetric(rate(store)/rate(probe), "store×probe")
	}
}

// allocs returns the heap allocations this process has made: objects and
// bytes.
func allocs() [2]uint64 {
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return [2]uint64{m.Mallocs, m.TotalAlloc}
}

// storeAllocs accumulates the heap allocations (objects, bytes) of the
// Store's rounds.
var storeAllocs [2]uint64

// processCPU is the user and system time this process has used.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// probeBare times n bare commits on a file of its own with the writer's
// pragmas.
func probeBare(t testing.TB, ctx context.Context, dir string, n int) [2]time.Duration {
	db, err := sql.Open("sqlite", fileURI(filepath.Join(dir, "bare.db"),
		pragmas(url.Values{}, "busy_timeout(5)", "synchronous(FULL)", "journal_mode(WAL)")))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	conn, err := db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := conn.ExecContext(ctx, `CREATE TABLE bare (id INTEGER PRIMARY KEY, v BLOB NOT NULL)`); err != nil {
		t.Fatal(err)
	}
	ins, err := conn.PrepareContext(ctx, `INSERT INTO bare (id, v) VALUES (?, ?)`)
	if err != nil {
		t.Fatal(err)
	}
	payload := make([]byte, 32)
	start, cpu := time.Now(), processCPU()
	for i := 0; i < n; i++ {
		mustExec(t, ctx, conn, "BEGIN IMMEDIATE")
		if _, err := ins.ExecContext(ctx, i, payload); err != nil {
			t.Fatal(err)
		}
		mustExec(t, ctx, conn, "COMMIT")
	}
	return [2]time.Duration{time.Since(start), processCPU() - cpu}
}

func mustExec(t testing.TB, ctx context.Context, conn *sql.Conn, q string, args ...any) sql.Result {
	t.Helper()
	res, err := conn.ExecContext(ctx, q, args...)
	if err != nil {
		t.Fatalf("%.80s: %v", q, err)
	}
	return res
}

// probeRound seeds n pending activations into a fresh store and times
// admitting all of them in batches of 100: by the Store (store) or by the
// hand-written probe.
func probeRound(t testing.TB, ctx context.Context, dir string, n int, store bool) [2]time.Duration {
	b, err := Open(ctx, filepath.Join(dir, "store.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	for _, q := range strings.Split(os.Getenv("WFSTORE_PROBE_SQL"), ";") {
		if strings.TrimSpace(q) != "" {
			if _, err := b.w.conn.ExecContext(ctx, q); err != nil {
				t.Fatal(q, err)
			}
		}
	}
	s := workflow.New(b)
	now := time.Now()
	keys, err := benchdata.SeedRuns(ctx, s, b, "probe", n, benchdata.PerRun, nil, now)
	if err != nil {
		t.Fatal(err)
	}
	start, cpu, mem := time.Now(), processCPU(), allocs()
	if store {
		defer func() {
			m := allocs()
			storeAllocs[0] += m[0] - mem[0]
			storeAllocs[1] += m[1] - mem[1]
		}()
		if err := benchdata.AdmitBatches(ctx, s, n, 100); err != nil {
			t.Fatal(err)
		}
		return [2]time.Duration{time.Since(start), processCPU() - cpu}
	}
	if err := b.lockWriter(ctx); err != nil {
		t.Fatal(err)
	}
	defer b.unlockWriter()
	p := &prober{t: t, ctx: ctx, conn: b.w.conn}
	for i := 0; i < len(keys); i += 100 {
		p.batch(keys[i:min(i+100, len(keys))], time.Now().UnixMilli())
	}
	d := [2]time.Duration{time.Since(start), processCPU() - cpu}
	var got int
	if err := b.w.conn.QueryRowContext(ctx, `SELECT count(*) FROM attempts WHERE status = 'admitted'`).Scan(&got); err != nil || got != n {
		t.Fatalf("probe admitted %d of %d (%v)", got, n, err)
	}
	return d
}

type prober struct {
	t     testing.TB
	ctx   context.Context
	conn  *sql.Conn
	stmts map[string]*sql.Stmt
}

func (p *prober) exec(q string, rows int, args ...any) {
	p.t.Helper()
	if p.stmts == nil {
		p.stmts = map[string]*sql.Stmt{}
	}
	s, ok := p.stmts[q]
	if !ok {
		var err error
		if s, err = p.conn.PrepareContext(p.ctx, q); err != nil {
			p.t.Fatalf("%.80s: %v", q, err)
		}
		p.stmts[q] = s
	}
	res, err := s.ExecContext(p.ctx, args...)
	if err != nil {
		p.t.Fatalf("%.80s: %v", q, err)
	}
	if n, _ := res.RowsAffected(); n != int64(rows) {
		p.t.Fatalf("%.80s: %d rows, want %d", q, n, rows)
	}
}

func tuples(rows, cols int) string {
	one := "(" + strings.TrimSuffix(strings.Repeat("?, ", cols), ", ") + ")"
	return strings.TrimSuffix(strings.Repeat(one+", ", rows), ", ")
}

// batch admits keys (pending activations of one run) the way a Store batch
// does, row for row, with none of its checks.
func (p *prober) batch(keys []workflow.ActivationKey, at int64) {
	n := len(keys)
	runID := keys[0].RunID
	var lastSeq, attempts, active, tree int64
	row := p.conn.QueryRowContext(p.ctx, `SELECT last_event_seq, attempt_count, active_count, tree_attempt_count FROM runs WHERE id = ?`, runID)
	if err := row.Scan(&lastSeq, &attempts, &active, &tree); err != nil {
		p.t.Fatal(err)
	}
	ids := make([]string, n)
	for i, k := range keys {
		ids[i] = workflow.DispatchIdentity(k.RunID, k.NodeID, k.ActivationID, 1)
	}
	events := func(typ string, payload func(i int) string) []any {
		args := make([]any, 0, 5*n)
		for i := range keys {
			lastSeq++
			args = append(args, runID, lastSeq, typ, payload(i), at)
		}
		return args
	}
	run := func() {
		p.exec(`UPDATE runs SET attempt_count = ?, active_count = ?, tree_attempt_count = ?, last_event_seq = ?, updated_ms = ? WHERE id = ?`,
			1, attempts, active, tree, lastSeq, at, runID)
	}

	// intent: the activations (read, then running), the attempts, the events.
	mustExec(p.t, p.ctx, p.conn, "BEGIN IMMEDIATE")
	rows, err := p.conn.QueryContext(p.ctx, `SELECT `+activationsT.list()+` FROM activations WHERE run_id = ? AND admissible = 1 ORDER BY node_id, activation_id LIMIT ?`, runID, n)
	if err != nil {
		p.t.Fatal(err)
	}
	got := 0
	for rows.Next() {
		if _, err := scanActivation(rows); err != nil {
			p.t.Fatal(err)
		}
		got++
	}
	if rows.Close(); got != n {
		p.t.Fatalf("read %d activations, want %d", got, n)
	}
	checksum := workflow.Checksum(benchdata.Intent)
	att := make([]any, 0, 16*n)
	act := make([]any, 0, 7*n)
	for i, k := range keys {
		att = append(att, k.RunID, k.NodeID, k.ActivationID, 1, ids[i], string(backend.AttemptPrepared), string(backend.ReadOnly), string(benchdata.Intent),
			checksum, nil, string(backend.HandoffPending), nil, at, 0, 0, "")
		act = append(act, k.RunID, k.NodeID, k.ActivationID, string(backend.ActivationRunning), 0, 1, at)
	}
	p.exec(`INSERT INTO attempts (`+attemptsT.list()+`) VALUES `+tuples(n, 16)+` ON CONFLICT DO NOTHING`, n, att...)
	p.exec(`UPDATE activations SET status = v.column4, admissible = v.column5, last_attempt = v.column6, updated_ms = v.column7 FROM (VALUES `+
		tuples(n, 7)+`) AS v WHERE activations.run_id = v.column1 AND activations.node_id = v.column2 AND activations.activation_id = v.column3`, n, act...)
	attempts += int64(n)
	active += int64(n)
	tree += int64(n)
	p.exec(`INSERT INTO events (run_id, seq, type, payload, created_ms) VALUES `+tuples(n, 5)+` ON CONFLICT DO NOTHING`, n,
		events("attempt_prepared", func(i int) string {
			k := keys[i]
			return fmt.Sprintf(`{"activation_id":%q,"attempt":1,"intent":%s,"node_id":%q,"prepared_at_ms":%d,"run_id":%q,"side_effect":"read_only"}`,
				k.ActivationID, benchdata.Intent, k.NodeID, at, k.RunID)
		})...)
	run()
	mustExec(p.t, p.ctx, p.conn, "COMMIT")

	// handoff: the attempts recorded with a fresh token, the events.
	mustExec(p.t, p.ctx, p.conn, "BEGIN IMMEDIATE")
	upd := make([]any, 0, 6*n)
	for _, k := range keys {
		var tok [16]byte
		rand.Read(tok[:])
		upd = append(upd, k.RunID, k.NodeID, k.ActivationID, 1, string(backend.HandoffRecorded), hex.EncodeToString(tok[:]))
	}
	where := ` WHERE attempts.run_id = v.column1 AND attempts.node_id = v.column2 AND attempts.activation_id = v.column3 AND attempts.attempt = v.column4`
	p.exec(`UPDATE attempts SET handoff = v.column5, handoff_token = v.column6 FROM (VALUES `+tuples(n, 6)+`) AS v`+where, n, upd...)
	p.exec(`INSERT INTO events (run_id, seq, type, payload, created_ms) VALUES `+tuples(n, 5)+` ON CONFLICT DO NOTHING`, n,
		events("dispatch_handed_off", func(i int) string {
			k := keys[i]
			return fmt.Sprintf(`{"activation_id":%q,"attempt":1,"dispatch_identity":%q,"node_id":%q,"run_id":%q}`, k.ActivationID, ids[i], k.NodeID, k.RunID)
		})...)
	run()
	mustExec(p.t, p.ctx, p.conn, "COMMIT")

	// receipt: the attempts admitted with the receipt, the events.
	mustExec(p.t, p.ctx, p.conn, "BEGIN IMMEDIATE")
	upd = upd[:0]
	for _, k := range keys {
		upd = append(upd, k.RunID, k.NodeID, k.ActivationID, 1, string(backend.AttemptAdmitted), string(benchdata.Receipt), at)
	}
	p.exec(`UPDATE attempts SET status = v.column5, receipt = v.column6, admitted_ms = v.column7 FROM (VALUES `+tuples(n, 7)+`) AS v`+where, n, upd...)
	active -= int64(n)
	p.exec(`INSERT INTO events (run_id, seq, type, payload, created_ms) VALUES `+tuples(n, 5)+` ON CONFLICT DO NOTHING`, n,
		events("attempt_admitted", func(i int) string {
			k := keys[i]
			return fmt.Sprintf(`{"activation_id":%q,"admitted_at_ms":%d,"attempt":1,"dispatch_identity":%q,"node_id":%q,"receipt":%s,"run_id":%q}`,
				k.ActivationID, at, ids[i], k.NodeID, benchdata.Receipt, k.RunID)
		})...)
	run()
	mustExec(p.t, p.ctx, p.conn, "COMMIT")
}

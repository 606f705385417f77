package sqlite

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"fmt"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/wfstore/wfstore/internal/benchdata"
	"github.com/wfstore/wfstore/workflow"
	msqlite "modernc.org/sqlite"
)

// countingDriver wraps this adapter's driver and counts the statements
// each connection runs (Exec and Query, prepared or not) by their text,
// so that a test can pin what one operation costs in statements.
type countingDriver struct {
	mu   sync.Mutex
	runs map[string]int
}

var counting = &countingDriver{runs: map[string]int{}}

func init() { sql.Register("sqlite-counting", counting) }

func (d *countingDriver) count(q string) {
	d.mu.Lock()
	d.runs[q]++
	d.mu.Unlock()
}

// take returns the counts since the last take and resets them.
func (d *countingDriver) take() map[string]int {
	d.mu.Lock()
	defer d.mu.Unlock()
	out := d.runs
	d.runs = map[string]int{}
	return out
}

func (d *countingDriver) Open(name string) (driver.Conn, error) {
	c, err := (&msqlite.Driver{}).Open(name)
	if err != nil {
		return nil, err
	}
	return &countingConn{c: c, d: d}, nil
}

// wrappedConn is what the driver's connections implement.
type wrappedConn interface {
	driver.Conn
	driver.ConnPrepareContext
	driver.ExecerContext
	driver.QueryerContext
	driver.ConnBeginTx
	driver.SessionResetter
	driver.Validator
}

type countingConn struct {
	c driver.Conn
	d *countingDriver
}

func (c *countingConn) w() wrappedConn { return c.c.(wrappedConn) }
func (c *countingConn) Prepare(q string) (driver.Stmt, error) {
	return c.PrepareContext(context.Background(), q)
}
func (c *countingConn) Close() error { return c.c.Close() }
func (c *countingConn) Begin() (driver.Tx, error) {
	return c.BeginTx(context.Background(), driver.TxOptions{})
}
func (c *countingConn) BeginTx(ctx context.Context, o driver.TxOptions) (driver.Tx, error) {
	return c.w().BeginTx(ctx, o)
}
func (c *countingConn) ResetSession(ctx context.Context) error { return c.w().ResetSession(ctx) }
func (c *countingConn) IsValid() bool                          { return c.w().IsValid() }

func (c *countingConn) PrepareContext(ctx context.Context, q string) (driver.Stmt, error) {
	s, err := c.w().PrepareContext(ctx, q)
	if err != nil {
		return nil, err
	}
	return &countingStmt{s: s, q: q, d: c.d}, nil
}

func (c *countingConn) ExecContext(ctx context.Context, q string, args []driver.NamedValue) (driver.Result, error) {
	c.d.count(q)
	return c.w().ExecContext(ctx, q, args)
}

func (c *countingConn) QueryContext(ctx context.Context, q string, args []driver.NamedValue) (driver.Rows, error) {
	c.d.count(q)
	return c.w().QueryContext(ctx, q, args)
}

type countingStmt struct {
	s driver.Stmt
	q string
	d *countingDriver
}

type wrappedStmt interface {
	driver.Stmt
	driver.StmtExecContext
	driver.StmtQueryContext
}

func (s *countingStmt) Close() error  { return s.s.Close() }
func (s *countingStmt) NumInput() int { return s.s.NumInput() }

//lint:ignore SA1019 driver.Stmt requires them; database/sql calls the Context forms.
func (s *countingStmt) Exec(args []driver.Value) (driver.Result, error) { return s.s.Exec(args) }

//lint:ignore SA1019 driver.Stmt requires them; database/sql calls the Context forms.
func (s *countingStmt) Query(args []driver.Value) (driver.Rows, error) { return s.s.Query(args) }

func (s *countingStmt) ExecContext(ctx context.Context, args []driver.NamedValue) (driver.Result, error) {
	s.d.count(s.q)
	return s.s.(wrappedStmt).ExecContext(ctx, args)
}

func (s *countingStmt) QueryContext(ctx context.Context, args []driver.NamedValue) (driver.Rows, error) {
	s.d.count(s.q)
	return s.s.(wrappedStmt).QueryContext(ctx, args)
}

// batchStatements seeds one run of benchdata.PerRun pending activations on
// a store opened through countingDriver, admits them in one batch of 100
// and returns the statements the admission ran, by text.
func batchStatements(t *testing.T) map[string]int {
	t.Helper()
	ctx := context.Background()
	db, err := sql.Open("sqlite-counting", fileURI(filepath.Join(t.TempDir(), "count.db"), pragmas(nil)))
	require.NoError(t, err)
	t.Cleanup(func() { _ = db.Close() })
	b, err := OpenDB(ctx, db, WithRelaxedDurability())
	require.NoError(t, err)
	t.Cleanup(func() { _ = b.Close() })
	s := workflow.New(b)
	_, err = benchdata.SeedRuns(ctx, s, b, "count", benchdata.PerRun, benchdata.PerRun, nil, time.Now())
	require.NoError(t, err)
	counting.take()
	require.NoError(t, benchdata.AdmitBatches(ctx, s, benchdata.PerRun, 100))
	return counting.take()
}

func describeCounts(runs map[string]int) string {
	var lines []string
	for q, n := range runs {
		if len(q) > 100 {
			q = q[:100] + "..."
		}
		lines = append(lines, fmt.Sprintf("    %s ×%d", q, n))
	}
	sort.Strings(lines)
	return strings.Join(lines, "\n")
}

// A batch admission of 100 runs a bounded number of statements, however
// the records are written: its three transactions each write a slice of
// records in a few many-row statements (64, 32 and 4 rows), read the
// records it needs in a few many-row SELECTs, and never one statement per
// record. The count (39 for 100) includes BEGIN, COMMIT, the discovery
// scan and the writer's data_version check of each transaction.
func TestBatchAdmissionStatements(t *testing.T) {
	runs := batchStatements(t)
	total := 0
	for _, n := range runs {
		total += n
	}
	t.Logf("%d statements:\n%s", total, describeCounts(runs))
	require.LessOrEqual(t, total, 39, "statements per batch admission of 100:\n%s", describeCounts(runs))
}

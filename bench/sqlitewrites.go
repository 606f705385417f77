package bench

import (
	"net/url"
	"path/filepath"
	"sync"
	"sync/atomic"

	msqlite "modernc.org/sqlite"
)

// SQLite rows written: every connection the driver opens on a file
// registered here gets a preupdate hook, called by SQLite before each row
// it inserts, updates or deletes in a table (the same rows PostgreSQL's
// n_tup_ins + n_tup_upd + n_tup_del count, triggers' writes included), and
// commit and rollback hooks: a connection's rows are added to the file's
// count when their transaction commits and dropped when it rolls back
// (unlike PostgreSQL's statistics, which count rolled-back rows too). The
// driver's connection hook is process-wide; files not registered are left
// alone.
var (
	sqliteHookOnce sync.Once
	sqliteCounts   sync.Map // cleaned absolute path → *atomic.Int64
)

// countSQLiteRows starts counting the rows committed to the SQLite file at
// path by connections opened from now on, and returns the counter and a
// function that stops counting (for connections opened later).
func countSQLiteRows(path string) (*atomic.Int64, func(), error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, nil, err
	}
	sqliteHookOnce.Do(func() { msqlite.RegisterConnectionHook(hookSQLiteConn) })
	c := new(atomic.Int64)
	sqliteCounts.Store(abs, c)
	return c, func() { sqliteCounts.CompareAndDelete(abs, c) }, nil
}

// hookSQLiteConn is the driver's connection hook.
func hookSQLiteConn(conn msqlite.ExecQuerierContext, dsn string) error {
	u, err := url.Parse(dsn)
	if err != nil {
		return nil
	}
	v, ok := sqliteCounts.Load(filepath.Clean(filepath.FromSlash(u.Path)))
	if !ok {
		return nil
	}
	h, ok := conn.(msqlite.HookRegisterer)
	if !ok {
		return nil
	}
	count := v.(*atomic.Int64)
	var pending atomic.Int64 // this connection's open transaction
	h.RegisterPreUpdateHook(func(msqlite.SQLitePreUpdateData) { pending.Add(1) })
	h.RegisterCommitHook(func() int32 { count.Add(pending.Swap(0)); return 0 })
	h.RegisterRollbackHook(func() { pending.Store(0) })
	return nil
}

// Package pgscratch records, in a comment on each scratch schema a test
// or `wfstore conform` creates, the process that created it, and reaps
// the scratch schemas whose process is gone: those a killed or timed-out
// binary left behind, since its cleanup never ran.
//
// A process is named by its pid, its start time (so a reused pid is
// another process), the kernel's boot id and its pid namespace (so only
// a process that can see the creator's /proc entry judges it) and the
// host name. Reap drops a schema only when its comment is ours and this
// process proves its creator gone: same boot id and pid namespace, and no
// process with that pid and start time. Schemas of live processes, of
// other hosts, containers or boots, and schemas without our comment are
// never touched.
package pgscratch

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// commentTag begins every comment this package writes.
const commentTag = "wfstore-test"

// Process names one process across pid reuse, reboots and containers.
type Process struct {
	PID   int
	Start uint64 // start time, clock ticks after boot (/proc/<pid>/stat)
	Boot  string // the kernel's boot id
	PIDNS string // the pid namespace, as /proc/self/ns/pid names it
	Host  string
}

// Self returns this process. It fails where /proc does not tell (not
// Linux); nothing is then recorded or reaped.
func Self() (Process, error) { return ProcessOf(os.Getpid()) }

// ProcessOf returns the live process pid, seen from this process's pid
// namespace.
func ProcessOf(pid int) (Process, error) {
	start, err := startTime(pid)
	if err != nil {
		return Process{}, err
	}
	boot, err := os.ReadFile("/proc/sys/kernel/random/boot_id")
	if err != nil {
		return Process{}, err
	}
	ns, err := os.Readlink("/proc/self/ns/pid")
	if err != nil {
		return Process{}, err
	}
	host, err := os.Hostname()
	if err != nil {
		return Process{}, err
	}
	return Process{PID: pid, Start: start, Boot: strings.TrimSpace(string(boot)), PIDNS: ns, Host: clean(host)}, nil
}

// startTime reads field 22 of /proc/<pid>/stat, after the command name
// (which may hold spaces and parentheses).
func startTime(pid int) (uint64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	i := strings.LastIndexByte(string(b), ')')
	if i < 0 {
		return 0, fmt.Errorf("pgscratch: /proc/%d/stat: no command name", pid)
	}
	f := strings.Fields(string(b[i+1:])) // from field 3 (state) on
	if len(f) < 20 {
		return 0, fmt.Errorf("pgscratch: /proc/%d/stat: %d fields", pid, len(f)+2)
	}
	return strconv.ParseUint(f[19], 10, 64)
}

// ExitedProcess starts a short-lived process, records it and waits for
// its end: a process that ran on this host and is gone, for tests.
func ExitedProcess() (Process, error) {
	cmd := exec.Command("sleep", "60")
	if err := cmd.Start(); err != nil {
		return Process{}, err
	}
	p, err := ProcessOf(cmd.Process.Pid)
	_ = cmd.Process.Kill()
	_ = cmd.Wait()
	return p, err
}

// clean keeps a host name to the characters a comment field may hold.
func clean(s string) string {
	return strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '.' || r == '-' || r == '_' {
			return r
		}
		return '_'
	}, s)
}

// Comment returns the schema comment naming p.
func (p Process) Comment() string {
	return fmt.Sprintf("%s pid=%d start=%d boot=%s pidns=%s host=%s", commentTag, p.PID, p.Start, p.Boot, p.PIDNS, p.Host)
}

// ParseComment returns the process a comment Comment wrote names; ok is
// false for any other comment.
func ParseComment(c string) (p Process, ok bool) {
	f := strings.Fields(c)
	if len(f) != 6 || f[0] != commentTag {
		return Process{}, false
	}
	kv := map[string]string{}
	for _, s := range f[1:] {
		k, v, found := strings.Cut(s, "=")
		if !found || v == "" {
			return Process{}, false
		}
		kv[k] = v
	}
	pid, err1 := strconv.Atoi(kv["pid"])
	start, err2 := strconv.ParseUint(kv["start"], 10, 64)
	if errors.Join(err1, err2) != nil || pid <= 0 || kv["boot"] == "" || kv["pidns"] == "" || kv["host"] == "" {
		return Process{}, false
	}
	return Process{PID: pid, Start: start, Boot: kv["boot"], PIDNS: kv["pidns"], Host: kv["host"]}, true
}

// Gone reports whether this process proves p gone: p ran on this host,
// kernel boot and pid namespace, and no process with its pid and start
// time runs now. When this process cannot tell, p is not gone.
func (p Process) Gone() bool {
	self, err := Self()
	if err != nil || p.Host != self.Host || p.Boot != self.Boot || p.PIDNS != self.PIDNS {
		return false
	}
	start, err := startTime(p.PID)
	if errors.Is(err, os.ErrNotExist) {
		return true
	}
	return err == nil && start != p.Start
}

// Literal quotes s as an SQL string literal (standard_conforming_strings,
// the default since PostgreSQL 9.1).
func Literal(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }

// DB is what Create and Reap need of a connection or a pool.
type DB interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	Begin(ctx context.Context) (pgx.Tx, error)
}

// Create creates schema and, in the same transaction, records this
// process in its comment (when Self can tell; otherwise the schema has no
// comment and is never reaped).
func Create(ctx context.Context, db DB, schema string) error {
	tx, err := db.Begin(ctx)
	if err != nil {
		return err
	}
	defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }()
	q := pgx.Identifier{schema}.Sanitize()
	if _, err := tx.Exec(ctx, "CREATE SCHEMA "+q); err != nil {
		return err
	}
	if self, err := Self(); err == nil {
		if _, err := tx.Exec(ctx, "COMMENT ON SCHEMA "+q+" IS "+Literal(self.Comment())); err != nil {
			return err
		}
	}
	return tx.Commit(ctx)
}

// Reap drops every schema whose name begins with prefix, whose comment is
// one Create wrote, and whose process is Gone; it returns those it
// dropped. A schema it cannot drop (another reaper dropped it first, say)
// is reported in the error and the others are still tried.
func Reap(ctx context.Context, db DB, prefix string) (dropped []string, err error) {
	if prefix == "" {
		return nil, errors.New("pgscratch: reap needs a prefix")
	}
	rows, err := db.Query(ctx, `SELECT nspname, coalesce(obj_description(oid, 'pg_namespace'), '')
		FROM pg_namespace WHERE left(nspname, length($1)) = $1 ORDER BY nspname`, prefix)
	if err != nil {
		return nil, err
	}
	type schema struct{ name, comment string }
	all, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (s schema, err error) {
		return s, r.Scan(&s.name, &s.comment)
	})
	if err != nil {
		return nil, err
	}
	var errs []error
	for _, s := range all {
		p, ok := ParseComment(s.comment)
		if !ok || !p.Gone() {
			continue
		}
		if _, err := db.Exec(ctx, "DROP SCHEMA IF EXISTS "+pgx.Identifier{s.name}.Sanitize()+" CASCADE"); err != nil {
			errs = append(errs, fmt.Errorf("pgscratch: drop %s: %w", s.name, err))
			continue
		}
		dropped = append(dropped, s.name)
	}
	return dropped, errors.Join(errs...)
}

package main

import (
	"context"
	"database/sql"
	"flag"
	"fmt"
	"io"
	"runtime"
	"runtime/debug"
	"strings"

	"github.com/wfstore/wfstore/etcd"
	"github.com/wfstore/wfstore/postgres"
	"github.com/wfstore/wfstore/sqlite"
)

// driverModules are the modules each adapter is built on.
var driverModules = []struct{ adapter, module, note string }{
	{"sqlite", "modernc.org/sqlite", fmt.Sprintf("store schema %d", sqlite.SchemaVersion)},
	{"postgres", "github.com/jackc/pgx/v5", fmt.Sprintf("store schema %d", postgres.SchemaVersion)},
	{"bolt", "go.etcd.io/bbolt", ""},
	{"etcd", "go.etcd.io/etcd/client/v3", fmt.Sprintf("store schema %d", etcd.SchemaVersion)},
}

// version prints the wfstore module's version (and VCS revision when the
// build recorded one), the Go toolchain and platform, and each adapter's
// driver module version, from the binary's build information.
func version(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("wfstore version", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintln(stderr, "Usage: wfstore version\n\nPrints the wfstore module version, the Go version and the adapters' driver versions.")
	}
	if ok, err := parseFlags(fs, args, stderr); !ok {
		return err
	}
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return fmt.Errorf("this binary carries no build information")
	}
	v := moduleVersion()
	var rev, modified, when string
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			modified = s.Value
		case "vcs.time":
			when = s.Value
		}
	}
	line := fmt.Sprintf("wfstore %s %s", bi.Main.Path, v)
	if rev != "" {
		line += " (revision " + rev
		if modified == "true" {
			line += ", modified"
		}
		if when != "" {
			line += ", " + when
		}
		line += ")"
	}
	fmt.Fprintln(stdout, line)
	fmt.Fprintf(stdout, "go       %s %s/%s\n", runtime.Version(), runtime.GOOS, runtime.GOARCH)
	deps := map[string]string{}
	for _, d := range bi.Deps {
		m := d
		if d.Replace != nil {
			m = d.Replace
		}
		deps[d.Path] = m.Version
	}
	for _, d := range driverModules {
		mv := deps[d.module]
		if mv == "" {
			mv = "(not in build information)"
		}
		notes := []string{}
		if d.adapter == "sqlite" {
			if ev := sqliteEngine(ctx); ev != "" {
				notes = append(notes, "SQLite "+ev)
			}
		}
		if d.note != "" {
			notes = append(notes, d.note)
		}
		extra := ""
		if len(notes) > 0 {
			extra = " (" + strings.Join(notes, ", ") + ")"
		}
		fmt.Fprintf(stdout, "%-9s%s %s%s\n", d.adapter, d.module, mv, extra)
	}
	return nil
}

// sqliteEngine returns the version of the SQLite engine compiled into the
// binary, asked of an in-memory database ("" if that fails).
func sqliteEngine(ctx context.Context) string {
	db, err := sql.Open("sqlite", ":memory:")
	if err != nil {
		return ""
	}
	defer db.Close()
	var v string
	if err := db.QueryRowContext(ctx, "SELECT sqlite_version()").Scan(&v); err != nil {
		return ""
	}
	return v
}

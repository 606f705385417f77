package main

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

// A usage error exits 2 and names the valid values; a zero cut-off says
// what is wrong with it.
func TestUsageErrorsExit2AndListTheValidValues(t *testing.T) {
	t.Parallel()
	db := filepath.Join(t.TempDir(), "x.db")
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"verify", "--backend", "sqlit", "--db", db}, `wfstore verify: unknown --backend "sqlit" (valid values: sqlite, postgres, bolt or etcd) (see "wfstore verify -help")`},
		{[]string{"inspect", "runs", "--backend", "sqlit", "--db", db}, `unknown --backend "sqlit" (valid values: sqlite, postgres, bolt or etcd)`},
		{[]string{"migrate", "up", "--backend", "sqlit", "--db", db}, `unknown --backend "sqlit" (valid values: sqlite, postgres, bolt or etcd)`},
		{[]string{"backup", "--backend", "sqlit", "--db", db, "--to", db + ".bak"}, `unknown --backend "sqlit" (valid values: sqlite, postgres, bolt or etcd)`},
		{[]string{"prune", "--backend", "sqlit", "--db", db, "--run", "r"}, `unknown --backend "sqlit" (valid values: sqlite, postgres, bolt or etcd)`},
		{[]string{"conform", "--backend", "sqlit"}, `unknown --backend "sqlit" (valid values: sqlite, postgres, bolt or etcd)`},
		{[]string{"verify", "--backend", "postgres"}, "--backend postgres needs --dsn"},
		{[]string{"export", "--backend", "etcd"}, "--backend etcd needs --endpoints URL[,URL...]"},
		{[]string{"import", "--backend", "etcd", "--endpoints", "http://127.0.0.1:1", "--db", db}, "--db is for sqlite or bolt, not etcd"},
		{[]string{"console", "--db", db, "--prefix", "p/"}, "--endpoints, --prefix and --max-txn-ops are for --backend etcd, not sqlite"},
		{[]string{"verify", "--backend", "etcd", "--endpoints", "http://127.0.0.1:1", "--max-txn-ops", "0"}, "--max-txn-ops must be at least 1, not 0"},
		{[]string{"inspect", "runs", "--db", db, "--status", "done"}, `unknown --status "done" (valid values: running, paused, completed, failed, cancelled, repair_required)`},
		{[]string{"prune", "--db", db, "--all-finished", "--finished-before", "0001-01-01T00:00:00Z"},
			"--finished-before 0001-01-01T00:00:00Z is the zero time, before any run can have finished: give a cut-off after 1970-01-01T00:00:00Z"},
	} {
		code, _, stderr := runInProcess(t, time.Minute, tc.args...)
		assert.Equal(t, 2, code, "%v: %s", tc.args, stderr)
		assert.Contains(t, stderr, tc.want, "%v", tc.args)
	}
}

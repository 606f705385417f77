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
		{[]string{"verify", "--backend", "sqlit", "--db", db}, `wfstore verify: unknown --backend "sqlit" (valid values: sqlite, postgres or bolt) (see "wfstore verify -help")`},
		{[]string{"inspect", "runs", "--backend", "sqlit", "--db", db}, `unknown --backend "sqlit" (valid values: sqlite, postgres or bolt)`},
		{[]string{"migrate", "up", "--backend", "sqlit", "--db", db}, `unknown --backend "sqlit" (valid values: sqlite, postgres or bolt)`},
		{[]string{"backup", "--backend", "sqlit", "--db", db, "--to", db + ".bak"}, `unknown --backend "sqlit" (valid values: sqlite, postgres or bolt)`},
		{[]string{"prune", "--backend", "sqlit", "--db", db, "--run", "r"}, `unknown --backend "sqlit" (valid values: sqlite, postgres or bolt)`},
		{[]string{"conform", "--backend", "sqlit"}, `unknown --backend "sqlit" (valid values: sqlite, postgres or bolt)`},
		{[]string{"verify", "--backend", "postgres"}, "--backend postgres needs --dsn"},
		{[]string{"inspect", "runs", "--db", db, "--status", "done"}, `unknown --status "done" (valid values: running, paused, completed, failed, cancelled, repair_required)`},
		{[]string{"prune", "--db", db, "--all-finished", "--finished-before", "0001-01-01T00:00:00Z"},
			"--finished-before 0001-01-01T00:00:00Z is the zero time, before any run can have finished: give a cut-off after 1970-01-01T00:00:00Z"},
	} {
		code, _, stderr := runInProcess(t, time.Minute, tc.args...)
		assert.Equal(t, 2, code, "%v: %s", tc.args, stderr)
		assert.Contains(t, stderr, tc.want, "%v", tc.args)
	}
}

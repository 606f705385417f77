package main

import (
	"bytes"
	"context"
	"io"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A command stopped by SIGTERM says what it left, never only
// "interrupted". The commands run in this process with a context already
// cancelled by the signal, as run does when one arrives.
func TestInterruptedCommandsSayWhatIsLeft(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	store := filepath.Join(dir, "s.db")
	code, _, stderr := runInProcess(t, time.Minute, "migrate", "up", "--db", store)
	require.Equal(t, 0, code, stderr)

	type command func(ctx context.Context, args []string, stdout, stderr io.Writer) error
	for _, tc := range []struct {
		cmd  string
		run  command
		args []string
		want string
	}{
		{"verify", verifyCmd, []string{"--db", store}, "; nothing was written (it only reads the store)"},
		{"inspect", inspectCmd, []string{"runs", "--db", store}, "; nothing was written (it only reads the store)"},
		{"migrate", migrateCmd, []string{"status", "--db", store}, "; nothing was written (status only reads the store)"},
		{"migrate", migrateCmd, []string{"up", "--db", filepath.Join(dir, "new.db")}, "; the migration is one transaction, so " + filepath.Join(dir, "new.db") + " is either as it was or fully migrated; \"wfstore migrate status\" shows which, and \"wfstore migrate up\" finishes it"},
		{"backup", backupCmd, []string{"--db", store, "--to", filepath.Join(dir, "copy.db")}, "; no backup was written: " + filepath.Join(dir, "copy.db") + " was not created and the partial copy, if any, was removed"},
	} {
		ctx, cancel := context.WithCancelCause(context.Background())
		cancel(signalled{syscall.SIGTERM})
		var so, se bytes.Buffer
		err := tc.run(ctx, tc.args, &so, &se)
		code := exit(ctx, tc.cmd, err, &se)
		assert.Equal(t, 143, code, "%s %v", tc.cmd, tc.args)
		msg := strings.TrimSpace(se.String())
		assert.Equal(t, "wfstore "+tc.cmd+": interrupted by SIGTERM"+tc.want, msg, "%s %v", tc.cmd, tc.args)
	}
}

package main

import (
	"bytes"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestBenchFailOnMissedExitsOneListingTheMissedTargets runs a tiny bench
// twice on bbolt: with --fail-on-missed the exit status is 1 exactly when
// the report marks a target MISSED, and stderr lists each missed target;
// without the flag the same report exits 0.
func TestBenchFailOnMissedExitsOneListingTheMissedTargets(t *testing.T) {
	args := []string{"bench", "--backends", "bolt", "-n", "100", "--batch-n", "200", "--history", "300", "--dir", t.TempDir()}
	var out, errb bytes.Buffer
	code := run(append(args, "--fail-on-missed"), &out, &errb)
	missed := strings.Count(out.String(), "**MISSED**")
	if missed > 0 {
		require.Equal(t, 1, code, errb.String())
		require.Contains(t, errb.String(), "wfstore bench: "+plural(missed)+" missed:")
		for _, line := range strings.Split(out.String(), "\n") {
			if target, ok := strings.CutSuffix(line, " — **MISSED**"); ok {
				require.Contains(t, errb.String(), strings.TrimPrefix(target, "- "))
			}
		}
	} else {
		require.Equal(t, 0, code, errb.String())
	}

	out.Reset()
	errb.Reset()
	require.Equal(t, 0, run(args, &out, &errb), errb.String())
	require.NotContains(t, errb.String(), "missed:")
}

func plural(n int) string {
	if n == 1 {
		return "1 target"
	}
	return strconv.Itoa(n) + " targets"
}

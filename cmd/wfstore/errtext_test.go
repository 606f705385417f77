package main

import (
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestErrorText: a command's error is printed once, without the command's
// name repeated, a segment repeated, or the same joined line repeated.
func TestErrorText(t *testing.T) {
	canceled := errors.New("context canceled")
	var eight []error
	for range 8 {
		eight = append(eight, fmt.Errorf("sqlite: update: %w", canceled))
	}
	for _, tc := range []struct {
		err  error
		want string
	}{
		{fmt.Errorf("bench: sqlite bare handle: %w", errors.New("disk full")), "sqlite bare handle: disk full"},
		{fmt.Errorf("sqlite: %w", fmt.Errorf("sqlite: open /x.db: %w", errors.New("denied"))), "sqlite: open /x.db: denied"},
		{fmt.Errorf("parallel: %w", errors.Join(eight...)), "parallel: sqlite: update: context canceled\n  sqlite: update: context canceled (×7)"},
		{errors.Join(eight...), "sqlite: update: context canceled (×8)"},
		{errors.New("bench"), "bench"},
	} {
		require.Equal(t, tc.want, errorText("bench", tc.err))
	}
}

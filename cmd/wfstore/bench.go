package main

import (
	"context"
	"errors"
	"io"
)

// errUsage reports a flag error already printed by the flag package.
var errUsage = errors.New("usage")

// bench is replaced by the benchmark command (package bench).
func bench(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	return errors.New("not built yet")
}

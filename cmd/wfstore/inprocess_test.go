package main

import (
	"bytes"
	"testing"
	"time"
)

// runInProcess runs the command line in this process, as main would, and
// returns its exit status and output. A command that has not returned
// after limit fails the test (it is left running).
func runInProcess(t *testing.T, limit time.Duration, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	type res struct {
		code   int
		so, se string
	}
	done := make(chan res, 1)
	go func() {
		var so, se bytes.Buffer
		c := run(args, &so, &se)
		done <- res{c, so.String(), se.String()}
	}()
	select {
	case r := <-done:
		return r.code, r.so, r.se
	case <-time.After(limit):
		t.Fatalf("wfstore %q did not return within %v", args, limit)
	}
	return 0, "", ""
}

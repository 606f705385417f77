package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
)

// The pipeline dispatches fetch twice (the first attempt fails and is
// retried), then store, and the run completes.
func Example() {
	dir, err := os.MkdirTemp("", "wfstore-concepts")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)
	status, err := run(context.Background(), filepath.Join(dir, "store.db"), os.Stdout)
	if err != nil {
		panic(err)
	}
	fmt.Println("run-1:", status)
	// Output:
	// dispatched fetch, attempt 1
	// dispatched fetch, attempt 2
	// dispatched store, attempt 1
	// run-1: completed
}

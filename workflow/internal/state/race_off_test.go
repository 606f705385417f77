//go:build !race

package state

// raceBuild reports a test binary built with the race detector, whose
// instrumentation makes some values escape to the heap that otherwise
// stay on the stack.
const raceBuild = false

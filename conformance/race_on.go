//go:build race

package conformance

// raceDetector reports whether the race detector is on. Exhaustive
// sequential searches bound themselves tighter under it: the detector finds
// nothing in sequential code and slows every transaction about tenfold.
const raceDetector = true

//go:build !race

package conformance

// raceDetector reports whether the race detector is on (see race_on.go).
const raceDetector = false

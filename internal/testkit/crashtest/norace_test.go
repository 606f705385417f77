//go:build !race

package crashtest

// raceKills is unused outside a race build (see race_test.go).
const raceKills = 0

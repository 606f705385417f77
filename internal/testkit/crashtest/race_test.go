//go:build race

package crashtest

// raceKills is the default kill count per backend and mode in a race
// build: there the test looks for data races in the dispatching child and
// the reconciling parent, which fewer kills cover as well; the crash proof
// itself takes its full count in an ordinary build.
const raceKills = 20

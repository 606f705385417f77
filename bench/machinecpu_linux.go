//go:build linux

package bench

import "os"

// machineCPU returns the machine's busy and total CPU clock ticks since
// boot (see parseProcStat), and false if /proc/stat cannot be read.
func machineCPU() (busy, total uint64, ok bool) {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0, 0, false
	}
	return parseProcStat(b)
}

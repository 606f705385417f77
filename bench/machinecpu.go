package bench

import (
	"bufio"
	"bytes"
	"strconv"
	"strings"
)

// userHZ is the unit of /proc/stat's CPU times: clock ticks of 1/100 s on
// every Linux architecture (USER_HZ).
const userHZ = 100

// parseProcStat reads the machine-wide "cpu" line of /proc/stat and returns
// the clock ticks all CPUs spent busy (user, nice, system, irq, softirq)
// and in total (busy plus idle, iowait and steal) since boot. guest and
// guest_nice are already counted in user and nice.
func parseProcStat(b []byte) (busy, total uint64, ok bool) {
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < 9 || f[0] != "cpu" {
			continue
		}
		var v [8]uint64
		for i := range v {
			n, err := strconv.ParseUint(f[i+1], 10, 64)
			if err != nil {
				return 0, 0, false
			}
			v[i] = n
		}
		user, nice, system, idle, iowait, irq, softirq, steal := v[0], v[1], v[2], v[3], v[4], v[5], v[6], v[7]
		busy = user + nice + system + irq + softirq
		return busy, busy + idle + iowait + steal, true
	}
	return 0, 0, false
}

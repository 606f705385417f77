package bench

import (
	"bufio"
	"os"
	"runtime"
	"strings"
)

// Machine describes where a report was measured.
type Machine struct {
	CPU       string `json:"cpu"`
	Cores     int    `json:"cores"`
	GoVersion string `json:"go_version"`
	OS        string `json:"os"`
	Kernel    string `json:"kernel,omitempty"`
	Arch      string `json:"arch"`
}

// MachineInfo reads the CPU model from /proc/cpuinfo, the distribution from
// /etc/os-release and the kernel release from /proc/sys/kernel/osrelease
// (each left empty where unavailable).
func MachineInfo() Machine {
	m := Machine{Cores: runtime.NumCPU(), GoVersion: runtime.Version(), OS: runtime.GOOS, Arch: runtime.GOARCH}
	m.CPU = fieldOf("/proc/cpuinfo", "model name", ":")
	if name := fieldOf("/etc/os-release", "PRETTY_NAME", "="); name != "" {
		m.OS = runtime.GOOS + " (" + strings.Trim(name, `"`) + ")"
	}
	if b, err := os.ReadFile("/proc/sys/kernel/osrelease"); err == nil {
		m.Kernel = strings.TrimSpace(string(b))
	}
	if m.CPU == "" {
		m.CPU = "unknown"
	}
	return m
}

// fieldOf returns the value of the first "key<sep>value" line of a file.
func fieldOf(path, key, sep string) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), sep)
		if ok && strings.TrimSpace(k) == key {
			return strings.TrimSpace(v)
		}
	}
	return ""
}

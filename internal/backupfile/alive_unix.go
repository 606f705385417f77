//go:build unix

package backupfile

import (
	"errors"
	"syscall"
)

// alive reports whether a process with this id is running.
func alive(pid int) bool {
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}

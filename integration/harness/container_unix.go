//go:build unix

package harness

import (
	"errors"
	"syscall"
)

// processAlive reports whether a process with this pid exists (signal 0; EPERM means it
// exists under another user).
func processAlive(pid int) bool {
	err := syscall.Kill(pid, 0)
	return err == nil || !errors.Is(err, syscall.ESRCH)
}

//go:build unix && !linux

package harness

import (
	"os/exec"
	"syscall"
)

// setProcAttr keeps the server out of the terminal's process group. Without Pdeathsig
// (Linux only) a server outlives a test process that is killed; Cluster.Close, run by
// t.Cleanup, stops it in every other case.
func setProcAttr(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
}

func waitStopped(pid int, stopped bool) {}

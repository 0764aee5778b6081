package harness

import (
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// setProcAttr makes a server die with the test process (Pdeathsig) and keeps it out of
// the terminal's process group, so ^C reaches only the test, whose death then kills it.
//
// Pdeathsig fires when the OS thread that started the child exits; the Go runtime ends
// threads only for goroutines that exit while locked to one, which the harness never does.
func setProcAttr(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL, Setpgid: true}
}

// waitStopped waits (at most 2 s) until /proc says the process is stopped (state T) or,
// with stopped false, no longer stopped, so Freeze returns only once the server is
// really frozen.
func waitStopped(pid int, stopped bool) {
	deadline := time.Now().Add(2 * time.Second)
	for time.Now().Before(deadline) {
		b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
		if err != nil {
			return
		}
		// pid (comm) state ...: comm may hold spaces, the state follows the last ')'.
		s := string(b)
		j := strings.LastIndexByte(s, ')')
		if j < 0 || j+2 >= len(s) {
			return
		}
		state := s[j+2]
		if (state == 'T' || state == 't') == stopped {
			return
		}
		time.Sleep(time.Millisecond)
	}
}

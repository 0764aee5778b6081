package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"sync"
	"syscall"
	"time"
)

// fleet is N instances, each a child process of this one (this binary, envInstance set).
type fleet struct {
	procs []*child
}

// child is one instance's process: its stdin for commands, its replies as they come.
type child struct {
	id    int
	cmd   *exec.Cmd
	in    io.WriteCloser
	reply chan msg
}

// startFleet starts n instances on dsn and waits until each says "up" (its process runs
// and its pool is open, with no session yet).
func startFleet(n int, dsn string, timeout time.Duration) (*fleet, error) {
	self, err := os.Executable()
	if err != nil {
		return nil, err
	}
	f := &fleet{}
	for i := range n {
		cmd := exec.Command(self)
		cmd.Env = append(os.Environ(), envInstance+"=1", envDSN+"="+dsn, envID+"="+strconv.Itoa(i))
		cmd.Stderr = os.Stderr
		cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL} // never outlive the parent
		in, err := cmd.StdinPipe()
		if err != nil {
			f.stop()
			return nil, err
		}
		out, err := cmd.StdoutPipe()
		if err != nil {
			f.stop()
			return nil, err
		}
		if err := cmd.Start(); err != nil {
			f.stop()
			return nil, fmt.Errorf("instance %d: %w (started %d)", i, err, i)
		}
		c := &child{id: i, cmd: cmd, in: in, reply: make(chan msg, 4)}
		f.procs = append(f.procs, c)
		go c.read(out)
	}
	if _, err := f.collect(timeout); err != nil {
		f.stop()
		return nil, err
	}
	return f, nil
}

// read passes the child's stdout lines on as replies, and closes reply at EOF.
func (c *child) read(out io.Reader) {
	defer close(c.reply)
	sc := bufio.NewScanner(out)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		var m msg
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			m = msg{Ev: "error", Err: "bad line: " + sc.Text()}
		}
		c.reply <- m
	}
}

// send gives every instance the command line, as close together as the loop allows.
func (f *fleet) send(line string) {
	for _, c := range f.procs {
		_, _ = io.WriteString(c.in, line+"\n")
	}
}

// collect waits for one reply from every instance, in instance order.
func (f *fleet) collect(timeout time.Duration) ([]msg, error) {
	deadline := time.Now().Add(timeout)
	out := make([]msg, len(f.procs))
	for i, c := range f.procs {
		select {
		case m, ok := <-c.reply:
			if !ok {
				return nil, fmt.Errorf("instance %d exited", i)
			}
			if m.Ev == "error" {
				return nil, fmt.Errorf("instance %d: %s", i, m.Err)
			}
			out[i] = m
		case <-time.After(time.Until(deadline)):
			return nil, fmt.Errorf("instance %d: no reply within %v", i, timeout)
		}
	}
	return out, nil
}

// do sends line to every instance and collects the replies.
func (f *fleet) do(line string, timeout time.Duration) ([]msg, error) {
	f.send(line)
	return f.collect(timeout)
}

// stop closes every instance's stdin (it closes its pool and exits), waits up to 10 s,
// then kills what is left.
func (f *fleet) stop() {
	for _, c := range f.procs {
		c.in.Close()
	}
	var wg sync.WaitGroup
	for _, c := range f.procs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			done := make(chan struct{})
			go func() {
				for range c.reply { // drain, so that read ends and Wait may close the pipe
				}
				_ = c.cmd.Wait()
				close(done)
			}()
			select {
			case <-done:
			case <-time.After(10 * time.Second):
				_ = c.cmd.Process.Kill()
				<-done
			}
		}()
	}
	wg.Wait()
}

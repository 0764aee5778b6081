//go:build linux

package main

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// checkUser is the MariaDB account HAProxy's mysql-check logs in with (no password, no
// privilege: the check only needs the handshake and a QUIT).
const checkUser = "haproxy_check"

// haproxy is one HAProxy process with a listener per (check, addresses) pair: the
// primary as the server and the replica as backup, in front of the servers themselves
// (kill -9, SIGSTOP) or of their toxiproxy proxies (blackhole).
type haproxy struct {
	cmd  *exec.Cmd
	addr map[string]string // "tcp/direct" -> 127.0.0.1:port
}

// haproxyServers is how every server line reads: a check every 200 ms, down after 2
// failures, up after 2 passes; the sessions of a server marked down are cut, and those
// on the backup when the primary is marked up again, so that pooled client connections
// follow HAProxy's view instead of waiting for their own timeouts.
const haproxyServers = "check inter 200 fall 2 rise 2 on-marked-down shutdown-sessions on-marked-up shutdown-backup-sessions"

// startHAProxy writes a configuration into dir and starts haproxy in the foreground as a
// child of this process. direct and proxied are the node addresses, primary first.
func startHAProxy(dir string, direct, proxied []string) (*haproxy, error) {
	h := &haproxy{addr: map[string]string{}}
	var b strings.Builder
	fmt.Fprintf(&b, "global\n  maxconn 4096\n  log stdout format raw local0\n\ndefaults\n  log global\n  mode tcp\n  timeout connect 1s\n  timeout client 1h\n  timeout server 1h\n\n")
	for _, check := range []string{"tcp", "mysql"} {
		for _, via := range []string{"direct", "proxied"} {
			addrs := direct
			if via == "proxied" {
				addrs = proxied
			}
			port, err := freePort()
			if err != nil {
				return nil, err
			}
			key := check + "/" + via
			h.addr[key] = fmt.Sprintf("127.0.0.1:%d", port)
			fmt.Fprintf(&b, "listen %s_%s\n  bind %s\n", check, via, h.addr[key])
			if check == "tcp" {
				b.WriteString("  option tcp-check\n")
			} else {
				fmt.Fprintf(&b, "  option mysql-check user %s post-41\n", checkUser)
			}
			for k, a := range addrs {
				backup := ""
				if k > 0 {
					backup = " backup"
				}
				fmt.Fprintf(&b, "  server node%d %s %s%s\n", k+1, a, haproxyServers, backup)
			}
			b.WriteString("\n")
		}
	}
	cfg := filepath.Join(dir, "haproxy.cfg")
	if err := os.WriteFile(cfg, []byte(b.String()), 0o644); err != nil {
		return nil, err
	}
	bin, err := exec.LookPath("haproxy")
	if err != nil {
		bin = "/usr/sbin/haproxy"
	}
	if out, err := exec.Command(bin, "-c", "-q", "-f", cfg).CombinedOutput(); err != nil {
		return nil, fmt.Errorf("haproxy -c: %v: %s", err, out)
	}
	logf, err := os.Create(filepath.Join(dir, "haproxy.log"))
	if err != nil {
		return nil, err
	}
	h.cmd = exec.Command(bin, "-db", "-f", cfg)
	h.cmd.Stdout, h.cmd.Stderr = logf, logf
	h.cmd.SysProcAttr = childAttr()
	if err := h.cmd.Start(); err != nil {
		return nil, err
	}
	for _, a := range h.addr {
		if err := waitListening(a, 5*time.Second); err != nil {
			h.close()
			return nil, fmt.Errorf("haproxy: %v (log: %s)", err, logf.Name())
		}
	}
	return h, nil
}

func (h *haproxy) close() {
	if h == nil || h.cmd == nil || h.cmd.Process == nil {
		return
	}
	h.cmd.Process.Signal(syscall.SIGTERM)
	done := make(chan struct{})
	go func() { h.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(3 * time.Second):
		h.cmd.Process.Kill()
		<-done
	}
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

func waitListening(addr string, d time.Duration) error {
	deadline := time.Now().Add(d)
	for {
		c, err := net.DialTimeout("tcp", addr, 200*time.Millisecond)
		if err == nil {
			c.Close()
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s not listening after %v: %w", addr, d, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// childAttr makes a child die with this process (Linux).
func childAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"net"
	"strings"
	"testing"
	"time"
)

const password = "Pw-n0t-in-output"

// closedPort returns a loopback address nothing listens on.
func closedPort(t *testing.T) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	_ = l.Close()
	return addr
}

// TestCheckWithoutServers: exit codes, JSON fields, problems and the password's absence
// for DSNs the driver rejects and for hosts that refuse; real servers are in the
// integration module (TestCheckCommand).
func TestCheckWithoutServers(t *testing.T) {
	a, b := closedPort(t), closedPort(t)
	tests := []struct {
		name    string
		args    []string
		code    int
		problem string // in the output
	}{
		{"no command", nil, exitUsage, "usage"},
		{"no dsn", []string{"check"}, exitUsage, "usage"},
		{"typo'd key", []string{"check", "app:" + password + "@tcp(" + a + "," + b + ")/app?retriesalldown=3"}, exitUnusable, `did you mean "retriesAllDown"`},
		{"unknown localDC", []string{"check", "app:" + password + "@tcp(" + a + ";dc=east," + b + ";dc=west)/app?localDC=eats"}, exitUnusable, `localDC "eats" matches no host`},
		{"syntax", []string{"check", "app:" + password + "@tcp(" + a}, exitUnusable, "rejects the DSN"},
		{"all refused", []string{"check", "--timeout", "2s", "app:" + password + "@tcp(" + a + "," + b + ")/app?readTimeout=2s"}, exitUnusable, "a new connection would fail"},
		{"single host", []string{"check", "--json", "app:" + password + "@tcp(" + a + ")/app"}, exitUnusable, "nothing to fail over to"},
		{"readTimeout unset", []string{"check", "--json", "app:" + password + "@tcp(" + a + "," + b + ")/app"}, exitUnusable, "readTimeout is unset"},
		{"registered network", []string{"check", "app:" + password + "@tcpx(" + a + "," + b + ")/app?readTimeout=2s"}, exitUnusable, `network "tcpx"`},
		{"flags after the dsn", []string{"check", "app:" + password + "@tcp(" + a + "," + b + ")/app", "--timeout", "1s", "--json"}, exitUnusable, `"exit_code"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out, errOut bytes.Buffer
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			code := run(ctx, tt.args, &out, &errOut)
			all := out.String() + errOut.String()
			if code != tt.code || !strings.Contains(all, tt.problem) {
				t.Fatalf("exit %d, want %d; output without %q:\n%s", code, tt.code, tt.problem, all)
			}
			if strings.Contains(all, password) {
				t.Fatalf("the password is in the output:\n%s", all)
			}
			if len(tt.args) > 1 && tt.args[1] == "--json" {
				var r report
				if err := json.Unmarshal(out.Bytes(), &r); err != nil {
					t.Fatalf("--json: %v\n%s", err, out.String())
				}
				if r.ExitCode != code || r.Status != "unusable" || len(r.Hosts) == 0 || r.Hosts[0].Reachable || r.Plan == nil || r.Plan.Connect != "" {
					t.Fatalf("--json report: %+v", r)
				}
			}
		})
	}
}

func TestHostLoggerDropsSourceLine(t *testing.T) {
	var l hostLogger
	l.Print("packets.go:58", " ", "unexpected EOF")
	if got := l.last(); got != "unexpected EOF" {
		t.Fatalf("%q", got)
	}
	l.Print("packets.go:58 read tcp: i/o timeout")
	if got := l.last(); got != "read tcp: i/o timeout" {
		t.Fatalf("%q", got)
	}
}

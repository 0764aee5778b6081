package main

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"time"
)

func (r *report) writeJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(r)
}

func (r *report) writeText(w io.Writer) error {
	var b strings.Builder
	if r.DSN != "" {
		fmt.Fprintf(&b, "dsn  %s\n", r.DSN)
	}
	for i, h := range r.Hosts {
		dc := h.DC
		if dc == "" {
			dc = "none"
		}
		fmt.Fprintf(&b, "\nhost %d  %s  (dc: %s)\n", i+1, h.Host, dc)
		hs := time.Duration(h.HandshakeSeconds * float64(time.Second)).Round(10 * time.Microsecond)
		if !h.Reachable {
			fmt.Fprintf(&b, "  reachable    no, after %v: %s\n", hs, h.Error)
			continue
		}
		fmt.Fprintf(&b, "  reachable    yes, handshake %v\n", hs)
		fmt.Fprintf(&b, "  version      %s\n", h.Version)
		fmt.Fprintf(&b, "  role         %s (read_only=%s, super_read_only=%s, transaction_read_only=%s)\n",
			h.Role, h.ReadOnly, h.SuperReadOnly, h.TransactionReadOnly)
		rep := h.Replication
		switch rep.Status {
		case "replica":
			lag := "unknown (a replication thread is stopped)"
			if rep.LagSeconds != nil {
				lag = fmt.Sprintf("%d s", *rep.LagSeconds)
			}
			fmt.Fprintf(&b, "  replication  from %s, IO %s, SQL %s, lag %s\n", rep.Source, rep.IORunning, rep.SQLRunning, lag)
		case "none":
			fmt.Fprintf(&b, "  replication  none (not a replica)\n")
		case "unknown (no privilege)":
			fmt.Fprintf(&b, "  replication  source unknown (no privilege), lag unknown (no privilege): needs %s\n", rep.Privilege)
		default:
			fmt.Fprintf(&b, "  replication  %s\n", rep.Status)
		}
		if h.TLS {
			fmt.Fprintf(&b, "  tls          yes (%s)\n", h.TLSCipher)
		} else {
			fmt.Fprintf(&b, "  tls          no\n")
		}
		if h.Error != "" {
			fmt.Fprintf(&b, "  error        %s\n", h.Error)
		}
	}
	if p := r.Plan; p != nil {
		fmt.Fprintf(&b, "\nplan  targetSessionAttrs=%s", p.TargetSessionAttrs)
		if p.LocalDC != "" {
			fmt.Fprintf(&b, ", localDC=%s, usedHostsPerRemoteDC=%d", p.LocalDC, p.UsedHostsPerRemoteDC)
		} else {
			fmt.Fprintf(&b, ", no localDC (every host local, list order)")
		}
		b.WriteString("\n")
		for i, ph := range p.Order {
			mark := "  "
			if ph.Host == p.Connect {
				mark = "->"
			}
			where := "local"
			if !ph.Local {
				where = "remote dc " + ph.DC
			}
			fmt.Fprintf(&b, "  %s %d. %-22s %-14s %s\n", mark, i+1, ph.Host, where, ph.Reason)
		}
		for _, h := range p.Ignored {
			fmt.Fprintf(&b, "        %-22s ignored (beyond usedHostsPerRemoteDC)\n", h)
		}
		writer := p.Writer
		if writer == "" {
			writer = "none"
		}
		connect := p.Connect
		if connect == "" {
			connect = "none"
		}
		fmt.Fprintf(&b, "  writer: %s\n  a new connection goes to: %s (%s)\n", writer, connect, p.Why)
	}
	if len(r.Problems) > 0 {
		b.WriteString("\nproblems\n")
		for _, pr := range r.Problems {
			host := ""
			if pr.Host != "" {
				host = pr.Host + ": "
			}
			fmt.Fprintf(&b, "  [%s] %s%s\n      fix: %s\n", pr.Severity, host, pr.Problem, pr.Fix)
		}
	}
	fmt.Fprintf(&b, "\nstatus: %s (exit %d)\n", r.Status, r.ExitCode)
	_, err := io.WriteString(w, b.String())
	return err
}

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
	// What leads: the status and the cause to act on, then every problem in that
	// order, then the details (hosts, plan).
	fmt.Fprintf(&b, "%s\n", r.Headline)
	if len(r.Problems) > 0 {
		b.WriteString("\nproblems, most severe first\n")
		for i, pr := range r.Problems {
			host := ""
			if pr.Host != "" {
				host = pr.Host + ": "
			}
			fmt.Fprintf(&b, "  %d. [%s] %s%s\n      fix: %s\n", i+1, pr.Severity, host, pr.Problem, pr.Fix)
		}
	}
	if r.DSN != "" {
		fmt.Fprintf(&b, "\ndsn  %s\n", r.DSN)
	}
	for i, h := range r.Hosts {
		dc := h.DC
		if dc == "" {
			dc = "none"
		}
		fmt.Fprintf(&b, "\nhost %d  %s  (dc: %s)\n", i+1, h.Host, dc)
		if h.Origin == "discovered" {
			fmt.Fprintf(&b, "  origin       discovered: %s reports it as %s (discoverHosts adds it after the DSN's hosts)\n", h.ReportedBy, h.Reported)
		} else {
			fmt.Fprintf(&b, "  origin       %s\n", orUnknown(h.Origin))
		}
		hs := time.Duration(h.HandshakeSeconds * float64(time.Second)).Round(10 * time.Microsecond)
		if !h.Reachable {
			fmt.Fprintf(&b, "  reachable    no (%s), after %v: %s\n", h.Failure, hs, h.Error)
			if h.NotReady != "" {
				fmt.Fprintf(&b, "  cluster      NOT READY: %s\n", h.NotReady)
			}
			continue
		}
		fmt.Fprintf(&b, "  reachable    yes, handshake %v\n", hs)
		fmt.Fprintf(&b, "  version      %s\n", h.Version)
		fmt.Fprintf(&b, "  role         %s (read_only=%s, super_read_only=%s, transaction_read_only=%s)\n",
			h.Role, h.ReadOnly, h.SuperReadOnly, h.TransactionReadOnly)
		if h.ServerID != 0 || h.GTID != "" {
			fmt.Fprintf(&b, "  server_id    %d, gtid %s\n", h.ServerID, orUnknown(h.GTID))
		}
		if h.Cluster != "" && h.Cluster != "replication" || h.NotReady != "" {
			ready := "ready"
			if h.NotReady != "" {
				ready = "NOT READY: " + h.NotReady
			}
			fmt.Fprintf(&b, "  cluster      %s, %s\n", h.Cluster, ready)
		}
		if g := h.Galera; g != nil {
			fmt.Fprintf(&b, "  wsrep        ready=%s, cluster_status=%s, local_state=%s (%s), cluster_size=%d, desync=%s, reject_queries=%s, last_committed=%d\n",
				g.Ready, g.ClusterStatus, g.LocalState, g.LocalStateComment, g.ClusterSize, orAbsent(g.Desync), orAbsent(g.RejectQueries), g.LastCommitted)
		}
		rep := h.Replication
		switch rep.Status {
		case "replica":
			fmt.Fprintf(&b, "  replication  %s from %s, IO %s, SQL %s, lag %s\n", rep.State, sourceName(rep), rep.IORunning, rep.SQLRunning, lagText(rep))
			if rep.ReceivedGTID != "" && rep.ReceivedGTID != h.GTID {
				fmt.Fprintf(&b, "               received gtid %s\n", rep.ReceivedGTID)
			}
			if rep.LastError != "" {
				fmt.Fprintf(&b, "               last error: %s\n", rep.LastError)
			}
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
		fmt.Fprintf(&b, "  writer: %s\n  a new connection goes to: %s (%s)\n", orNone(p.Writer), orNone(p.Connect), p.Why)
		if p.Promote != "" {
			fmt.Fprintf(&b, "  to promote: %s (%s)\n", p.Promote, p.PromoteWhy)
		}
	}
	fmt.Fprintf(&b, "\nstatus: %s (exit %d)\n", r.Status, r.ExitCode)
	_, err := io.WriteString(w, b.String())
	return err
}

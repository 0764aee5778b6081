package main

import (
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/mysqlfailover/mysqlfailover/dsn"
	"github.com/mysqlfailover/mysqlfailover/failover"
	"github.com/mysqlfailover/mysqlfailover/internal/attrs"
)

// makePlan is the plan of a new pool, by the rules of package failover: a new pool
// starts at the primary (the first local host) and walks the list in order; with
// localDC the local hosts (that DC's and the unlabelled) go first, then of each other DC
// the first usedHostsPerRemoteDC, and the rest are ignored; a host whose server says it
// is not ready is skipped (Readiness); targetSessionAttrs skips the hosts whose role does
// not qualify (prefer-standby takes any host as a last resort).
func makePlan(cfg *dsn.Config, hosts []hostReport) *plan {
	target := cfg.TargetSessionAttrs
	if target == "" {
		target = attrs.Any
	}
	p := &plan{TargetSessionAttrs: target, LocalDC: cfg.LocalDC, UsedHostsPerRemoteDC: cfg.UsedHostsPerRemoteDC}
	var local, remote []int
	perDC := map[string]int{}
	for i, h := range cfg.Hosts {
		switch {
		case cfg.LocalDC == "" || h.DC == "" || h.DC == cfg.LocalDC:
			local = append(local, i)
		case perDC[h.DC] < cfg.UsedHostsPerRemoteDC:
			perDC[h.DC]++
			remote = append(remote, i)
		default:
			p.Ignored = append(p.Ignored, h.Addr())
		}
	}
	lastResort := ""
	for k, i := range append(local, remote...) {
		hr := hosts[i]
		ph := planHost{Host: hr.Host, DC: hr.DC, Local: k < len(local)}
		ph.Qualifies, ph.Reason = qualifies(target, hr)
		p.Order = append(p.Order, ph)
		if ph.Qualifies && p.Connect == "" {
			p.Connect = hr.Host
		}
		if target == attrs.PreferStandby && hr.Reachable && hr.NotReady == "" && lastResort == "" {
			lastResort = hr.Host
		}
		if p.Writer == "" && hr.role == failover.RolePrimary && hr.Reachable && hr.NotReady == "" && hr.Cluster == "galera" {
			p.Writer = hr.Host // every Galera node takes writes: the pool writes to the first ready one
		}
	}
	if ws := writable(hosts); len(ws) > 0 && p.Writer == "" {
		p.Writer = ws[chooseWriter(hosts, ws)].Host
	}
	writeTarget := target == attrs.ReadWrite || target == attrs.Primary
	if ws := writable(hosts); len(ws) > 1 && writeTarget {
		// Two writers: a new pool looks at the hosts and takes the one the replicas follow.
		p.Connect = p.Writer
		p.Why = "two hosts are writable: a new pool takes the one its replicas follow (then the list's first)"
		return p
	}
	switch {
	case p.Connect == "" && lastResort != "":
		p.Connect = lastResort
		p.Why = "no standby answers: prefer-standby takes " + lastResort + " as a last resort"
	case p.Connect == "":
		p.Why = "no host of the plan is reachable, ready and qualifies for targetSessionAttrs=" + string(target)
	case len(p.Order) > 0 && p.Connect == p.Order[0].Host:
		p.Why = "the plan's primary, its first local host, is reachable and qualifies"
	default:
		p.Why = "the hosts before it in the plan are unreachable, not ready or do not qualify; the walk goes on in list order"
	}
	if p.Writer == "" {
		p.Promote, p.PromoteWhy = promotion(hosts)
	}
	return p
}

// qualifies says whether a host is reachable, ready and its role qualifies for target,
// and why.
func qualifies(target string, hr hostReport) (bool, string) {
	if !hr.Reachable {
		return false, "unreachable"
	}
	if hr.NotReady != "" {
		return false, "not ready: " + hr.NotReady
	}
	if target == attrs.Any {
		return true, "reachable (targetSessionAttrs=any: no role check)"
	}
	ok := false
	switch target {
	case attrs.Primary:
		ok = hr.role == failover.RolePrimary || hr.role == failover.RoleReadOnlyPrimary
	case attrs.ReadWrite:
		ok = hr.role == failover.RolePrimary
	case attrs.Standby, attrs.PreferStandby:
		ok = hr.role == failover.RoleStandby
	case attrs.ReadOnly:
		ok = hr.role == failover.RoleStandby || hr.role == failover.RoleReadOnlyPrimary
	}
	if ok {
		return true, "role " + hr.Role + " qualifies for " + string(target)
	}
	return false, "role " + hr.Role + " does not qualify for " + string(target)
}

// candidate is a host that could be promoted, with what ranks it.
type candidate struct {
	h        hostReport
	applied  int64 // progress of its applied GTID position (gtidProgress), -1 unknown
	received int64 // of what its IO thread received, -1 unknown
	lag      int64 // Seconds_Behind_Source, -1 unknown
	index    int
}

// promotion chooses the replica to promote when no host is writable: of the reachable,
// ready, read-only hosts whose replication is not broken, the one furthest ahead by its
// applied GTID position, then by what it has received, then the smallest lag, then list
// order. why gives the positions and lags of every candidate, the chosen one first.
func promotion(hosts []hostReport) (host, why string) {
	var cs []candidate
	for i, h := range hosts {
		if !h.Reachable || h.NotReady != "" || h.role == failover.RolePrimary || h.role == failover.RoleUnknown || h.Replication.State == "broken" {
			continue
		}
		c := candidate{h: h, applied: gtidProgress(h.GTID), received: gtidProgress(h.Replication.ReceivedGTID), lag: -1, index: i}
		if l := h.Replication.LagSeconds; l != nil {
			c.lag = *l
		}
		cs = append(cs, c)
	}
	if len(cs) == 0 {
		return "", ""
	}
	sort.SliceStable(cs, func(i, j int) bool {
		a, b := cs[i], cs[j]
		switch {
		case a.applied != b.applied:
			return a.applied > b.applied
		case a.received != b.received:
			return a.received > b.received
		case a.lag != b.lag && a.lag >= 0 && b.lag >= 0:
			return a.lag < b.lag
		case (a.lag >= 0) != (b.lag >= 0):
			return a.lag >= 0
		}
		return a.index < b.index
	})
	var parts []string
	for k, c := range cs {
		s := c.h.Host + " at gtid " + orUnknown(c.h.GTID)
		if c.h.Replication.ReceivedGTID != "" && c.h.Replication.ReceivedGTID != c.h.GTID {
			s += " (received " + c.h.Replication.ReceivedGTID + ")"
		}
		if l := c.h.Replication.LagSeconds; l != nil {
			s += fmt.Sprintf(", lag %d s", *l)
		} else {
			s += ", lag unknown"
		}
		if k == 0 {
			s = "furthest ahead: " + s
		}
		parts = append(parts, s)
	}
	if cs[0].applied < 0 {
		parts = append(parts, "no GTID position could be read: compare gtid_current_pos (gtid_executed on MySQL) before promoting")
	}
	return cs[0].h.Host, strings.Join(parts, "; ")
}

// gtidProgress is a number that grows with a GTID position: for MariaDB's domain-server-
// seqno list the sum of the seqnos, for MySQL's uuid:interval set the number of
// transactions; -1 for none.
func gtidProgress(pos string) int64 {
	pos = strings.TrimSpace(pos)
	if pos == "" {
		return -1
	}
	var total int64
	for _, part := range strings.Split(pos, ",") {
		part = strings.TrimSpace(part)
		if f := strings.Split(part, "-"); len(f) == 3 && !strings.Contains(part, ":") {
			if n, err := strconv.ParseInt(f[2], 10, 64); err == nil {
				total += n
			}
			continue
		}
		fields := strings.Split(part, ":")
		for _, iv := range fields[1:] {
			lo, hi, found := strings.Cut(iv, "-")
			a, err1 := strconv.ParseInt(lo, 10, 64)
			b := a
			var err2 error
			if found {
				b, err2 = strconv.ParseInt(hi, 10, 64)
			}
			if err1 == nil && err2 == nil && b >= a {
				total += b - a + 1
			}
		}
	}
	return total
}

// lagText is a replica's lag for the report: seconds, or why it is unknown.
func lagText(rep replication) string {
	if rep.LagSeconds != nil {
		return fmt.Sprintf("%d s", *rep.LagSeconds)
	}
	switch {
	case rep.Status == "none":
		return "n/a (not a replica)"
	case rep.Status != "replica":
		return rep.Status
	case rep.State == "connecting":
		return "unknown (the IO thread is connecting to its source)"
	case rep.State == "broken":
		return "unknown (replication stopped on an error)"
	case rep.State == "stopped":
		return "unknown (replication is stopped)"
	}
	return "unknown"
}

func orUnknown(s string) string {
	if s == "" {
		return "unknown"
	}
	return s
}

// writable returns the reachable, ready hosts of a replication cluster that take writes
// (role primary), in list order. Galera nodes (all writers by design) and Group
// Replication members (the group names its primary) are left out.
func writable(hosts []hostReport) []hostReport {
	var out []hostReport
	for _, h := range hosts {
		if h.role == failover.RolePrimary && h.Reachable && h.NotReady == "" && h.Cluster != "galera" && h.Cluster != "group" {
			out = append(out, h)
		}
	}
	return out
}

// followers returns the hosts of the list that replicate from w (matched by
// matchSources), running or not: a replica stopped by hand still belongs to its source.
func followers(hosts []hostReport, w hostReport) []string {
	var out []string
	for _, h := range hosts {
		rep := h.Replication
		if h.Host != w.Host && rep.Status == "replica" && rep.SourceHost == w.Host {
			out = append(out, h.Host)
		}
	}
	return out
}

// chooseWriter returns the index in ws (the writable hosts, list order) of the writer
// the driver chooses when there are several: the one most replicas follow, then the
// list's first (a new pool has none in use).
func chooseWriter(hosts []hostReport, ws []hostReport) int {
	best, most := 0, -1
	for i, w := range ws {
		if n := len(followers(hosts, w)); n > most {
			best, most = i, n
		}
	}
	return best
}

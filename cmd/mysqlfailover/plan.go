package main

import (
	"fmt"
	"strings"

	"github.com/mysqlfailover/mysqlfailover/dsn"
	"github.com/mysqlfailover/mysqlfailover/failover"
)

// makePlan is the plan of a new pool, by the rules of package failover: a new pool
// starts at the primary (the first local host) and walks the list in order; with
// localDC the local hosts (that DC's and the unlabelled) go first, then of each other DC
// the first usedHostsPerRemoteDC, and the rest are ignored; targetSessionAttrs skips the
// hosts whose role does not qualify (prefer-standby takes any host as a last resort).
func makePlan(cfg *dsn.Config, hosts []hostReport) *plan {
	target := cfg.TargetSessionAttrs
	if target == "" {
		target = dsn.TargetAny
	}
	p := &plan{TargetSessionAttrs: string(target), LocalDC: cfg.LocalDC, UsedHostsPerRemoteDC: cfg.UsedHostsPerRemoteDC}
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
		if target == dsn.TargetPreferStandby && hr.Reachable && lastResort == "" {
			lastResort = hr.Host
		}
	}
	for _, hr := range hosts {
		if hr.role == failover.RolePrimary && p.Writer == "" {
			p.Writer = hr.Host
		}
	}
	switch {
	case p.Connect == "" && lastResort != "":
		p.Connect = lastResort
		p.Why = "no standby answers: prefer-standby takes " + lastResort + " as a last resort"
	case p.Connect == "":
		p.Why = "no host of the plan is reachable and qualifies for targetSessionAttrs=" + string(target)
	case len(p.Order) > 0 && p.Connect == p.Order[0].Host:
		p.Why = "the plan's primary, its first local host, is reachable and qualifies"
	default:
		p.Why = "the hosts before it in the plan are unreachable or do not qualify; the walk goes on in list order"
	}
	return p
}

// qualifies says whether a host is reachable and its role qualifies for target, and why.
func qualifies(target dsn.TargetSessionAttrs, hr hostReport) (bool, string) {
	if !hr.Reachable {
		return false, "unreachable"
	}
	if target == dsn.TargetAny {
		return true, "reachable (targetSessionAttrs=any: no role check)"
	}
	ok := false
	switch target {
	case dsn.TargetPrimary:
		ok = hr.role == failover.RolePrimary || hr.role == failover.RoleReadOnlyPrimary
	case dsn.TargetReadWrite:
		ok = hr.role == failover.RolePrimary
	case dsn.TargetStandby, dsn.TargetPreferStandby:
		ok = hr.role == failover.RoleStandby
	case dsn.TargetReadOnly:
		ok = hr.role == failover.RoleStandby || hr.role == failover.RoleReadOnlyPrimary
	}
	if ok {
		return true, "role " + hr.Role + " qualifies for " + string(target)
	}
	return false, "role " + hr.Role + " does not qualify for " + string(target)
}

// findProblems adds the findings about the configuration, the hosts and the plan.
func (r *report) findProblems(cfg *dsn.Config) {
	if len(cfg.Hosts) == 1 {
		r.add(sevDegraded, "", "the DSN lists one host: there is nothing to fail over to",
			"list the replicas after the primary: tcp(db1:3306,db2:3306,db3:3306)")
	}
	if cfg.MySQL == nil || cfg.MySQL.ReadTimeout <= 0 {
		r.add(sevDegraded, "", "readTimeout is unset: a host that hangs without closing its connections (frozen, or cut off by the network) is noticed only when TCP gives up, minutes later",
			"add readTimeout=2s&writeTimeout=2s to the DSN (longer than your slowest statement), or checkInterval=1s for probes")
	}
	for _, h := range r.Hosts {
		switch {
		case !h.Reachable:
			r.add(sevDegraded, h.Host, "unreachable: "+h.Error,
				"start the server, or fix the network, the user or TLS settings named in the error; the driver skips the host meanwhile")
		case h.Error != "":
			r.add(sevDegraded, h.Host, "reachable, but: "+h.Error, "check the server's log and the user's privileges")
		}
		rep := h.Replication
		if rep.Status == "replica" && (!strings.EqualFold(rep.IORunning, "Yes") || !strings.EqualFold(rep.SQLRunning, "Yes")) {
			what := fmt.Sprintf("replication from %s is not running (IO thread %s, SQL thread %s)", rep.Source, rep.IORunning, rep.SQLRunning)
			if rep.LastError != "" {
				what += ": " + rep.LastError
			}
			r.add(sevDegraded, h.Host, what, "fix the error and START REPLICA (START SLAVE): a failover to this host would serve stale data")
		}
	}
	p := r.Plan
	var writers []string
	for _, h := range r.Hosts {
		if h.role == failover.RolePrimary {
			writers = append(writers, h.Host)
		}
	}
	listPrimary := ""
	if len(p.Order) > 0 {
		listPrimary = p.Order[0].Host
	}
	switch {
	case len(writers) == 0 && anyReachable(r.Hosts):
		sev := sevDegraded
		if p.TargetSessionAttrs == string(dsn.TargetReadWrite) || p.TargetSessionAttrs == string(dsn.TargetPrimary) {
			sev = sevUnusable
		}
		r.add(sev, "", "no reachable host is writable (read_only=OFF): writes fail with error 1290",
			"promote a replica (SET GLOBAL read_only=OFF on it) or restart the primary")
	case len(writers) > 1:
		r.add(sevDegraded, "", "more than one host is writable ("+strings.Join(writers, ", ")+"): writes may go to either, and diverge",
			"SET GLOBAL read_only=ON (and super_read_only=ON on MySQL) on every replica")
	case len(writers) == 1 && writers[0] != listPrimary:
		what := "the writer is " + writers[0] + ", not the list's primary " + listPrimary
		fix := "put " + writers[0] + " first in the DSN"
		if p.TargetSessionAttrs == string(dsn.TargetAny) {
			what += ": with targetSessionAttrs=any new connections go to " + p.Connect + " and writes there fail with 1290"
			fix += ", or add targetSessionAttrs=read-write so the driver finds the writer wherever it is"
		}
		r.add(sevDegraded, "", what, fix)
	}
	if p.Connect == "" {
		r.add(sevUnusable, "", "a new connection would fail: "+p.Why,
			"bring a host up (or make one qualify for targetSessionAttrs="+p.TargetSessionAttrs+")")
	}
}

func anyReachable(hosts []hostReport) bool {
	for _, h := range hosts {
		if h.Reachable {
			return true
		}
	}
	return false
}

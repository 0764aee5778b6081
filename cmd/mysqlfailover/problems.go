package main

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/mysqlfailover/mysqlfailover/dsn"
	"github.com/mysqlfailover/mysqlfailover/failover"
	"github.com/mysqlfailover/mysqlfailover/internal/attrs"
)

// The order of problems of one severity: the cause an operator acts on first (the DSN,
// no host, no writer), then the hosts (down, not ready), then their replication, then
// the roles and the configuration. Within a rank, hosts go in list order.
const (
	rankDSN            = 10
	rankNoHost         = 20
	rankNoWriter       = 30
	rankWriters        = 40
	rankDown           = 50
	rankNotReady       = 55
	rankBroken         = 60
	rankStopped        = 62
	rankConnecting     = 64
	rankQueryError     = 66
	rankWriterNotFirst = 70
	rankConfig         = 80
)

// sortProblems orders ps: unusable before degraded, then by rank, then by host.
func sortProblems(ps []problem) {
	sevOrder := func(s string) int {
		if s == sevUnusable {
			return 0
		}
		return 1
	}
	sort.SliceStable(ps, func(i, j int) bool {
		a, b := ps[i], ps[j]
		if sa, sb := sevOrder(a.Severity), sevOrder(b.Severity); sa != sb {
			return sa < sb
		}
		if a.rank != b.rank {
			return a.rank < b.rank
		}
		return a.index < b.index
	})
}

// findProblems adds the findings about the configuration, the hosts and the plan.
func (r *report) findProblems(cfg *dsn.Config) {
	p := r.Plan
	index := map[string]int{}
	for i, h := range r.Hosts {
		index[h.Host] = i
	}
	hostProblem := func(sev, kind string, rank int, h hostReport, what, fix string, short ...string) {
		pr := problem{Severity: sev, Kind: kind, Host: h.Host, Problem: what, Fix: fix, rank: rank, index: index[h.Host]}
		if len(short) > 0 {
			pr.short = short[0]
		}
		r.add(pr)
	}
	if len(cfg.Hosts) == 1 {
		r.add(problem{Severity: sevDegraded, Kind: "single_host", rank: rankConfig, index: -1,
			Problem: "the DSN lists one host: there is nothing to fail over to",
			Fix:     "list the replicas after the primary: tcp(db1:3306,db2:3306,db3:3306)"})
	}
	if cfg.MySQL == nil || cfg.MySQL.ReadTimeout <= 0 {
		r.add(problem{Severity: sevDegraded, Kind: "read_timeout", rank: rankConfig, index: -1,
			Problem: "readTimeout is unset: a host that hangs without closing its connections (frozen, or cut off by the network) is noticed only when TCP gives up, minutes later",
			Fix:     "add readTimeout=2s&writeTimeout=2s to the DSN (longer than your slowest statement), or checkInterval=1s for probes"})
	}

	// Replicas whose IO thread cannot reach their source, by the source's host: a
	// source that is down explains them.
	waiting := map[string][]hostReport{}
	for _, h := range r.Hosts {
		if rep := h.Replication; rep.Status == "replica" && rep.State == "connecting" && rep.SourceHost != "" {
			waiting[rep.SourceHost] = append(waiting[rep.SourceHost], h)
		}
	}
	down := map[string]bool{}
	for _, h := range r.Hosts {
		switch {
		case !h.Reachable && h.NotReady != "":
			hostProblem(sevDegraded, "not_ready", rankNotReady, h, "refuses sessions, not ready: "+h.NotReady, notReadyFix(h.NotReady))
		case !h.Reachable:
			down[h.Host] = true
			what, fix := downWords(h, r.Timeout, cfg)
			short := "does not answer (" + failureWord(h) + ")"
			if ws := waiting[h.Host]; len(ws) > 0 {
				what += "; " + waitingWords(h, ws)
				fix += "; its replicas resume from it by themselves once it answers (no START REPLICA needed)"
				short += fmt.Sprintf("; its %d replica(s) cannot reach it either", len(ws))
			}
			if h.Failure == "timeout" {
				short = what[:strings.Index(what, " (")] + ": frozen or hung"
			}
			hostProblem(sevDegraded, "down", rankDown, h, what, fix, short)
		case h.NotReady != "":
			hostProblem(sevDegraded, "not_ready", rankNotReady, h, "not ready ("+h.Cluster+"): "+h.NotReady+": the driver does not use it",
				notReadyFix(h.NotReady))
		case h.Error != "":
			hostProblem(sevDegraded, "query_error", rankQueryError, h, "reachable, but: "+h.Error, "check the server's log and the user's privileges")
		}
	}
	for _, h := range r.Hosts {
		rep := h.Replication
		if rep.Status != "replica" {
			continue
		}
		src := sourceName(rep)
		switch rep.State {
		case "broken":
			if rep.SQLErrno != 0 && !strings.EqualFold(rep.SQLRunning, "Yes") {
				hostProblem(sevDegraded, "replication_broken", rankBroken, h,
					fmt.Sprintf("replication from %s is broken: the SQL thread stopped on error %d (%s); lag %s", src, rep.SQLErrno, rep.LastError, lagText(rep)),
					"repair on this replica what the error names (the row or table it lacks or duplicates), then START REPLICA (START SLAVE); "+
						"skipping the event (SET GLOBAL sql_slave_skip_counter=1) loses it. Until then its data stops at the error: do not promote it",
					fmt.Sprintf("replication from %s is broken: the SQL thread stopped on error %d", src, rep.SQLErrno))
			} else {
				hostProblem(sevDegraded, "replication_broken", rankBroken, h,
					fmt.Sprintf("replication from %s is broken: the IO thread stopped on error %d (%s)", src, rep.IOErrno, rep.LastError),
					"the source refused the replica or no longer has the events it needs (binary log purged: error 1236): re-seed it from a backup of the source, "+
						"or re-point it (CHANGE MASTER TO ... MASTER_USE_GTID=slave_pos), then START REPLICA; do not promote it meanwhile",
					fmt.Sprintf("replication from %s is broken: the IO thread stopped on error %d", src, rep.IOErrno))
			}
		case "stopped":
			hostProblem(sevDegraded, "replication_stopped", rankStopped, h,
				fmt.Sprintf("replication from %s is stopped without an error (IO thread %s, SQL thread %s): someone ran STOP REPLICA; lag %s",
					src, rep.IORunning, rep.SQLRunning, lagText(rep)),
				"START REPLICA (START SLAVE on MariaDB before 10.5.1 and MySQL before 8.0.22) on it: until then it falls behind, and a failover to it serves stale data")
		case "connecting":
			if down[rep.SourceHost] {
				continue // the source's own problem says why
			}
			what := fmt.Sprintf("its IO thread cannot reach its source %s and is retrying: %s", src, orUnknown(rep.LastError))
			fix := "the source answers this command but not the replica: check the network between them and the replication user's password and grants (the error names them); " +
				"the thread retries by itself (master_connect_retry), START REPLICA is not needed"
			if rep.SourceHost == "" {
				fix = "its source is not in the DSN's list: check that server and the network to it; the thread retries by itself, START REPLICA is not needed"
			}
			hostProblem(sevDegraded, "replication_connecting", rankConnecting, h, what, fix, "its IO thread cannot reach its source "+src+" (retrying)")
		}
	}

	var writers []string
	for _, h := range writable(r.Hosts) {
		writers = append(writers, h.Host)
	}
	listPrimary := ""
	if len(p.Order) > 0 {
		listPrimary = p.Order[0].Host
	}
	writeTarget := p.TargetSessionAttrs == attrs.ReadWrite || p.TargetSessionAttrs == attrs.Primary
	// No writer matters where a connection can be made (else no_host says it all), or
	// where the DSN wants a writer (then the two are one problem: no writer).
	noWriter := p.Writer == "" && anyReachable(r.Hosts) && (p.Connect != "" || writeTarget)
	switch {
	case noWriter:
		r.add(r.noWriterProblem(cfg, listPrimary, writeTarget))
	case len(writers) > 1:
		r.add(r.writersProblem(cfg))
	case len(writers) == 1 && writers[0] != listPrimary:
		what := "the writer is " + writers[0] + ", not the list's primary " + listPrimary
		// targetSessionAttrs=read-write first: it finds the writer after this promotion and
		// the next ones, where a new host order must be deployed to every service again.
		fix := "add targetSessionAttrs=read-write to the DSN: the driver then finds the writer wherever it is in the list, after this promotion and the next ones; " +
			"or put " + writers[0] + " first in the DSN (again after every promotion)"
		sev, short := sevDegraded, ""
		switch {
		case p.TargetSessionAttrs != attrs.Any:
			what += ": new connections find it (targetSessionAttrs=" + p.TargetSessionAttrs + ")"
			fix = "nothing is needed for the writes: targetSessionAttrs=" + p.TargetSessionAttrs + " finds " + writers[0] +
				" wherever it is; a new connection first tries " + listPrimary + " and passes it over, and putting " + writers[0] +
				" first in the DSN at a later deploy spares it that attempt"
		case p.Connect == writers[0] && !cfg.FailOverReadOnly:
			what += ": new connections go to it (targetSessionAttrs=any, failOverReadOnly=false), but the pool returns to " + listPrimary + " at fall-back"
		default:
			// For a service that writes, every write fails: unusable.
			sev = sevUnusable
			e := r.refusalErrno(cfg, p.Connect)
			what += ": with targetSessionAttrs=any new connections go to " + orNone(p.Connect) + " and every write there fails with " + e
			short = what[:strings.Index(what, ": with")] + ": every write fails with error " + strings.Fields(e)[0] + " on " + orNone(p.Connect)
		}
		r.add(problem{Severity: sev, Kind: "writer_not_first", rank: rankWriterNotFirst, index: -1, Problem: what, Fix: fix, short: short})
	}
	if p.Connect == "" && !(noWriter && writeTarget) {
		r.add(problem{Severity: sevUnusable, Kind: "no_host", rank: rankNoHost, index: -1,
			Problem: "a new connection would fail with *failover.NoHostAvailableError: " + p.Why,
			Fix:     "bring a host up (the hosts' problems below say why each is not used), or make one qualify for targetSessionAttrs=" + p.TargetSessionAttrs})
	}
}

// noWriterProblem rates a pool without a writer by what the DSN's callers see:
// targetSessionAttrs read-write and primary get *failover.NoHostAvailableError for every
// new connection and write; any puts new connections on a read-only host, where every
// write fails with 1792 or 1290 (unusable for a service that writes); the standby
// targets only read.
func (r *report) noWriterProblem(cfg *dsn.Config, listPrimary string, writeTarget bool) problem {
	p := r.Plan
	var primary hostReport
	for _, h := range r.Hosts {
		if h.Host == listPrimary {
			primary = h
		}
	}
	galera := false
	for _, h := range r.Hosts {
		galera = galera || h.Cluster == "galera"
	}
	var cause string
	switch {
	case galera:
		cause = "no Galera node is ready (see each node's problem)"
	case !primary.Reachable:
		cause = "the list's primary " + primary.Host + " does not answer (" + failureWord(primary) + ") and no other host is writable"
	case primary.NotReady != "":
		cause = "the list's primary " + primary.Host + " is not ready (" + primary.NotReady + ") and no other host is writable"
	default:
		cause = "the list's primary " + primary.Host + " is read-only (read_only=" + primary.ReadOnly + ") and no other host is writable: nothing was promoted (a switchover that stopped halfway, or read_only set by hand)"
	}
	pr := problem{Severity: sevUnusable, Kind: "no_writer", rank: rankNoWriter, index: -1}
	short := "no writer"
	switch {
	case galera:
		short += " (no Galera node is ready)"
	case !primary.Reachable:
		short += " (the primary " + primary.Host + " does not answer: " + failureWord(primary) + ")"
	case primary.NotReady != "":
		short += " (the primary " + primary.Host + " is not ready)"
	default:
		short += " (the primary " + primary.Host + " is read-only, nothing promoted)"
	}
	switch {
	case writeTarget:
		short += ": every write fails with *failover.NoHostAvailableError"
	case p.TargetSessionAttrs == attrs.Any:
		short += ": every write fails with error " + strings.Fields(r.refusalErrno(cfg, p.Connect))[0] + " on " + orNone(p.Connect)
	default:
		short += ": this DSN only reads"
	}
	if p.Promote != "" && !galera {
		short += "; to promote: " + p.Promote
	}
	pr.short = short
	switch {
	case writeTarget:
		pr.Problem = "no writer: " + cause + ". Every write fails: with targetSessionAttrs=" + p.TargetSessionAttrs +
			" new connections, and connections whose host failed, get *failover.NoHostAvailableError (no host qualifies) after retriesAllDown passes or at the caller's deadline"
	case p.TargetSessionAttrs == attrs.Any:
		pr.Problem = "no writer: " + cause + ". Every write fails: with targetSessionAttrs=any new connections go to " + orNone(p.Connect) +
			", a read-only host, where writes get error " + r.refusalErrno(cfg, p.Connect) + "; reads work"
	default:
		pr.Severity = sevDegraded
		pr.Problem = "no writer: " + cause + ". This DSN only reads (targetSessionAttrs=" + p.TargetSessionAttrs + "): its callers are not affected, but the replicas get no new data"
	}
	switch {
	case galera:
		pr.Fix = "a Galera cluster takes writes again once a node is in the Primary component and synced: act on the nodes' problems below"
		return pr
	case p.Promote == "":
		pr.Fix = "bring " + primary.Host + " back, or make a host writable (SET GLOBAL read_only=OFF): no replica qualifies for a promotion (none is reachable, read-only and replicating without an error)"
	case !primary.Reachable || primary.NotReady != "":
		pr.Fix = "bring " + primary.Host + " back if it can be soon (its replicas resume from it, and the pool returns to it); if not, promote " + p.Promote + " (" + p.PromoteWhy + "): " + promoteSteps(p.Promote)
	default:
		pr.Fix = "if " + primary.Host + " is still the replicas' source, make it writable again (SET GLOBAL read_only=OFF on it); if it was being demoted, finish the promotion of " +
			p.Promote + " (" + p.PromoteWhy + "): " + promoteSteps(p.Promote)
	}
	if writeTarget {
		pr.Fix += "; with targetSessionAttrs=" + p.TargetSessionAttrs + " the driver finds the new writer at its next pass over the hosts, without a restart"
	} else if p.TargetSessionAttrs == attrs.Any {
		pr.Fix += "; with targetSessionAttrs=any the pool writes to the list's first host: add targetSessionAttrs=read-write, which finds the new writer wherever it is (now and after every later promotion), or put the new writer first in the DSN"
	}
	return pr
}

// promoteSteps is how to promote host by hand (an orchestrator does the same).
func promoteSteps(host string) string {
	return "on " + host + " STOP REPLICA; RESET REPLICA ALL; SET GLOBAL read_only=OFF, then point the other replicas at it " +
		"(CHANGE MASTER TO MASTER_HOST='<its address>', MASTER_USE_GTID=slave_pos; START REPLICA)"
}

// refusalErrno says which error a write gets on host through this DSN: 1290 where the
// server is read-only (read_only=ON: it refuses the write first), 1792 on a writable
// secondary where failOverReadOnly makes the session read-only.
func (r *report) refusalErrno(cfg *dsn.Config, host string) string {
	for _, h := range r.Hosts {
		if h.Host == host && h.role == failover.RolePrimary && cfg.FailOverReadOnly && len(cfg.Hosts) > 0 && host != cfg.Hosts[0].Addr() {
			return "1792 (failOverReadOnly=true makes a session on a secondary read-only, writable as the server is)"
		}
	}
	return "1290 (the server's read_only=ON)"
}

// downWords is what an unreachable host's problem says, and its fix, by the kind of
// failure (a frozen host is not a stopped one).
func downWords(h hostReport, timeout float64, cfg *dsn.Config) (what, fix string) {
	readTimeout := "readTimeout"
	if cfg.MySQL != nil && cfg.MySQL.ReadTimeout > 0 {
		readTimeout += " (" + cfg.MySQL.ReadTimeout.String() + ")"
	}
	switch h.Failure {
	case "refused":
		return "does not answer: connection refused (" + h.Error + "): nothing listens on the port, the server is not running",
			"start the server; meanwhile the driver skips the host (backoff, or its probes)"
	case "closed":
		return "does not answer: the connection was closed before the handshake ended (" + h.Error + "): the server behind a proxy or load balancer is down, or something between closes the connection",
			"start the server behind the address (a proxy or load balancer accepts the connection and closes it while its backend is down: its log names the backend), or find what closes the connection; meanwhile the driver skips the host"
	case "blocked":
		return "refuses this client: " + h.Error + ": the server blocked the client's address after max_connect_errors failed connections",
			"run FLUSH HOSTS on the server (mariadb-admin flush-hosts), find what opened connections without finishing them (a health check that only opens TCP), and raise max_connect_errors if it must; meanwhile the driver skips the host"
	case "timeout":
		return fmt.Sprintf("does not answer within %gs (%s): it is frozen or hung (a stopped process, a saturated machine, a stuck disk), or the network drops its packets", timeout, h.Error),
			"look at the machine before starting anything: is the server process running and answering locally (load, swap, disk, a lock)? " +
				"A hung server is not fixed by starting it again: end it (kill -9 if it must) and start it; if it answers locally, check the network path. " +
				"The driver leaves it after " + readTimeout + " and skips it meanwhile"
	case "auth":
		return "refuses the user: " + h.Error,
			"fix the user, password, grants or database named in the error (a walk stops at access denied: every host would say the same)"
	case "full":
		return "takes no more connections: " + h.Error,
			"raise max_connections, or lower the pools' sizes (SetMaxOpenConns); the driver waits for a free slot rather than leave a full host"
	case "tls":
		return "unreachable over TLS: " + h.Error, "fix the tls= setting or the server's certificate named in the error"
	case "dns":
		return "unreachable: its name does not resolve: " + h.Error, "fix the host name in the DSN, or the resolver"
	}
	return "unreachable: " + h.Error, "fix the network, the user or the TLS settings named in the error; meanwhile the driver skips the host"
}

// failureWord is an unreachable host's failure in a few words.
func failureWord(h hostReport) string {
	switch h.Failure {
	case "refused":
		return "connection refused: not running"
	case "closed":
		return "connection closed before the handshake"
	case "timeout":
		return "no answer: frozen or hung"
	}
	return h.Error
}

// waitingWords says that the replicas ws of the down host h cannot reach it either.
func waitingWords(h hostReport, ws []hostReport) string {
	names := make([]string, len(ws))
	presumed := false
	for i, w := range ws {
		names[i] = w.Host
		presumed = presumed || w.Replication.SourcePresumed
	}
	s := "its replicas " + strings.Join(names, ", ") + " cannot reach it either (IO thread connecting, retrying"
	if e := ws[0].Replication.LastError; e != "" {
		s += ": " + e
	}
	s += ")"
	if presumed {
		s += "; they replicate from " + ws[0].Replication.Source + ", taken to be this host (the one whose server_id check could not read)"
	}
	return s
}

// sourceName names a replica's source: its host in the DSN, or its address.
func sourceName(rep replication) string {
	switch {
	case rep.SourceHost == "":
		return orUnknown(rep.Source)
	case rep.SourcePresumed:
		return rep.Source + " (presumably " + rep.SourceHost + " of the DSN)"
	case !strings.EqualFold(rep.SourceHost, rep.Source) && rep.Source != "":
		return rep.SourceHost + " (" + rep.Source + ")"
	}
	return rep.SourceHost
}

func anyReachable(hosts []hostReport) bool {
	for _, h := range hosts {
		if h.Reachable {
			return true
		}
	}
	return false
}

// writersProblem is two (or more) writable hosts of a replication cluster: a split
// brain, an old primary back unfenced after a promotion or a replica whose read_only was
// forgotten. It names every writer with the replicas that follow it, the one the driver
// writes to (the one they follow, then the list's first), and the fix: fence the others.
// Unusable when new connections of this DSN write to a writer no replica follows
// (targetSessionAttrs any on a list whose first host is such a one); degraded otherwise,
// the driver writing to the followed one.
func (r *report) writersProblem(cfg *dsn.Config) problem {
	ws := writable(r.Hosts)
	w := ws[chooseWriter(r.Hosts, ws)]
	followed := len(followers(r.Hosts, w)) > 0
	var parts, others []string
	for _, h := range ws {
		f := followers(r.Hosts, h)
		switch len(f) {
		case 0:
			parts = append(parts, h.Host+" (followed by no replica)")
		default:
			parts = append(parts, h.Host+" (followed by "+strings.Join(f, ", ")+")")
		}
		if h.Host != w.Host {
			others = append(others, h.Host)
		}
	}
	pr := problem{Severity: sevDegraded, Kind: "writers", rank: rankWriters, index: -1}
	pr.Problem = "two writers: " + strings.Join(parts, " and ") + " are all writable (read_only=OFF): writes to one never reach the other, and their data diverge"
	pr.short = "two writers: " + strings.Join(writersNames(ws), " and ") + " are writable"
	who := "fence " + strings.Join(others, ", ") + ", which no replica follows"
	if !followed {
		who = "fence every writable host but the one the replicas should follow (check had no replica to tell: " +
			"grant REPLICA MONITOR, or REPLICATION CLIENT on MySQL, to read their source)"
	}
	pr.Fix = who + ": SET GLOBAL read_only=ON on it (super_read_only=ON on MySQL), or stop it"
	switch p := r.Plan; {
	case p.TargetSessionAttrs == attrs.ReadWrite || p.TargetSessionAttrs == attrs.Primary:
		pr.Problem += "; with targetSessionAttrs=" + p.TargetSessionAttrs + " the driver writes to " + w.Host + ", " + whyWriter(followed)
	case p.Connect != "" && p.Connect != w.Host && slices.Contains(writersNames(ws), p.Connect):
		pr.Severity = sevUnusable
		pr.Problem += "; with targetSessionAttrs=" + p.TargetSessionAttrs + " new connections write to " + p.Connect + ", which no replica follows"
		pr.short += ": new connections write to " + p.Connect + ", which no replica follows"
		pr.Fix += "; and use targetSessionAttrs=read-write, which writes to the one the replicas follow"
	}
	if followed {
		pr.short += " (fence " + strings.Join(others, ", ") + ")"
	}
	return pr
}

// whyWriter says why the driver writes to the writer it chose.
func whyWriter(followed bool) string {
	if followed {
		return "the one the replicas follow"
	}
	return "the list's first (no replica says whom it follows)"
}

func writersNames(ws []hostReport) []string {
	out := make([]string, len(ws))
	for i, h := range ws {
		out[i] = h.Host
	}
	return out
}

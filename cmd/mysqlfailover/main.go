// Command mysqlfailover is the operator's tool of the mysqlfailover driver.
//
//	cd cmd/mysqlfailover && go install .  # from a checkout of the repository
//	mysqlfailover check [--json] [--timeout 3s] "app:secret@tcp(db1:3306,db2:3306)/shop?readTimeout=2s"
//
// Its go.mod replaces the library with the checkout (../..), which `go install
// ...@version` refuses; once the library and this module are tagged, the replace gives
// way to the tag and `go install github.com/mysqlfailover/mysqlfailover/cmd/mysqlfailover@latest`
// works.
//
// # check
//
// check reads the DSN as the driver does (dsn.Parse: a typo'd key, a localDC
// that matches no host's label and every other DSN error are reported with the driver's
// own message, which names the right key or the known DCs), then connects to every host
// of the list at once, each with go-sql-driver and the DSN's own settings (user, TLS,
// parameters), and shows per host:
//
//   - reachable or not, and the handshake time (dial, TLS, authentication);
//   - the server version (SELECT VERSION());
//   - the role: read_only, super_read_only (MySQL; "n/a" on MariaDB, which has none) and
//     transaction_read_only, read as the driver's role check reads them (SHOW GLOBAL
//     VARIABLES, no privilege needed), and the failover.Role they make;
//   - the replication source and lag (SHOW REPLICA STATUS, SHOW SLAVE STATUS on older
//     servers): Source_Host:Source_Port (Master_Host:Master_Port), the IO and SQL
//     threads, Seconds_Behind_Source. It needs the REPLICATION CLIENT privilege (MySQL,
//     MariaDB before 10.5.9; SUPER works too) or REPLICA MONITOR (MariaDB 10.5.9 and
//     later); without it the source and lag read "unknown (no privilege)";
//   - the server_id and the applied GTID position (gtid_current_pos on MariaDB,
//     gtid_executed on MySQL), by which replicas are matched to their source (a replica
//     names its source by the address it uses, which may not be the DSN's: a proxy, an
//     internal name) and the replica to promote is chosen;
//   - the cluster type and whether the server is ready for application use, read as the
//     driver reads it (package failover, Readiness; the DSN's cluster option): for a
//     Galera node its wsrep status (SHOW GLOBAL STATUS: wsrep_ready,
//     wsrep_cluster_status, wsrep_local_state, wsrep_cluster_size) and wsrep_desync,
//     wsrep_reject_queries; for a Group Replication member its MEMBER_STATE; for every
//     server offline_mode. A node that is not ready (outside the Primary component,
//     desynced, rejecting queries, not synced, a minority cluster) is named with its
//     reason: the driver uses no such host (failover.HostNotReady);
//   - the DC label of the DSN;
//   - whether the session uses TLS (SHOW SESSION STATUS LIKE 'Ssl_cipher');
//   - where the host comes from ("origin"): the DSN, or with discoverHosts=true
//     "discovered". check then reads the members the cluster reports as the driver
//     does, from the writable primary (SHOW REPLICA HOSTS) or the first ready Galera
//     node or group member, and checks each member the DSN does not list (a member
//     reported under another address that has a DSN host's server_id, server_uuid or
//     Galera node UUID is that host) as it checks the DSN's hosts, naming the host that
//     reported it and the address it reported; the plan has them after the DSN's
//     hosts. A read the server refuses (the privilege it needs is named) and members
//     reported without an address to dial (Galera's AUTO) are problems of kind
//     discovery.
//
// It then shows the host plan a new pool of the driver would use now, by the rules of
// package failover (Host order, Roles, Data centres, Readiness): the order (the list's
// primary first, with localDC the local hosts first and usedHostsPerRemoteDC remote ones
// per DC, the rest ignored), which hosts qualify for targetSessionAttrs, the writer (for
// Galera the first ready node; of several writable hosts the one most replicas follow, as
// the driver chooses), the host the driver would connect to and, when there is
// no writer, the replica to promote: the reachable, read-only one furthest ahead by its
// GTID position (then by what it has received, then by its lag).
//
// # Problems
//
// The output leads with one line: the status and the cause to act on. The problems
// follow, the most severe first (unusable before degraded), and within a severity in
// the order an operator acts on them: the DSN; no host for a new connection; no writer;
// several writers; hosts down or not ready; replication broken, stopped, or unable to
// reach its source; a writer that is not the list's primary; the configuration (a
// single host, readTimeout unset). Each has its fix, worded for what was seen:
//
//   - a host that refuses the connection is not running (start it); one that does not
//     answer within --timeout is frozen or hung (look at the machine before starting
//     anything: a hung server is not fixed by starting it);
//   - a replica whose IO thread cannot reach a source that is itself down is explained
//     by the source's problem (it resumes by itself once the source answers): no
//     "START REPLICA" is advised for it; one that cannot reach a source that answers is
//     a network or credentials problem between them, and it retries by itself;
//     replication stopped by hand wants START REPLICA; one stopped on an error wants
//     the error repaired first, and is never proposed for promotion;
//   - no writer is rated by what the DSN's callers see: with targetSessionAttrs
//     read-write or primary every new connection and write gets
//     *failover.NoHostAvailableError; with any, new connections go to a read-only
//     host, where every write fails with 1290 (the server's read_only): for a service
//     that writes, both are unusable. With the standby targets, which only read, it is
//     degraded. The fix names the replica to promote;
//   - a writer the list does not have first is unusable with any too when every write
//     fails: new connections go to a read-only host (1290), or to the writer itself as a
//     secondary, whose sessions failOverReadOnly makes read-only (1792). The fix offers
//     targetSessionAttrs=read-write first, which finds the writer after this promotion
//     and the next ones, then a new host order (to deploy again after every promotion);
//     with read-write set, nothing is needed for the writes;
//   - two writers (hosts of a replication cluster both writable: an old primary back
//     with read_only=OFF after a promotion, a replica whose read_only was forgotten) are
//     one problem naming every writer with the replicas that follow it, and the fix:
//     fence the ones no replica follows (SET GLOBAL read_only=ON, or stop them). It is
//     unusable when this DSN's new connections write to a writer no replica follows
//     (targetSessionAttrs any, that host first in the list), else degraded: with
//     read-write or primary the driver writes to the one the replicas follow;
//   - a host that closes the connection before the handshake (a proxy or load
//     balancer in front of a stopped server) is told to be started, not FLUSH HOSTS,
//     which is the fix of a server that blocked the client's address (1129).
//
// The headline is the first problem; when more follow it says how many, in a sentence
// of its own ("... to promote: db3:3306. 1 more problem below").
//
// Each host is bounded by --timeout (default 3s: dial, handshake and each query), so a
// frozen or blackholed host cannot hang the command; every host is checked at the same
// time, so the whole check takes about one timeout at worst.
//
// --json prints one JSON object instead of text (the fields of the report type): the
// headline, the hosts, the plan (with the replica to promote) and the problems in the
// same order, each with a kind (no_writer, down, not_ready, replication_broken, ...)
// for programs. The password is never printed: the DSN is shown redacted, and server
// errors carry none.
//
// Exit codes: 0 healthy (and for --help); 1 degraded (the driver works, but a host is
// down or not ready, the roles are not as the list says, replication is not running, or
// the configuration weakens failover); 2 unusable (the DSN is rejected, no host
// qualifies for a new connection, or every write fails, except for a DSN that only
// reads); 3 for a usage error.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"time"
)

const usage = `usage: mysqlfailover check [--json] [--timeout 3s] "<dsn>"

Checks every host of a mysqlfailover DSN: reachability and handshake time, version,
role (read_only, super_read_only), replication source and lag, DC label, TLS; shows the
host plan the driver would use now, and the problems found with their fixes.
The first line says the status and the cause to act on; the problems follow, most
severe first, each with its fix.
Exit codes: 0 healthy, 1 degraded, 2 unusable, 3 usage error (0 for --help).
`

func main() { os.Exit(run(context.Background(), os.Args[1:], os.Stdout, os.Stderr)) }

// run is the command with its arguments (without the program name); it returns the exit
// code.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) > 0 && isHelp(args[0]) {
		fmt.Fprint(stdout, usage)
		return exitHealthy
	}
	if len(args) == 0 || args[0] != "check" {
		fmt.Fprint(stderr, usage)
		return exitUsage
	}
	fs := flag.NewFlagSet("check", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { fmt.Fprint(fs.Output(), usage); fs.PrintDefaults() }
	asJSON := fs.Bool("json", false, "print one JSON object instead of text")
	timeout := fs.Duration("timeout", 3*time.Second, "bound for each host: dial, handshake and each query")
	for _, a := range args[1:] {
		if isHelp(a) && a != "help" {
			// Asked for: the usage goes to stdout, and it is no error.
			fs.SetOutput(stdout)
			fs.Usage()
			return exitHealthy
		}
	}
	// Flags may come before or after the DSN: parse, take one argument, parse the rest.
	var dsns []string
	for rest := args[1:]; ; {
		if err := fs.Parse(rest); err != nil {
			return exitUsage
		}
		if fs.NArg() == 0 {
			break
		}
		dsns = append(dsns, fs.Arg(0))
		rest = fs.Args()[1:]
	}
	if len(dsns) != 1 || *timeout <= 0 {
		fs.Usage()
		return exitUsage
	}
	r := check(ctx, dsns[0], *timeout)
	var err error
	if *asJSON {
		err = r.writeJSON(stdout)
	} else {
		err = r.writeText(stdout)
	}
	if err != nil {
		fmt.Fprintln(stderr, "mysqlfailover check:", err)
	}
	return r.ExitCode
}

// isHelp reports whether arg asks for the usage (help, -h, --help).
func isHelp(arg string) bool {
	switch arg {
	case "help", "-h", "-help", "--help":
		return true
	}
	return false
}

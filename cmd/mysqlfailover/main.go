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
// check reads the DSN as the driver does (mysqlfailover.ParseDSN: a typo'd key, a localDC
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
//   - the DC label of the DSN;
//   - whether the session uses TLS (SHOW SESSION STATUS LIKE 'Ssl_cipher').
//
// It then shows the host plan a new pool of the driver would use now, by the rules of
// package failover (Host order, Roles, Data centres): the order (the list's primary
// first, with localDC the local hosts first and usedHostsPerRemoteDC remote ones per DC,
// the rest ignored), which hosts qualify for targetSessionAttrs, the writer, and the host
// the driver would connect to. Last, the problems found, each with its fix: a single host
// (nothing to fail over to), readTimeout unset, hosts down, no writer or two, a writer that
// is not the list's primary, replication stopped.
//
// Each host is bounded by --timeout (default 3s: dial, handshake and each query), so a
// frozen or blackholed host cannot hang the command; every host is checked at the same
// time, so the whole check takes about one timeout at worst.
//
// --json prints one JSON object instead of text (the fields of the report type). The
// password is never printed: the DSN is shown redacted, and server errors carry none.
//
// Exit codes: 0 healthy; 1 degraded (the driver works, but a host is down, the roles are
// not as the list says, or the configuration weakens failover); 2 unusable (the DSN is
// rejected, or no host qualifies for a new connection); 3 for a usage error.
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
Exit codes: 0 healthy, 1 degraded, 2 unusable, 3 usage error.
`

func main() { os.Exit(run(context.Background(), os.Args[1:], os.Stdout, os.Stderr)) }

// run is the command with its arguments (without the program name); it returns the exit
// code.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 || args[0] != "check" {
		fmt.Fprint(stderr, usage)
		return exitUsage
	}
	fs := flag.NewFlagSet("check", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { fmt.Fprint(stderr, usage); fs.PrintDefaults() }
	asJSON := fs.Bool("json", false, "print one JSON object instead of text")
	timeout := fs.Duration("timeout", 3*time.Second, "bound for each host: dial, handshake and each query")
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

package conn

import (
	"context"
	"database/sql/driver"

	"github.com/mysqlfailover/mysqlfailover/internal/dialect"
	"github.com/mysqlfailover/mysqlfailover/internal/stmt"
)

// readOnlyOn is the effective read-only state on host, as Connector/J
// MultiHostConnectionProxy.switchCurrentConnectionTo: on the primary the explicit flag;
// on a secondary true with failOverReadOnly (sequence A), else the explicit flag
// (sequence B: the explicit flag, or else the previous connection's state, which here is
// always the explicit flag because nothing else changes it).
func (p *prim) readOnlyOn(host int) bool {
	// failOverReadOnly is for a secondary that is a replica: a Galera node is as much a
	// writer as the primary it stands in for (cluster.MultiWriter).
	if host != p.cl.Primary() && p.cfg.FailOverReadOnly && !p.cl.MultiWriter() {
		return true
	}
	return p.explicitRO
}

func readOnlySQL(ro bool) string {
	if ro {
		return "SET SESSION TRANSACTION READ ONLY"
	}
	return "SET SESSION TRANSACTION READ WRITE"
}

// setup is the cluster.SetupFunc: it restores this connection's session state on a new
// physical connection to host, read-only first, then the current database, then
// autocommit and completion_type where a SET changed them from the DSN's (they change
// what the next statements mean for transactions). A new session starts READ WRITE (the
// server's default), so READ WRITE is not sent. Everything set through DSN parameters
// (system variables, charset, collation, time zone) go-sql-driver applies itself on
// every new physical connection.
func (p *prim) setup(ctx context.Context, phys driver.Conn, host int) error {
	if p.readOnlyOn(host) {
		if err := p.exec(ctx, phys, readOnlySQL(true)); err != nil {
			return err
		}
	}
	if p.db != p.cfg.DBName && p.db != "" {
		if err := p.exec(ctx, phys, "USE "+dialect.QuoteIdent(p.db)); err != nil {
			return err
		}
	}
	if ac := p.st.ac; ac != p.dsnAC && ac != acUnknown {
		if err := p.exec(ctx, phys, autocommitSQL[ac]); err != nil {
			return err
		}
	}
	if ct := p.st.ct; ct != p.dsnCT && ct != ctUnknown {
		if err := p.exec(ctx, phys, completionSQL[ct]); err != nil {
			return err
		}
	}
	return nil
}

var (
	autocommitSQL = [...]string{acOn: "SET autocommit = 1", acOff: "SET autocommit = 0"}
	completionSQL = [...]string{ctNoChain: "SET completion_type = 0", ctChain: "SET completion_type = 1", ctRelease: "SET completion_type = 2"}
)

// exec runs an internal statement on phys.
func (p *prim) exec(ctx context.Context, phys driver.Conn, query string) error {
	if phys == p.phys {
		p.mark()
	}
	return execOn(ctx, phys, query)
}

// execOn runs an internal statement on phys, a physical connection of any session.
func execOn(ctx context.Context, phys driver.Conn, query string) error {
	if e, ok := phys.(driver.ExecerContext); ok {
		_, err := e.ExecContext(ctx, query, nil)
		return err
	}
	s, err := phys.Prepare(query)
	if err != nil {
		return err
	}
	defer s.Close()
	_, err = s.Exec(nil) //nolint:staticcheck // fallback for drivers without ExecerContext
	return err
}

// SetReadOnly records the explicit read-only flag and applies the resulting state with
// SET SESSION TRANSACTION READ ONLY / READ WRITE. On a secondary with failOverReadOnly
// the connection stays read-only and the flag applies once it is back on the primary, as
// Connector/J (Bug#58706, testFailoverReadOnly). A communication failure moves the
// connection like any statement; the new session gets the new state.
//
// With replica reads SetReadOnly(true) is a read intent: the connection's reads go to
// the replicas, and the call neither waits for the primary session nor fails with it (a
// writer that died or hangs). The primary session gets the state before its next
// statement (applyReadOnly), whose error, if any, that statement returns.
func (c *Conn) SetReadOnly(ctx context.Context, readOnly bool) error {
	c.explicitRO = readOnly
	if c.sp != nil {
		c.roPending = c.phys != nil
		return nil
	}
	return c.attempts(ctx, &call{kind: kSession, fails: kSession, retry: stmt.RetryAlways}, func(*rsession) (bool, error) {
		want := c.prim.readOnlyOn(c.host)
		if want == c.appliedRO {
			return true, nil // also after a switch: setup applied the new state
		}
		err := c.prim.exec(ctx, c.phys, readOnlySQL(want))
		if err == nil {
			c.appliedRO = want
		}
		return err == nil, err
	})
}

// applyReadOnly applies to the primary session, before a statement is sent there, the
// read-only state that SetReadOnly or ResetSession left pending (replica reads). A
// failure is the statement's: a communication error moves the connection (the new
// session gets the state from setup), and the statement runs there unless it was inside
// a transaction; another error is returned.
func (c *Conn) applyReadOnly(ctx context.Context) error {
	if want := c.prim.readOnlyOn(c.host); want != c.appliedRO {
		if err := c.prim.exec(ctx, c.phys, readOnlySQL(want)); err != nil {
			if retry, out := c.fail(ctx, c.epoch, err, stmt.RetryAlways, kSession); !retry {
				return out
			}
			return nil // on a new session, which setup set up
		}
		c.appliedRO = want
	}
	c.roPending = false
	return nil
}

// ReadOnly reports the connection's effective read-only state on its current host.
func (c *Conn) ReadOnly() bool { return c.prim.readOnlyOn(c.host) }

// Host returns the host:port the connection is on now: "" while it has no physical
// connection (after a failover that found no host, or a cancel that closed it), until the
// next statement connects it again.
func (c *Conn) Host() string {
	if c.phys == nil {
		return ""
	}
	return c.cl.Host(c.host)
}

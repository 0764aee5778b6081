package integration

import (
	"crypto/x509"
	sqldriver "database/sql/driver"
	"encoding/binary"
	"errors"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/mysqlfailover/mysqlfailover/failover"
	"github.com/mysqlfailover/mysqlfailover/integration/harness"
)

// Connect failures that belong to one host. A TLS handshake or
// verification error (an expired certificate, a certificate for another name, a server
// without TLS) or a malformed greeting counts against that host only: the walk goes on to
// the next host, and when none works the *failover.NoHostAvailableError lists each host
// with its own error. Bad credentials and an unknown database keep today's rule: every
// host would say the same, so the walk stops at the first.
//
// A 4-node cluster with a CA made for the test: node 1 serves an expired certificate,
// node 2 a good one (127.0.0.1, localhost), node 3 one for another name, node 4 no TLS at
// all (MariaDB 10.11 enables TLS only with --ssl-cert/--ssl-key); and a fake server that
// answers every connection with a greeting of protocol version 9.

// greetingServer is a TCP server on loopback that answers every connection with a
// MySQL packet announcing protocol version 9 and closes it.
type greetingServer struct {
	l  net.Listener
	wg sync.WaitGroup
}

func startGreetingServer(t *testing.T) *greetingServer {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	must(t, err)
	s := &greetingServer{l: l}
	body := append([]byte{9}, "bogus-server\x00"...)
	pkt := make([]byte, 4, 4+len(body))
	binary.LittleEndian.PutUint32(pkt, uint32(len(body))) // 3-byte length, sequence 0
	pkt[3] = 0
	pkt = append(pkt, body...)
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		for {
			cn, err := l.Accept()
			if err != nil {
				return
			}
			cn.SetDeadline(time.Now().Add(2 * time.Second))
			cn.Write(pkt)
			cn.Close()
		}
	}()
	t.Cleanup(func() {
		l.Close()
		s.wg.Wait()
	})
	return s
}

func (s *greetingServer) addr() string { return s.l.Addr().String() }

// appDSNFor is the app user's DSN for these host addresses, in this order.
func appDSNFor(addrs []string, db, params string) string {
	return harness.AppUser + ":" + harness.AppPassword + "@tcp(" + strings.Join(addrs, ",") + ")/" + db + "?" + params
}

// connectErrOf is the error of the first failed connection attempt on addr the pool
// recorded.
func connectErrOf(p *faultPool, addr string) error {
	for _, e := range p.ev.of(failover.EventConnect, addr, time.Time{}) {
		if e.Err != nil {
			return e.Err
		}
	}
	return nil
}

func TestTLSPerHostErrors(t *testing.T) {
	ca := newTestCA(t)
	expired := goodServerCert()
	expired.notBefore, expired.notAfter = time.Now().Add(-48*time.Hour), time.Now().Add(-24*time.Hour)
	wrongName := goodServerCert()
	wrongName.dns, wrongName.ips = []string{"db3.elsewhere.example"}, []net.IP{net.IPv4(10, 9, 9, 9)}
	c := harness.Start(t, 4,
		harness.WithNodeArgs(1, ca.issue(t, "node1-expired", expired)...),
		harness.WithNodeArgs(2, ca.issue(t, "node2-good", goodServerCert())...),
		harness.WithNodeArgs(3, ca.issue(t, "node3-wrong-name", wrongName)...))
	ctx := ctxT(t, time.Minute)
	// A database the app user may use but that does not exist: 1049, not 1044.
	must(t, c.Node(1).Exec(ctx, "GRANT ALL ON app_missing.* TO '"+harness.AppUser+"'@'%'"))
	must(t, c.WaitReplicasCaughtUp(ctx))
	for i, want := range []string{"YES", "YES", "YES", "DISABLED"} {
		have, err := c.Node(i+1).QueryString(ctx, "SELECT @@have_ssl")
		must(t, err)
		if have != want {
			t.Fatalf("node %d: have_ssl=%s, want %s", i+1, have, want)
		}
	}
	tlsName := "mysqlfailover-integration-tls"
	must(t, mysql.RegisterTLSConfig(tlsName, ca.clientConfig()))
	t.Cleanup(func() { mysql.DeregisterTLSConfig(tlsName) })
	fake := startGreetingServer(t)
	p1, p2, p3, p4 := c.Node(1).ProxyAddr(), c.Node(2).ProxyAddr(), c.Node(3).ProxyAddr(), c.Node(4).ProxyAddr()
	params := "tls=" + tlsName + "&hostTimeout=2s&retriesAllDown=0&secondsBeforeRetryMaster=3600&queriesBeforeRetryMaster=0"

	isExpired := func(err error) bool {
		var ce x509.CertificateInvalidError
		return errors.As(err, &ce) && ce.Reason == x509.Expired
	}
	isWrongName := func(err error) bool {
		var he x509.HostnameError
		return errors.As(err, &he)
	}
	isNoTLS := func(err error) bool { return errors.Is(err, mysql.ErrNoTLS) }
	isMalformed := func(err error) bool { return err != nil && strings.Contains(err.Error(), "protocol version") }

	// One bad host first, node 2 next: the walk skips the bad host with its own error
	// and lands on node 2.
	for _, tc := range []struct {
		name string
		bad  string
		want func(error) bool
	}{
		{"expired-certificate", p1, isExpired},
		{"wrong-name", p3, isWrongName},
		{"no-tls", p4, isNoTLS},
		{"malformed-greeting", fake.addr(), isMalformed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := openFaultPool(t, appDSNFor([]string{tc.bad, p2}, harness.AppDB, params))
			begin := time.Now()
			node, err := nodeOf(ctx, c, p.db)
			took := time.Since(begin)
			badErr := connectErrOf(p, tc.bad)
			t.Logf("first statement: node %d, %v; the bad host's connect error: %v", node, err, badErr)
			if err != nil || node != 2 {
				t.Errorf("first statement with %s first in the list: node %d, %s %v; want node 2", tc.name, node, errKind(err), err)
			}
			if !tc.want(badErr) {
				t.Errorf("the bad host's connect error is %T %v, want the %s error", badErr, badErr, tc.name)
			}
			if a := p.active(c); a != 2 {
				t.Errorf("Connector.Stats().Active is node %d, want node 2", a)
			}
			t.Logf("FIGURE %s: first_statement_node=%d", t.Name(), node)
			t.Logf("FIGURE %s: first_statement_ms=%d", t.Name(), took.Milliseconds())
			t.Logf("FIGURE %s: caller_error=%s", t.Name(), errKind(err))
		})
	}

	// Every host bad: one NoHostAvailableError naming each host with its own error.
	t.Run("all-bad", func(t *testing.T) {
		hosts := []string{p1, p3, p4, fake.addr()}
		wants := []func(error) bool{isExpired, isWrongName, isNoTLS, isMalformed}
		p := openFaultPool(t, appDSNFor(hosts, harness.AppDB, params))
		begin := time.Now()
		_, err := nodeOf(ctx, c, p.db)
		took := time.Since(begin)
		t.Logf("every host bad: %v", err)
		var nh *failover.NoHostAvailableError
		switch {
		case err == nil:
			t.Errorf("a statement succeeded with every host bad")
		case !errors.As(err, &nh):
			t.Errorf("%T %v, want a *failover.NoHostAvailableError naming every host", err, err)
		case len(nh.Hosts) != len(hosts):
			t.Errorf("NoHostAvailableError lists %d hosts, want %d: %v", len(nh.Hosts), len(hosts), nh)
		default:
			for k, h := range nh.Hosts {
				if h.Host != hosts[k] || !wants[k](h.Err) {
					t.Errorf("host %d of the error: %s: %T %v; want %s with its own TLS or greeting error", k+1, h.Host, h.Err, h.Err, hosts[k])
				}
			}
		}
		if errors.Is(err, sqldriver.ErrBadConn) {
			t.Errorf("%v matches driver.ErrBadConn", err)
		}
		for _, h := range hosts {
			if err != nil && !strings.Contains(err.Error(), h) {
				t.Errorf("the error does not name %s: %v", h, err)
			}
		}
		t.Logf("FIGURE %s: caller_error=%s", t.Name(), errKind(err))
		t.Logf("FIGURE %s: caller_error_ms=%d", t.Name(), took.Milliseconds())
	})

	// Today's rule stays: bad credentials or an unknown database stop the walk at the
	// first host (node 4, no TLS asked), node 2 is never tried.
	t.Run("credentials-stop-the-walk", func(t *testing.T) {
		for _, tc := range []struct {
			name, dsn string
			number    uint16
		}{
			{"bad-password", "app:wrong@tcp(" + p4 + "," + p2 + ")/app?retriesAllDown=0", 1045},
			{"unknown-database", appDSNFor([]string{p4, p2}, "app_missing", "retriesAllDown=0"), 1049},
		} {
			p := openFaultPool(t, tc.dsn)
			_, err := nodeOf(ctx, c, p.db)
			var me *mysql.MySQLError
			if !errors.As(err, &me) || me.Number != tc.number {
				t.Errorf("%s: %T %v, want the *mysql.MySQLError %d", tc.name, err, err, tc.number)
			}
			if n := len(p.ev.of(failover.EventConnect, p2, time.Time{})); n != 0 {
				t.Errorf("%s: %d connection attempts on node 2, want none (the walk stops)", tc.name, n)
			}
			t.Logf("FIGURE %s: %s_caller_error=%s", t.Name(), tc.name, errKind(err))
		}
	})
}

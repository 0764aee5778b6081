package dsn_test

import (
	"fmt"

	"github.com/mysqlfailover/mysqlfailover/dsn"
)

// A primary and two secondaries, one failover option and one go-sql-driver
// parameter. String hides the password; MySQL is go-sql-driver's config,
// which every host shares.
func ExampleParse() {
	c, err := dsn.Parse("app:s3cret@tcp(db1:3306,db2,[2001:db8::7]:3307)/shop?parseTime=true&secondsBeforeRetrySource=60&hostTimeout=2s")
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(c)
	fmt.Println("primary:", c.Hosts[0], "secondaries:", c.Hosts[1:])
	fmt.Println("fall back after", c.SecondsBeforeRetryMaster, "s; host timeout", c.HostTimeout)
	for _, h := range c.Hosts {
		fmt.Println(c.MySQL.Net, h.Addr(), c.MySQL.User, c.MySQL.DBName, c.MySQL.ParseTime)
	}

	_, err = dsn.Parse("app:s3cret@tcp(db1,db2)/shop?retriesalldown=3")
	fmt.Println(err)
	// Output:
	// app:xxxxx@tcp(db1:3306,db2:3306,[2001:db8::7]:3307)/shop?parseTime=true&secondsBeforeRetryMaster=60&hostTimeout=2s
	// primary: db1:3306 secondaries: [db2:3306 [2001:db8::7]:3307]
	// fall back after 60 s; host timeout 2s
	// tcp db1:3306 app shop true
	// tcp db2:3306 app shop true
	// tcp [2001:db8::7]:3307 app shop true
	// dsn: unknown parameter "retriesalldown": did you mean "retriesAllDown"?
}

// A hand-built Config, checked with Validate and turned into a DSN.
func ExampleConfig_FormatDSN() {
	c := dsn.NewConfig()
	c.Hosts = []dsn.Host{{Name: "db1", Port: 3306}, {Name: "db2", Port: 3307}}
	c.RetriesAllDown = 3
	c.MySQL.User, c.MySQL.Passwd, c.MySQL.DBName = "app", "s3cret", "shop"
	if err := c.Validate(); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(c.FormatDSN())
	fmt.Println(c.String())
	// Output:
	// app:s3cret@tcp(db1:3306,db2:3307)/shop?retriesAllDown=3
	// app:xxxxx@tcp(db1:3306,db2:3307)/shop?retriesAllDown=3
}

// Hosts labelled with their data centre, the local one named by localDC, one
// host per remote data centre as a last resort, and sessions that must be able
// to write. The labels stay out of each host's go-sql-driver address.
func ExampleParse_topology() {
	c, err := dsn.Parse("app:s3cret@tcp(db1:3306;dc=east,db2;dc=east,db3;dc=west,[2001:db8::7]:3307;dc=west)/shop" +
		"?localDC=east&usedHostsPerRemoteDC=1&targetSessionAttrs=read-write")
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(c)
	for _, h := range c.Hosts {
		fmt.Printf("%s dc=%s addr=%s\n", h, h.DC, h.Addr())
	}
	fmt.Println("local:", c.LocalDC, "remote hosts per DC:", c.UsedHostsPerRemoteDC,
		"target:", c.TargetSessionAttrs)

	_, err = dsn.Parse("app:s3cret@tcp(db1;dc=east,db2;dc=west)/shop?localDC=East")
	fmt.Println(err)
	_, err = dsn.Parse("app:s3cret@tcp(db1,db2)/shop?targetSessionAttrs=read_write")
	fmt.Println(err)
	// Output:
	// app:xxxxx@tcp(db1:3306;dc=east,db2:3306;dc=east,db3:3306;dc=west,[2001:db8::7]:3307;dc=west)/shop?targetSessionAttrs=read-write&localDC=east&usedHostsPerRemoteDC=1
	// db1:3306;dc=east dc=east addr=db1:3306
	// db2:3306;dc=east dc=east addr=db2:3306
	// db3:3306;dc=west dc=west addr=db3:3306
	// [2001:db8::7]:3307;dc=west dc=west addr=[2001:db8::7]:3307
	// local: east remote hosts per DC: 1 target: read-write
	// dsn: localDC "East" matches no host's dc label; known DCs: east, west; labels are case-sensitive: did you mean "east"?
	// dsn: targetSessionAttrs: invalid value "read_write": did you mean "read-write"? (values are case-sensitive: any, read-write, read-only, primary, standby, prefer-standby)
}

// Active health probes every 2s, and a host list provider polled at the
// same interval with a bearer token. The URL may be written as it is or
// query-escaped; String hides the token as it hides the password.
func ExampleParse_probes() {
	c, err := dsn.Parse("app:s3cret@tcp(db1,db2)/shop?checkInterval=2s&failoverDelay=3s&switchBackDelay=1m" +
		"&hostsURL=https://cfg.example/mysql/hosts.json&hostsToken=tok3n")
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(c)
	fmt.Println("probe every", c.CheckInterval, "- move away after", c.FailoverDelay, "- move back after", c.SwitchBackDelay)
	fmt.Println("hosts from", c.HostsURL)

	_, err = dsn.Parse("app:s3cret@tcp(db1,db2)/shop?hostsURL=https://cfg.example/hosts.json")
	fmt.Println(err)
	_, err = dsn.Parse("app:s3cret@tcp(db1,db2)/shop?checkInterval=2s&hostsURL=http://cfg.example/hosts.json")
	fmt.Println(err)
	// Output:
	// app:xxxxx@tcp(db1:3306,db2:3306)/shop?checkInterval=2s&failoverDelay=3s&switchBackDelay=1m0s&hostsURL=https%3A%2F%2Fcfg.example%2Fmysql%2Fhosts.json&hostsToken=xxxxx
	// probe every 2s - move away after 3s - move back after 1m0s
	// hosts from https://cfg.example/mysql/hosts.json
	// dsn: hostsURL needs checkInterval > 0, the interval at which it is polled: set checkInterval (e.g. checkInterval=5s)
	// dsn: hostsURL "http://cfg.example/hosts.json": plain http to a host that is not a loopback address would send the host list (and hostsToken) unencrypted: use https, or set hostsAllowHTTP=true
}

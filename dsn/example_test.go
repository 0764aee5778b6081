package dsn_test

import (
	"fmt"

	"github.com/mysqlfailover/mysqlfailover/dsn"
)

// A primary and two secondaries, one failover option and one go-sql-driver
// parameter. String hides the password; HostConfig gives each host's
// go-sql-driver config.
func ExampleParse() {
	c, err := dsn.Parse("app:s3cret@tcp(db1:3306,db2,[2001:db8::7]:3307)/shop?parseTime=true&secondsBeforeRetrySource=60&hostTimeout=2s")
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(c)
	fmt.Println("primary:", c.Hosts[0], "secondaries:", c.Hosts[1:])
	fmt.Println("fall back after", c.SecondsBeforeRetryMaster, "s; host timeout", c.HostTimeout)
	for i := range c.Hosts {
		m := c.HostConfig(i)
		fmt.Println(m.Net, m.Addr, m.User, m.DBName, m.ParseTime)
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

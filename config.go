package mysqlfailover

import "github.com/mysqlfailover/mysqlfailover/dsn"

// Config is a parsed DSN: the host list, the failover options and go-sql-driver's
// configuration. Its fields and the option table are documented in package dsn, its
// home; the alias lets a program that parses a DSN and adjusts it in code import this
// package alone (a host list built by hand takes dsn.Host).
type Config = dsn.Config

// ParseDSN parses a DSN (go-sql-driver's syntax with a host list and the failover
// options; see package dsn) and returns a valid Config, as dsn.Parse. Its errors name the
// offending failover key or host (a go-sql-driver parameter's error is go-sql-driver's own
// message), and never contain the password.
func ParseDSN(s string) (*Config, error) { return dsn.Parse(s) }

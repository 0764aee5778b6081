package mysqlfailover

import (
	"context"
	"database/sql"
	sqldriver "database/sql/driver"
	"errors"
	"reflect"
	"unsafe"

	"github.com/mysqlfailover/mysqlfailover/internal/conn"
)

// Conn is the failover connection behind a *sql.Conn, as ConnOf finds it inside
// (*sql.Conn).Raw:
//
//	err := sqlConn.Raw(func(dc any) error {
//		c, ok := mysqlfailover.ConnOf(dc)
//		if !ok {
//			return errors.New("not a mysqlfailover connection")
//		}
//		log.Printf("on %s", c.Host())
//		return c.SetReadOnly(ctx, true)
//	})
//	if err != nil {
//		return err
//	}
type Conn interface {
	// SetReadOnly sets the connection's explicit read-only flag and applies it to the
	// session (SET SESSION TRANSACTION READ ONLY or READ WRITE), as Connector/J's
	// Connection.setReadOnly. On a secondary with failOverReadOnly the session stays
	// read-only and the flag applies once the connection is back on the primary. The
	// flag returns to the DSN's readOnly when database/sql hands the connection to its
	// next user. With replicaReads=true, SetReadOnly(true) is also a read intent: the
	// connection's plain statements and transactions then go to replicas. It returns the
	// statement's error, as any statement does.
	SetReadOnly(ctx context.Context, readOnly bool) error
	// ReadOnly reports the effective read-only state of the connection's primary
	// session on its current host (replica sessions are always read-only).
	ReadOnly() bool
	// Host returns the host:port of the connection's primary session, the one writes
	// use ("" while it has none: after a failure that found no host, until its next
	// statement). With replicaReads, reads may run on a replica: Stats' ReplicaReads
	// counts them per host.
	Host() string
}

// ConnOf returns the failover connection behind driverConn, the value (*sql.Conn).Raw
// passes to its function. It sees through wrappers: those that offer the connection they
// wrap with a Raw() or Unwrap() method returning a driver.Conn (XSAM/otelsql), and those
// that keep it in a field of their own (ngrok/sqlmw, luna-duclos/instrumentedsql), up to
// eight wrappers deep. It reports false when there is no mysqlfailover connection inside.
func ConnOf(driverConn any) (Conn, bool) {
	c := proxyOf(driverConn)
	return c, c != nil
}

// ConnectorOf returns the Connector behind db, however db was opened: sql.Open with
// "mysqlfailover" (GORM with DriverName "mysqlfailover", sqlx.Open and sqlx.Connect do
// that too), sql.OpenDB with a Connector, or a wrapper such as otelsql.Open. For the
// first two it answers at once (db.Driver names the Connector). Behind a wrapper it takes
// a connection from db's pool for a moment (opening one if none is idle, within ctx) and
// finds the failover connection behind it as ConnOf does. The Connector offers Stats
// and SwitchTo. It returns the pool's error when no connection can be had, and an error
// when db does not use this driver. Behind a wrapper, when every host is down, it waits
// for the walk to give up (bounded by ctx), so get the Connector once at start-up and
// keep it: Stats is most wanted during an outage.
func ConnectorOf(ctx context.Context, db *sql.DB) (*Connector, error) {
	if c := connectorOfDB(db); c != nil {
		return c, nil
	}
	sc, err := db.Conn(ctx)
	if err != nil {
		return nil, err
	}
	defer sc.Close()
	var c *Connector
	err = sc.Raw(func(dc any) error {
		if p := proxyOf(dc); p != nil {
			c, _ = p.Owner().(*Connector)
		}
		if c == nil {
			return errors.New("mysqlfailover: the pool's connections are not mysqlfailover connections")
		}
		return nil
	})
	return c, err
}

// maxWrappers is how many wrappers proxyOf looks through.
const maxWrappers = 8

// proxyOf finds the proxy connection inside v, or nil.
func proxyOf(v any) *conn.Conn {
	for range maxWrappers + 1 {
		switch w := v.(type) {
		case nil:
			return nil
		case *conn.Conn:
			return w
		case interface{ Raw() sqldriver.Conn }:
			v = w.Raw()
		case interface{ Unwrap() sqldriver.Conn }:
			v = w.Unwrap()
		default:
			if v = wrapped(v); v == nil {
				return nil
			}
		}
	}
	return nil
}

var connType = reflect.TypeFor[sqldriver.Conn]()

// wrapped returns the driver.Conn that a wrapper without an unwrap method keeps in a
// field of its struct (its first such field, exported or not), or nil. The field is read
// through a copy of the wrapper; nothing is written.
func wrapped(v any) any {
	rv := reflect.ValueOf(v)
	if rv.Kind() == reflect.Pointer {
		if rv.IsNil() {
			return nil
		}
		rv = rv.Elem()
	}
	if rv.Kind() != reflect.Struct {
		return nil
	}
	cp := reflect.New(rv.Type()).Elem() // addressable, so unexported fields can be read
	cp.Set(rv)
	for i := range cp.NumField() {
		f := cp.Field(i)
		if f.Type() != connType || f.IsNil() {
			continue
		}
		return reflect.NewAt(f.Type(), unsafe.Pointer(f.UnsafeAddr())).Elem().Interface()
	}
	return nil
}

package conn

import (
	"context"
	"database/sql/driver"
	"strings"
	"testing"

	"github.com/go-sql-driver/mysql"
)

// Error texts say each thing once: the module's prefix, what became of the
// transaction, and the failure.
func TestErrorTextsSayEachThingOnce(t *testing.T) {
	var texts []string
	say := func(err error) {
		t.Helper()
		if err == nil {
			t.Fatal("no error")
		}
		texts = append(texts, err.Error())
	}

	e := newEnv(t, 2)
	e.script(0, all(begin(), fails("I1", mysql.ErrInvalidConn)))
	c := e.open(seqB)
	tx, _ := c.BeginTx(context.Background(), driver.TxOptions{})
	e.refuse(0)
	say(exec(c, "I1"))
	say(exec(c, "I2"))
	say(tx.Commit())

	e = newEnv(t, 2)
	e.script(0, all(begin(), ok("I1"), commit(mysql.ErrInvalidConn)))
	c = e.open(seqB)
	tx, _ = c.BeginTx(context.Background(), driver.TxOptions{})
	mustExec(t, c, "I1")
	e.refuse(0)
	say(tx.Commit())

	e = newEnv(t, 2)
	e.script(0, all(ok("BEGIN"), fails("I1", mysql.ErrInvalidConn)))
	c = e.open(seqB)
	mustExec(t, c, "BEGIN")
	e.refuse(0)
	say(exec(c, "I1"))
	say(exec(c, "I2"))

	e = newEnv(t, 2)
	e.script(0, fails("I1", mysql.ErrInvalidConn))
	c = e.open(seqB)
	e.refuse(0)
	e.refuse(1)
	say(exec(c, "I1"))

	for _, s := range texts {
		for _, once := range []string{"mysqlfailover:", "transaction lost", "commit outcome unknown", "invalid connection", "no host available"} {
			if n := strings.Count(s, once); n > 1 {
				t.Errorf("%q says %q %d times", s, once, n)
			}
		}
		if len(s) > 300 {
			t.Errorf("%d characters: %q", len(s), s)
		}
	}
}
